"""A flood of bogus credentials is throttled like anonymous traffic.

A credential that fails its lookup costs a token of its address's bucket (the 401
carries that bucket's fields), and once this process has seen that bucket run dry,
the address's next credential is refused (429) before it costs a lookup
(docs/rate-limits.md, "What a bogus credential costs"). The lookups are counted on
the real store of each backend, whose lookups a subclass counts.
"""

from __future__ import annotations

import pytest
import webtest

from refapi import create_app
from refapi.config import Config
from refapi.storage.postgres import PostgresStore
from refapi.storage.sqlite import SqliteStore
from tests.conftest import ADMIN, TEST_AUTH, bearer
from tests.helpers import assert_error
from tests.postgres import fresh_schema

ADDRESS = {"REMOTE_ADDR": "198.51.100.7"}
ELSEWHERE = {"REMOTE_ADDR": "198.51.100.99"}


class Counting:
    """A store's credential lookups, counted; the rest is the store's own."""

    lookups = 0

    def find_token(self, kind, token_hash, now):
        self.lookups += 1
        return super().find_token(kind, token_hash, now)

    def find_api_key(self, key_hash):
        self.lookups += 1
        return super().find_api_key(key_hash)


class CountingSqlite(Counting, SqliteStore):
    pass


class CountingPostgres(Counting, PostgresStore):
    pass


# On both backends. PostgreSQL's buckets refill by the database's clock, so a test
# that moves the injected clock to refill one runs on SQLite alone.
POSTGRES = pytest.param("postgresql", marks=pytest.mark.postgres)
BOTH = pytest.mark.parametrize("store", ["sqlite", POSTGRES], indirect=True)


@pytest.fixture
def store(request, tmp_path):
    """A counting store: a new SQLite file, or a new PostgreSQL schema."""
    if getattr(request, "param", "sqlite") == "sqlite":
        opened = CountingSqlite(str(tmp_path / "refapi.db"))
        yield opened
        opened.close()
        return
    with fresh_schema() as url:
        opened = CountingPostgres(url)
        yield opened
        opened.close()


@pytest.fixture
def app(store, clock) -> webtest.TestApp:
    """3 tokens a bucket, one back every 2 s; every request from ``ADDRESS``."""
    postgres = isinstance(store, PostgresStore)
    config = Config(
        database_url=store.url if postgres else f"sqlite:///{store.path}",
        secret_key=b"test-secret",
        rate_limit_capacity=3,
        rate_limit_refill=0.5,
        **TEST_AUTH,
    )
    return webtest.TestApp(
        create_app(config, store=store, clock=clock), extra_environ=ADDRESS
    )


def bogus(kind: str, n: int) -> dict[str, str]:
    if kind == "bearer":
        return {"Authorization": f"Bearer forged-{n}"}
    if kind == "api-key":
        return {"X-API-Key": f"forged-{n}"}
    return {"Cookie": f"refapi_session=forged-{n}"}


@BOTH
@pytest.mark.parametrize(
    ("kind", "counted"),
    [
        pytest.param("bearer", 401, id="bearer"),
        pytest.param("api-key", 401, id="api-key"),
        # A public route ignores a stale session: anonymous, on the address.
        pytest.param("cookie", 200, id="session-cookie"),
    ],
)
def test_a_flood_of_bogus_credentials_costs_capacity_lookups(app, store, kind, counted):
    answers = [
        app.get("/v1/todos/1", headers=bogus(kind, n), expect_errors=True)
        for n in range(8)
    ]
    assert [a.status_int for a in answers] == [counted] * 3 + [429] * 5
    assert store.lookups == 3  # the 429s were refused before any lookup
    assert [a.headers["RateLimit"] for a in answers[:3]] == [
        '"default";r=2;t=0',
        '"default";r=1;t=0',
        '"default";r=0;t=2',
    ]
    for refused in answers[3:]:
        assert_error(refused, 429, "RATE_LIMITED")
        assert refused.headers["Retry-After"] == "2"
        assert refused.headers["RateLimit-Policy"] == '"default";q=3;w=6'
        assert refused.headers["RateLimit"] == '"default";r=0;t=2'
        assert refused.headers["X-Request-Id"]
    if counted == 401:
        assert_error(answers[0], 401, "UNAUTHENTICATED")


