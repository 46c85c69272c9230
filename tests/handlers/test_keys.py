"""API keys and OAuth clients: made, listed and revoked by an admin; secrets once."""

from __future__ import annotations

import json

import pytest

from tests.conftest import bearer
from tests.helpers import assert_error

ADA = {"email": "ada@example.com", "password": "ada-password"}
BOB = {"email": "bob@example.com", "password": "bob-password"}
KEY_FIELDS = {"id", "name", "userId", "createdAt"}
CLIENT_FIELDS = {"id", "name", "clientId", "createdAt"}


@pytest.fixture
def ada(anon):
    """Ada, a user: her record and the environ of her Bearer token."""
    user = anon.post_json("/api/users", ADA, status=201).json
    return user, bearer(anon, ADA["email"], ADA["password"])


def admin_id(app) -> int:
    return app.get("/api/users?limit=1").json["data"][0]["id"]


ADMIN_CALLS = [
    ("POST", "/api/keys", {"name": "k"}),
    ("GET", "/api/keys", None),
    ("DELETE", "/api/keys/1", None),
    ("POST", "/api/oauth-clients", {"name": "c"}),
    ("GET", "/api/oauth-clients", None),
    ("DELETE", "/api/oauth-clients/1", None),
]


@pytest.mark.parametrize(
    ("method", "path", "body"), ADMIN_CALLS, ids=[f"{m} {p}" for m, p, _ in ADMIN_CALLS]
)
def test_only_an_admin_may_manage_keys_and_clients(app, anon, ada, method, path, body):
    app.post_json("/api/keys", {"name": "made"}, status=201)
    app.post_json("/api/oauth-clients", {"name": "made"}, status=201)

    def send(headers):
        return anon.request(
            path, method=method, headers=headers, expect_errors=True,
            body=json.dumps(body).encode() if body else b"",
            content_type="application/json" if body else None,
        )  # fmt: skip

    nobody = send({})
    assert_error(nobody, 401, "UNAUTHENTICATED")
    assert nobody.headers["WWW-Authenticate"] == 'Bearer realm="refapi"'
    assert nobody.headers["Cache-Control"] == "no-store"

    user = send({"Authorization": ada[1]["HTTP_AUTHORIZATION"]})
    assert_error(user, 403, "FORBIDDEN")
    assert user.headers["Cache-Control"] == "no-store"
    # Nothing was made or revoked by either.
    assert len(app.get("/api/keys").json["data"]) == 1
    assert len(app.get("/api/oauth-clients").json["data"]) == 1


def test_a_key_is_shown_once_and_never_listed(app):
    created = app.post_json("/api/keys", {"name": "reporting"}, status=201)
    key = created.json
    assert set(key) == {*KEY_FIELDS, "key"}
    assert (key["name"], key["userId"]) == ("reporting", admin_id(app))
    assert len(key["key"]) >= 43  # 256 random bits, base64url
    assert created.headers["Location"] == f"/api/keys/{key['id']}"
    assert created.headers["Cache-Control"] == "no-store"

    listed = app.get("/api/keys")
    assert listed.json == {
        "data": [{name: key[name] for name in KEY_FIELDS}],
        "nextCursor": None,
    }
    assert listed.headers["Cache-Control"] == "no-store"
    for accept in ("application/xml", "text/csv"):
        other = app.get("/api/keys", headers={"Accept": accept})
        assert key["name"] in other.text and key["key"] not in other.text


def test_a_key_acts_as_the_user_it_was_made_for(app, anon, ada):
    user, _ = ada
    bob = anon.post_json("/api/users", BOB, status=201).json
    key = app.post_json("/api/keys", {"name": "ada's", "userId": user["id"]}).json
    assert key["userId"] == user["id"]
    as_ada = {"X-API-Key": key["key"]}

    change = {"email": user["email"], "firstName": "Ada", "lastName": "King"}
    changed = anon.put_json(f"/api/users/{user['id']}", change, headers=as_ada)
    assert changed.json["lastName"] == "King"  # no CSRF token: not a cookie
    anon.put_json(f"/api/users/{bob['id']}", change, headers=as_ada, status=403)
    assert_error(anon.get("/api/keys", headers=as_ada, status=403), 403, "FORBIDDEN")
    # Her payments are hers whichever credential she uses.
    paid = anon.post_json(
        "/v1/payments",
        {"amount": 5, "currency": "EUR"},
        headers={**as_ada, "Idempotency-Key": "k1"},
        status=201,
    )
    anon.get(f"/v1/payments/{paid.json['id']}", extra_environ=ada[1], status=200)
    app.get(f"/v1/payments/{paid.json['id']}", status=404)


