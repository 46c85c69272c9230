"""PostgreSQL's own: a create whose key another request is still claiming.

A second request with a key waits for the first's claim (its one INSERT) at most
the store's lock wait, then is ``KeyInUse``: ``409 IDEMPOTENCY_KEY_IN_USE`` with
``Retry-After``, never a statement-timeout ``503`` (docs/api.md, "Payments and
idempotency").
"""

from __future__ import annotations

import time

import psycopg
import pytest
import webtest

from refapi import create_app
from refapi.config import Config
from refapi.storage import open_store
from refapi.storage.base import KeyInUse
from refapi.storage.postgres.connections import LOCK_WAIT_MS
from tests.conftest import ADMIN, TEST_AUTH, bearer
from tests.postgres import fresh_schema

pytestmark = pytest.mark.postgres  # PostgreSQL's own

NOW = 1_795_000_000.0
CLAIM = (
    "INSERT INTO payments (id, amount, currency, created_at, scope,"
    " idempotency_key, fingerprint, status, body, created)"
    " VALUES ('pay_0', '1', 'USD', 'x', %s, 'k1', 'f', 201, 'b', %s)"
)


@pytest.fixture
def url():
    with fresh_schema() as url:
        yield url


def _payment(payment_id: str) -> dict:
    return {"id": payment_id, "amount": "1", "currency": "USD", "createdAt": "x"}


def test_a_key_still_being_claimed_is_in_use_after_the_lock_wait(url):
    store = open_store(url, statement_timeout=10)
    try:
        with psycopg.connect(url) as first:  # a claim not yet committed
            first.execute(CLAIM, ("user:1", NOW))
            started = time.monotonic()
            with pytest.raises(KeyInUse):
                store.create_payment("user:1", "k1", "f", _payment("pay_1"), b"b", NOW)
            waited = time.monotonic() - started
            first.rollback()
        assert LOCK_WAIT_MS / 1000 - 0.1 <= waited < 10  # the lock wait, not 10 s
        # The first request gone without committing, the key is free again.
        made = store.create_payment("user:1", "k1", "f", _payment("pay_2"), b"b", NOW)
        assert (made.resource_id, made.replayed) == ("pay_2", False)
    finally:
        store.close()


def test_the_api_answers_409_with_retry_after(url):
    config = Config(database_url=url, secret_key=b"s", **TEST_AUTH)
    app = webtest.TestApp(create_app(config))
    app.extra_environ = bearer(app, ADMIN["email"], ADMIN["password"])
    payment = {"amount": 1.5, "currency": "USD"}
    with psycopg.connect(url) as first:
        first.execute(CLAIM, ("user:1", time.time()))
        response = app.post_json(
            "/v1/payments", payment, headers={"Idempotency-Key": "k1"}, status=409
        )
        first.rollback()
    assert response.json["code"] == "IDEMPOTENCY_KEY_IN_USE"
    assert response.headers["Retry-After"] == "1"
    again = app.post_json("/v1/payments", payment, headers={"Idempotency-Key": "k1"})
    assert again.status_int == 201


def test_an_article_whose_key_is_still_being_claimed_is_409(url):
    # The claim of a create's key (an article's, a note's) is the first statement of
    # the create's transaction: held by a request still in it, the key is in use.
    config = Config(database_url=url, secret_key=b"s", **TEST_AUTH)
    app = webtest.TestApp(create_app(config))
    app.extra_environ = bearer(app, ADMIN["email"], ADMIN["password"])
    article, key = {"title": "Once"}, {"Idempotency-Key": "k1"}
    with psycopg.connect(url) as first:
        first.execute(
            "INSERT INTO idempotency_keys (owner, method, route, key, fingerprint,"
            " created) VALUES ('user:1', 'POST', '/v1/articles', 'k1', 'f', %s)",
            (time.time(),),
        )
        response = app.post_json("/v1/articles", article, headers=key, status=409)
        first.rollback()
    assert response.json["code"] == "IDEMPOTENCY_KEY_IN_USE"
    assert response.headers["Retry-After"] == "1"
    assert app.get("/v1/articles").json["data"] == []
    made = app.post_json("/v1/articles", article, headers=key, status=201)
    assert "Idempotent-Replayed" not in made.headers