def test_a_token_back_buys_one_more_lookup(app, store, clock):
    for n in range(3):
        app.get("/v1/todos/1", headers=bogus("bearer", n), status=401)
    clock.advance(1.9)
    refused = app.get("/v1/todos/1", headers=bogus("bearer", 3), status=429)
    assert refused.headers["Retry-After"] == "1"
    assert store.lookups == 3
    clock.advance(0.1)  # one token is back: one more lookup, then dry again
    app.get("/v1/todos/1", headers=bogus("bearer", 4), status=401)
    app.get("/v1/todos/1", headers=bogus("bearer", 5), status=429)
    assert store.lookups == 4


@BOTH
def test_anonymous_requests_and_bogus_credentials_share_the_address_bucket(app, store):
    for _ in range(3):
        app.get("/v1/todos/1")
    app.get("/v1/todos/1", headers=bogus("bearer", 0), status=429)
    assert store.lookups == 0
    app.get("/v1/todos/1", status=429)


def test_a_dry_address_refuses_a_valid_token_until_a_token_is_back(app, store, clock):
    # Logged in from elsewhere, so this address's bucket is untouched.
    token = bearer(webtest.TestApp(app.app, extra_environ=ELSEWHERE), **ADMIN)
    for n in range(3):
        app.get("/v1/todos/1", headers=bogus("bearer", n), status=401)
    lookups = store.lookups
    # Refused before the lookup, so whether it is valid is not known: the address's.
    refused = app.get("/v1/todos/1", extra_environ=token, status=429)
    assert refused.headers["RateLimit"] == '"default";r=0;t=2'
    assert store.lookups == lookups
    clock.advance(2)
    # Looked up again, and served from its principal's bucket, a full one.
    served = app.get("/v1/todos/1", extra_environ=token)
    assert served.headers["RateLimit"] == '"default";r=2;t=0'
    assert store.lookups == lookups + 1
    # The address's token was not spent on it: a bogus token still gets its 401.
    answer = app.get("/v1/todos/1", headers=bogus("bearer", 9), status=401)
    assert answer.headers["RateLimit"] == '"default";r=0;t=2'


def test_a_token_this_process_found_valid_passes_a_dry_address(app, store):
    # Behind one NAT, anonymous traffic empties the address's bucket: a user whose
    # token this process has served goes on being served from their own bucket.
    token = bearer(webtest.TestApp(app.app, extra_environ=ELSEWHERE), **ADMIN)
    app.get("/v1/todos/1", extra_environ=token)  # looked up once: found valid
    for _ in range(3):
        app.get("/v1/todos/1", status="*")
    app.get("/v1/todos/1", status=429)  # the address's: dry
    served = app.get("/v1/todos/1", extra_environ=token)
    assert served.headers["RateLimit"] == '"default";r=1;t=0'  # the principal's
    # Not with a credential besides it that would cost a lookup.
    with_key = {**token, "HTTP_X_API_KEY": "bogus"}
    app.get("/v1/todos/1", extra_environ=with_key, status=429)
    # Once it fails its lookup (logged out), it is refused before one again.
    app.post("/api/logout", extra_environ=token, status="*")
    lookups = store.lookups
    app.get("/v1/todos/1", extra_environ=token, status=429)
    app.get("/v1/todos/1", extra_environ=token, status=429)
    assert store.lookups <= lookups + 1


@BOTH
def test_a_valid_token_from_a_live_address_keeps_its_principals_bucket(app, store):
    token = bearer(webtest.TestApp(app.app, extra_environ=ELSEWHERE), **ADMIN)
    for _ in range(3):
        app.get("/v1/todos/1", extra_environ=token)
    app.get("/v1/todos/1", extra_environ=token, status=429)  # the principal's: dry
    # The address's bucket is full: an anonymous request and a bogus token pass it.
    assert app.get("/v1/todos/1").headers["RateLimit"] == '"default";r=2;t=0'
    app.get("/v1/todos/1", headers=bogus("bearer", 0), status=401)


@BOTH
def test_the_health_check_ignores_a_dry_address(app, store):
    for n in range(4):
        app.get("/v1/todos/1", headers=bogus("bearer", n), expect_errors=True)
    health = app.get("/healthz", headers=bogus("bearer", 9))
    assert health.status_int == 200
    assert "RateLimit" not in health.headers
