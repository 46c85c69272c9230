"""Idempotency keys on every create of the API: articles, payments, demo notes.

A key is optional on ``POST /v1/articles`` and the demo's ``create`` (required on
payments, tests/handlers/test_payments.py); with one, a retry is the first answer
again, and a key names one request of one caller on one route (docs/api.md,
"Idempotent creates"). Routes that create a credential take no key.
"""

from __future__ import annotations

import pytest

from tests.conftest import bearer
from tests.helpers import operations_inline

# On both backends: a claimed key is a transaction.
pytestmark = pytest.mark.every_backend

DEMO = "/api/demo.php"
CREATE_NOTE = f"{DEMO}?action=create"
KEY = {"Idempotency-Key": "retry-7"}
HOME = {"REMOTE_ADDR": "192.0.2.10"}


def articles(app) -> list[dict]:
    return app.get("/v1/articles?limit=100").json["data"]


def notes(app) -> list[dict]:
    return app.get(f"{DEMO}?action=list&limit=100").json["data"]


def test_a_retried_article_is_the_first_answer_again(app):
    first = app.post_json("/v1/articles", {"title": "Once"}, headers=KEY, status=201)
    assert "Idempotent-Replayed" not in first.headers
    again = app.post(
        "/v1/articles",
        '{ "title" : "Once" }',  # the same JSON, spelt otherwise
        headers={**KEY, "Content-Type": "application/json"},
        status=201,
    )
    assert again.body == first.body
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.headers["Location"] == first.headers["Location"]
    assert [a["title"] for a in articles(app)] == ["Once"]


def test_a_replay_is_the_first_answer_even_after_the_article_changed(app):
    first = app.post_json("/v1/articles", {"title": "Old"}, headers=KEY, status=201)
    app.patch_json(first.headers["Location"], {"title": "New"}, status=200)
    again = app.post_json("/v1/articles", {"title": "Old"}, headers=KEY, status=201)
    assert again.body == first.body and again.json["title"] == "Old"
    assert len(articles(app)) == 1