def test_an_admins_own_key_is_an_admin_credential(app, anon):
    key = app.post_json("/api/keys", {"name": "mine"}).json["key"]
    listed = anon.get("/api/keys", headers={"X-API-Key": key}, status=200)
    assert len(listed.json["data"]) == 1


def test_logging_out_with_a_key_ends_nothing(app, anon):
    # A key is no login: logout answers 204 and the key goes on working.
    key = app.post_json("/api/keys", {"name": "mine"}).json["key"]
    anon.post("/api/logout", headers={"X-API-Key": key}, status=204)
    anon.get("/api/keys", headers={"X-API-Key": key}, status=200)


def test_a_revoked_key_is_401_at_once(app, anon):
    key = app.post_json("/api/keys", {"name": "short-lived"}).json
    headers = {"X-API-Key": key["key"]}
    anon.get("/api/users", headers=headers, status=200)

    revoked = app.delete(f"/api/keys/{key['id']}", status=204)
    assert revoked.body == b""
    assert revoked.headers["Cache-Control"] == "no-store"
    refused = anon.get("/api/users", headers=headers, status=401)
    assert_error(refused, 401, "UNAUTHENTICATED")
    assert refused.headers["WWW-Authenticate"] == (
        'Bearer realm="refapi", error="invalid_token"'
    )
    # A revoked key is refused on public routes too: never taken for anonymous.
    anon.get("/v1/todos/1", headers=headers, status=401)
    again = app.delete(f"/api/keys/{key['id']}", status=404)
    assert_error(again, 404, "NOT_FOUND")
    assert again.headers["Cache-Control"] == "no-store"


def test_an_unknown_key_is_401_even_on_a_public_route(anon):
    refused = anon.get("/v1/articles", headers={"X-API-Key": "made-up"}, status=401)
    assert_error(refused, 401, "UNAUTHENTICATED")
    assert 'error="invalid_token"' in refused.headers["WWW-Authenticate"]


def test_deleting_a_user_revokes_their_keys(app, anon, ada):
    user, _ = ada
    key = app.post_json("/api/keys", {"name": "k", "userId": user["id"]}).json
    app.delete(f"/api/users/{user['id']}", status=204)
    anon.get("/api/users", headers={"X-API-Key": key["key"]}, status=401)
    assert app.get("/api/keys").json["data"] == []


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"name": "k", "userId": 999}, {"/userId"}),  # names no user
        ({"name": "k", "userId": 0}, {"/userId"}),
        ({"name": "k", "userId": "1"}, {"/userId"}),
        ({"name": "k", "userId": 2**63}, {"/userId"}),
        ({"name": ""}, {"/name"}),
        ({"name": "n" * 101}, {"/name"}),
        ({}, {"/name"}),
        ({"name": "k", "key": "chosen"}, {"/key"}),  # a key is never chosen
    ],
    ids=["unknown-user", "zero", "string", "too-big", "empty", "long", "no-name",
         "own-key"],
)  # fmt: skip
def test_a_bad_key_request_is_400_and_makes_nothing(app, body, fields):
    response = app.post_json("/api/keys", body, status=400)
    assert_error(response, 400, "VALIDATION_ERROR")
    assert {e["field"] for e in response.json["details"]["errors"]} == fields
    assert app.get("/api/keys").json["data"] == []


def post_raw(app, raw: str, status: int):
    """POST /api/keys with the JSON text ``raw``, as sent (json.dumps writes 1.0
    as 1.0, but a number token such as 9.555e3 only as written)."""
    headers = {"Content-Type": "application/json"}
    return app.post("/api/keys", raw, headers=headers, status=status)