def test_the_same_key_with_another_article_is_422_and_makes_nothing(app):
    app.post_json("/v1/articles", {"title": "One"}, headers=KEY, status=201)
    refused = app.post_json("/v1/articles", {"title": "Two"}, headers=KEY, status=422)
    assert refused.json["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert [a["title"] for a in articles(app)] == ["One"]


def test_an_article_without_a_key_is_made_each_time(app):
    for _ in range(2):
        made = app.post_json("/v1/articles", {"title": "Twice"}, status=201)
        assert "Idempotent-Replayed" not in made.headers
    assert len(articles(app)) == 2


def test_a_bad_key_on_an_article_is_400_and_makes_nothing(app):
    bad = {"Idempotency-Key": "a,b"}
    refused = app.post_json("/v1/articles", {"title": "x"}, headers=bad, status=400)
    assert refused.json["code"] == "IDEMPOTENCY_KEY_INVALID"
    assert articles(app) == []


def test_an_invalid_article_stores_nothing_and_the_key_stays_free(app):
    app.post_json("/v1/articles", {"title": ""}, headers=KEY, status=400)
    made = app.post_json("/v1/articles", {"title": "Fixed"}, headers=KEY, status=201)
    assert "Idempotent-Replayed" not in made.headers
    assert [a["title"] for a in articles(app)] == ["Fixed"]


def test_one_key_on_an_article_and_on_a_payment_names_two_requests(app):
    # Another route, so another request: neither is the other's replay, nor a 422.
    article = app.post_json("/v1/articles", {"title": "A"}, headers=KEY, status=201)
    payment = app.post_json(
        "/v1/payments", {"amount": 5, "currency": "EUR"}, headers=KEY, status=201
    )
    note = app.post_json(CREATE_NOTE, {"text": "n"}, headers=KEY, status=201)
    for answer in (article, payment, note):
        assert "Idempotent-Replayed" not in answer.headers
    again = app.post_json("/v1/articles", {"title": "A"}, headers=KEY, status=201)
    assert again.headers["Idempotent-Replayed"] == "true"


def test_another_caller_with_the_same_key_makes_its_own_article(app):
    mine = app.post_json("/v1/articles", {"title": "A"}, headers=KEY, status=201)
    eve = {"email": "eve@example.com", "password": "eve-password"}
    app.post_json("/api/users", eve, status=201)
    theirs = app.post_json(
        "/v1/articles", {"title": "A"}, headers=KEY,
        extra_environ=bearer(app, **eve), status=201,
    )  # fmt: skip
    assert "Idempotent-Replayed" not in theirs.headers
    assert theirs.json["id"] != mine.json["id"]
    assert len(articles(app)) == 2


def test_article_keys_expire_after_24_hours(make_app, clock):
    app = make_app()
    app.post_json("/v1/articles", {"title": "Day one"}, headers=KEY, status=201)
    clock.advance(24 * 3600 + 1)
    app = make_app()  # a new login: the first token expired too
    made = app.post_json("/v1/articles", {"title": "Day two"}, headers=KEY, status=201)
    assert "Idempotent-Replayed" not in made.headers
    assert len(articles(app)) == 2


def test_a_retried_note_is_the_first_answer_again_for_that_address(anon):
    first = anon.post_json(
        CREATE_NOTE, {"text": "n"}, headers=KEY, extra_environ=HOME, status=201
    )
    again = anon.post_json(
        CREATE_NOTE, {"text": "n"}, headers=KEY, extra_environ=HOME, status=201
    )
    assert again.body == first.body
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.headers["Location"] == first.headers["Location"]
    # Anonymous, the caller is the address: another one has keys of its own.
    other = anon.post_json(
        CREATE_NOTE, {"text": "n"}, headers=KEY,
        extra_environ={"REMOTE_ADDR": "192.0.2.11"}, status=201,
    )  # fmt: skip
    assert "Idempotent-Replayed" not in other.headers
    assert len(notes(anon)) == 2
    refused = anon.post_json(
        CREATE_NOTE, {"text": "m"}, headers=KEY, extra_environ=HOME, status=422
    )
    assert refused.json["code"] == "IDEMPOTENCY_KEY_REUSED"


def test_a_notes_key_goes_with_the_note(make_app):
    app = make_app(anonymous=True, demo_max_notes=2)
    post = {"headers": KEY, "extra_environ": HOME}
    first = app.post_json(CREATE_NOTE, {"text": "kept?"}, **post, status=201)
    # Two newer notes push the first out: its key goes with it, so the same key
    # with another text is a new note, not a 422.
    for n in range(2):
        app.post_json(CREATE_NOTE, {"text": f"newer {n}"}, status=201)
    made = app.post_json(CREATE_NOTE, {"text": "another"}, **post, status=201)
    assert "Idempotent-Replayed" not in made.headers
    assert made.json["id"] != first.json["id"]
    # A note deleted takes its key along too.
    app.delete(f"{DEMO}?action=delete&id={made.json['id']}", status=204)
    again = app.post_json(CREATE_NOTE, {"text": "a third"}, **post, status=201)
    assert "Idempotent-Replayed" not in again.headers


@pytest.mark.parametrize(
    "path, body",
    [("/api/keys", {"name": "ci", "userId": 1}),
     ("/api/oauth-clients", {"name": "app"})],
    ids=["api-key", "oauth-client"],
)  # fmt: skip
def test_a_route_that_makes_a_credential_ignores_a_key(app, path, body):
    # Its answer shows a secret once: never stored, so never replayed.
    bad = {"Idempotency-Key": "a,b"}
    first = app.post_json(path, body, headers=bad, status=201)
    again = app.post_json(path, body, headers=bad, status=201)
    assert "Idempotent-Replayed" not in again.headers
    assert again.json["id"] != first.json["id"]


def test_register_and_login_ignore_a_key(anon):
    bad = {"Idempotency-Key": "a,b"}
    eve = {"email": "eve@example.com", "password": "eve-password"}
    anon.post_json("/api/users", eve, headers=bad, status=201)
    first = anon.post_json("/api/login", eve, headers=bad, status=200)
    again = anon.post_json("/api/login", eve, headers=bad, status=200)
    assert "Idempotent-Replayed" not in again.headers
    assert again.json["token"] != first.json["token"]


def test_the_document_lists_the_key_where_a_route_takes_one(app):
    paths = operations_inline(app.get("/openapi.json").json)["paths"]

    def key_of(path: str, method: str) -> dict | None:
        operation = paths[path][method]
        found = [p for p in operation.get("parameters", ())
                 if p.get("name") == "Idempotency-Key"]  # fmt: skip
        return found[0] if found else None

    for path, required in (("/v1/articles", False), ("/v1/payments", True),
                           (DEMO, False)):  # fmt: skip
        key = key_of(path, "post")
        assert key is not None and key["in"] == "header", path
        assert key["required"] is required, path
        responses = paths[path]["post"]["responses"]
        assert {"409", "422"} <= set(responses), path
        assert "Idempotent-Replayed" in responses["201"]["headers"], path
    for path in ("/api/users", "/api/login", "/api/keys", "/api/oauth-clients"):
        assert key_of(path, "post") is None, path