@pytest.mark.parametrize("token", ["1.0", "1.000", "1e0", "0.1e1", "10E-1"])
def test_a_whole_valued_number_is_an_integer_and_given_as_one(app, token):
    """JSON Schema's integer is any number of whole value (docs/api.md)."""
    user_id = admin_id(app)
    made = post_raw(app, f'{{"name": "k", "userId": {token}}}', 201).json
    assert made["userId"] == user_id == 1
    stored = app.get("/api/keys").json["data"]
    assert [(key["userId"], type(key["userId"])) for key in stored] == [(1, int)]


@pytest.mark.parametrize(
    ("token", "message"),
    [("1e300", "must be at most 9223372036854775807"),
     ("1E+999999999999999999", "must be at most 9223372036854775807"),
     ("9223372036854775808.0", "must be at most 9223372036854775807"),
     ("-0.0", "must be at least 1"), ("2.5", "must be an integer"),
     ("1.0000000000000000000000000001", "must be an integer")],
    ids=["1e300", "huge-exponent", "2-to-the-63", "minus-zero", "a-fraction",
         "nearly-whole"],
)  # fmt: skip
def test_a_number_an_integer_cannot_be_is_400_at_its_field(app, token, message):
    raw = f'{{"name": "k", "userId": {token}}}'
    response = post_raw(app, raw, 400)
    assert_error(response, 400, "VALIDATION_ERROR")
    assert response.json["details"]["errors"] == [
        {"field": "/userId", "message": message}
    ]
    assert app.get("/api/keys").json["data"] == []


def test_an_exponent_past_what_a_number_holds_is_invalid_json(app):
    response = post_raw(app, '{"name": "k", "userId": 1e-99999999999999999999}', 400)
    assert_error(response, 400, "INVALID_JSON")


def test_keys_are_paginated(app):
    made = [app.post_json("/api/keys", {"name": f"k{n}"}).json for n in range(3)]
    first = app.get("/api/keys?limit=2")
    assert [k["id"] for k in first.json["data"]] == [k["id"] for k in made[:2]]
    cursor = first.json["nextCursor"]
    assert first.headers["X-Next-Cursor"] == cursor
    rest = app.get(f"/api/keys?limit=2&cursor={cursor}")
    assert [k["id"] for k in rest.json["data"]] == [made[2]["id"]]
    assert rest.json["nextCursor"] is None
    # A cursor of one collection is no good for another.
    foreign = app.get(f"/api/oauth-clients?cursor={cursor}", status=400)
    assert_error(foreign, 400, "INVALID_CURSOR")


def test_a_client_secret_is_shown_once_and_never_listed(app):
    created = app.post_json("/api/oauth-clients", {"name": "billing"}, status=201)
    client = created.json
    assert set(client) == {*CLIENT_FIELDS, "clientSecret"}
    assert client["name"] == "billing"
    assert client["clientId"] and client["clientId"] != client["clientSecret"]
    assert len(client["clientSecret"]) >= 43
    assert created.headers["Location"] == f"/api/oauth-clients/{client['id']}"
    assert created.headers["Cache-Control"] == "no-store"

    listed = app.get("/api/oauth-clients")
    assert listed.json["data"] == [{name: client[name] for name in CLIENT_FIELDS}]
    assert client["clientSecret"] not in listed.text
    assert listed.headers["Cache-Control"] == "no-store"
    other = app.post_json("/api/oauth-clients", {"name": "billing"}).json
    assert other["clientId"] != client["clientId"]  # names need not be unique


@pytest.mark.parametrize(
    ("body", "field"),
    [({}, "/name"), ({"name": ""}, "/name"),
     ({"name": "c", "clientId": "x"}, "/clientId")],
)  # fmt: skip
def test_a_bad_client_request_is_400(app, body, field):
    response = app.post_json("/api/oauth-clients", body, status=400)
    assert_error(response, 400, "VALIDATION_ERROR")
    assert [e["field"] for e in response.json["details"]["errors"]] == [field]


def test_deleting_a_client_is_204_then_404(app):
    client = app.post_json("/api/oauth-clients", {"name": "c"}).json
    app.delete(f"/api/oauth-clients/{client['id']}", status=204)
    assert app.get("/api/oauth-clients").json["data"] == []
    gone = app.delete(f"/api/oauth-clients/{client['id']}", status=404)
    assert_error(gone, 404, "NOT_FOUND")
    bad = app.delete("/api/oauth-clients/abc", status=400)
    assert_error(bad, 400, "VALIDATION_ERROR")
