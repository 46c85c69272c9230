"""The token endpoint: OAuth 2.0 client credentials, and RFC 6749's errors."""

from __future__ import annotations

import base64
from urllib.parse import urlencode

import pytest
import webtest

from refapi import create_app
from refapi.web.body import FORM
from tests.helpers import JSON_TYPE, FreshStartAfter, assert_error

GRANT = {"grant_type": "client_credentials"}


@pytest.fixture
def client(app) -> dict:
    """A client the admin registered: its record, id and secret."""
    return app.post_json("/api/oauth-clients", {"name": "billing"}, status=201).json


def basic(client_id: str, secret: str) -> dict[str, str]:
    raw = f"{client_id}:{secret}".encode()
    return {"Authorization": "Basic " + base64.b64encode(raw).decode()}


def as_form(client: dict) -> dict[str, str]:
    return {"client_id": client["clientId"], "client_secret": client["clientSecret"]}


def ask(app, body, headers=None, content_type=FORM, status=200):
    """POST /oauth/token with ``body`` (a dict is form-encoded) as ``content_type``."""
    raw = urlencode(body) if isinstance(body, dict) else body
    return app.request(
        "/oauth/token", method="POST", body=raw.encode(), headers=headers or {},
        content_type=content_type, status=status,
    )  # fmt: skip


def token_of(app, client) -> dict[str, str]:
    """The environ that sends a fresh client-credentials token of ``client``."""
    token = ask(app, {**GRANT, **as_form(client)}).json["access_token"]
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def assert_oauth_error(response, status: int, error: str) -> None:
    """RFC 6749's error body (section 5.2) beside the error object, never cached."""
    assert response.status_int == status
    assert response.headers["Content-Type"] == JSON_TYPE
    body = response.json
    assert set(body) == {"code", "message", "details", "error", "error_description"}
    assert (body["error"], body["code"]) == (error, error.upper())
    assert body["error_description"] == body["message"]
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["Pragma"] == "no-cache"


# -- issuing a token -----------------------------------------------------------------


@pytest.mark.parametrize("how", ["basic", "form"])
def test_a_client_gets_a_bearer_token(anon, client, how):
    if how == "basic":
        response = ask(anon, GRANT, basic(client["clientId"], client["clientSecret"]))
    else:
        response = ask(anon, {**GRANT, **as_form(client)})
    assert response.headers["Content-Type"] == JSON_TYPE
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["Pragma"] == "no-cache"
    body = response.json
    assert set(body) == {"access_token", "token_type", "expires_in"}
    assert (body["token_type"], body["expires_in"]) == ("Bearer", 3600)
    token = {"Authorization": f"Bearer {body['access_token']}"}
    anon.post_json("/v1/articles", {"title": "by a client"}, headers=token, status=201)


def test_the_form_may_say_its_charset_and_carry_unknown_parameters(anon, client):
    form = {**GRANT, **as_form(client), "audience": "ignored"}
    ask(anon, form, content_type=f"{FORM}; charset=UTF-8", status=200)


def test_basic_credentials_are_form_decoded_first(anon, client):
    # RFC 6749 2.3.1: each half is form-encoded before Basic encodes them.
    escaped = "".join(f"%{byte:02X}" for byte in client["clientId"].encode())
    ask(anon, GRANT, basic(escaped, client["clientSecret"]), status=200)


def test_a_token_lives_the_token_ttl(anon, client, clock):
    token = token_of(anon, client)
    clock.advance(3599)
    anon.get("/api/users", extra_environ=token, status=200)
    clock.advance(2)
    expired = anon.get("/api/users", extra_environ=token, status=401)
    assert 'error="invalid_token"' in expired.headers["WWW-Authenticate"]


# -- RFC 6749's errors ---------------------------------------------------------------


def test_a_wrong_secret_by_basic_is_invalid_client_with_a_basic_challenge(anon, client):
    response = ask(anon, GRANT, basic(client["clientId"], "wrong"), status=401)
    assert_oauth_error(response, 401, "invalid_client")
    assert response.headers["WWW-Authenticate"] == 'Basic realm="refapi"'
    unknown = ask(anon, GRANT, basic("nobody", client["clientSecret"]), status=401)
    assert unknown.json == response.json  # an unknown id: the same answer


@pytest.mark.parametrize(
    "header", ["Basic", "Basic !!!", "Basic " + base64.b64encode(b"\xff:x").decode()]
)
def test_malformed_basic_credentials_are_invalid_client(anon, header):
    response = ask(anon, GRANT, {"Authorization": header}, status=401)
    assert_oauth_error(response, 401, "invalid_client")
    assert response.headers["WWW-Authenticate"] == 'Basic realm="refapi"'


@pytest.mark.parametrize(
    "header",
    ["Bearer not-a-token", "Bearer", "Digest username=x", "nonsense"],
)
def test_any_other_authorization_authenticates_no_client(anon, client, header):
    """Only Basic authenticates a client here: anything else in Authorization is
    no client authentication, so without the form's it is invalid_client in RFC
    6749's error body (never the API's own 401 for a bad Bearer token), and beside
    the form's credentials it is not looked at."""
    alone = ask(anon, GRANT, {"Authorization": header}, status=401)
    assert_oauth_error(alone, 401, "invalid_client")
    assert alone.headers["WWW-Authenticate"] == 'Basic realm="refapi"'
    form = {**GRANT, **as_form(client)}
    beside = ask(anon, form, {"Authorization": header})
    assert beside.json["token_type"] == "Bearer"


def test_an_api_key_is_no_client_authentication(app, anon, client):
    """An X-API-Key, valid or not, is not looked at: the form authenticates."""
    for key in ("not-a-key", app.post_json("/api/keys", {"name": "k"}).json["key"]):
        response = ask(anon, {**GRANT, **as_form(client)}, {"X-API-Key": key})
        assert response.json["token_type"] == "Bearer"


@pytest.mark.parametrize(
    "credentials",
    [{"client_secret": "wrong"}, {"client_id": "nobody"}, {"client_secret": None}, {}],
    ids=["wrong-secret", "unknown-id", "no-secret", "none"],
)
def test_failed_form_authentication_is_invalid_client_with_a_challenge(
    anon, client, credentials
):
    form = {**GRANT, **as_form(client), **credentials} if credentials else GRANT
    form = {name: value for name, value in form.items() if value is not None}
    response = ask(anon, form, status=401)
    assert_oauth_error(response, 401, "invalid_client")
    # RFC 9110 wants a challenge on every 401: Basic is the scheme to offer.
    assert response.headers["WWW-Authenticate"] == 'Basic realm="refapi"'


def test_an_unknown_grant_type_is_unsupported_grant_type(anon, client):
    for grant in ("password", "authorization_code", "CLIENT_CREDENTIALS"):
        form = {"grant_type": grant, **as_form(client)}
        response = ask(anon, form, status=400)
        assert_oauth_error(response, 400, "unsupported_grant_type")
        assert response.json["details"] == {"supported": ["client_credentials"]}


def test_a_missing_grant_type_is_invalid_request(anon, client):
    response = ask(anon, as_form(client), status=400)
    assert_oauth_error(response, 400, "invalid_request")
    errors = response.json["details"]["errors"]
    assert errors == [{"field": "/grant_type", "message": "is required"}]


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ('{"grant_type": "client_credentials"}', "application/json"),
        ("grant_type=client_credentials", "text/plain"),
        ("grant_type=client_credentials", f"{FORM}; charset=latin-1"),
        ("", None),
    ],
    ids=["json", "text", "latin-1", "no-body"],
)
def test_a_body_that_is_not_a_form_is_invalid_request_not_415(
    anon, client, body, content_type
):
    headers = basic(client["clientId"], client["clientSecret"])
    response = ask(anon, body, headers, content_type=content_type, status=400)
    assert_oauth_error(response, 400, "invalid_request")


def test_a_body_over_the_limit_is_413_as_on_every_route(make_app, client):
    small = make_app(anonymous=True, max_body_bytes=64)
    form = {**GRANT, **as_form(client)}
    response = ask(small, form, status=413)
    assert_error(response, 413, "PAYLOAD_TOO_LARGE")
    assert response.json["details"] == {"limit": 64}
    assert response.headers["Cache-Control"] == "no-store"


def test_a_repeated_parameter_is_invalid_request(anon, client):
    form = urlencode({**GRANT, **as_form(client)}) + "&grant_type=client_credentials"
    response = ask(anon, form, status=400)
    assert_oauth_error(response, 400, "invalid_request")
    assert response.json["details"] == {"repeated": ["grant_type"]}


def test_basic_and_form_credentials_together_are_invalid_request(anon, client):
    headers = basic(client["clientId"], client["clientSecret"])
    response = ask(anon, {**GRANT, **as_form(client)}, headers, status=400)
    assert_oauth_error(response, 400, "invalid_request")
    # Naming the same client in the form as well is no second method.
    ask(anon, {**GRANT, "client_id": client["clientId"]}, headers, status=200)


def test_a_scope_is_invalid_scope(anon, client):
    response = ask(anon, {**GRANT, **as_form(client), "scope": "read"}, status=400)
    assert_oauth_error(response, 400, "invalid_scope")


def test_a_value_over_its_bound_is_invalid_request(anon, client):
    form = {**GRANT, **as_form(client), "client_secret": "s" * 256}
    response = ask(anon, form, status=400)
    assert_oauth_error(response, 400, "invalid_request")
    assert [e["field"] for e in response.json["details"]["errors"]] == [
        "/client_secret"
    ]


# -- what the token speaks for -------------------------------------------------------


def test_a_deleted_clients_tokens_stop_working(app, anon, client):
    token = token_of(anon, client)
    anon.get("/api/users", extra_environ=token, status=200)
    app.delete(f"/api/oauth-clients/{client['id']}", status=204)
    refused = anon.get("/api/users", extra_environ=token, status=401)
    assert_error(refused, 401, "UNAUTHENTICATED")
    assert refused.headers["WWW-Authenticate"] == (
        'Bearer realm="refapi", error="invalid_token"'
    )
    gone = ask(anon, {**GRANT, **as_form(client)}, status=401)
    assert_oauth_error(gone, 401, "invalid_client")


def test_logout_with_a_clients_token_revokes_that_token_alone(anon, client):
    """Each token of a client is a login of its own (docs/authentication.md)."""
    first, second = token_of(anon, client), token_of(anon, client)
    anon.post("/api/logout", extra_environ=first, status=204)
    anon.get("/api/users", extra_environ=first, status=401)
    anon.get("/api/users", extra_environ=second, status=200)


def test_the_token_acts_as_the_client_not_as_a_user(app, anon, client):
    token = token_of(anon, client)
    admins = app.post_json(
        "/v1/payments", {"amount": 1, "currency": "EUR"},
        headers={"Idempotency-Key": "same"}, status=201,
    ).json  # fmt: skip
    anon.get(f"/v1/payments/{admins['id']}", extra_environ=token, status=404)
    # The same idempotency key is the client's own: a new payment, not a replay.
    own = anon.post_json(
        "/v1/payments", {"amount": 2, "currency": "EUR"},
        headers={"Idempotency-Key": "same"}, extra_environ=token, status=201,
    ).json  # fmt: skip
    assert own["id"] != admins["id"]
    anon.get(f"/v1/payments/{own['id']}", extra_environ=token, status=200)
    app.get(f"/v1/payments/{own['id']}", status=404)
    # Role user, and no user record: not an admin, nor user 1 (whose id it shares).
    anon.get("/api/keys", extra_environ=token, status=403)
    body = {"email": "x@example.com", "firstName": "", "lastName": ""}
    anon.put_json("/api/users/1", body, extra_environ=token, status=403)


def test_two_tokens_of_one_client_share_its_rate_limit_bucket(make_app, app, client):
    limited = make_app(anonymous=True, rate_limit_capacity=20, rate_limit_refill=0.01)
    first, second = token_of(limited, client), token_of(limited, client)
    assert first != second
    seen = [
        limited.get("/v1/todos/1", extra_environ=token).headers["RateLimit"]
        for token in (first, second, first)
    ]
    assert seen == [f'"default";r={n};t=0' for n in (19, 18, 17)]
    # Anyone else has a bucket of their own.
    other = limited.get("/v1/todos/1", extra_environ={"REMOTE_ADDR": "192.0.2.9"})
    assert other.headers["RateLimit"] == '"default";r=19;t=0'


@pytest.mark.parametrize(
    "extra",
    [{f"p{n}": "x" for n in range(8)}, {"n" * 65: "x"}, {"audience": "x" * 256}],
    ids=["11-parameters", "a-65-character-name", "an-unknown-value-of-256"],
)
def test_the_form_is_bounded_so_its_limit_is(anon, client, extra):
    """Bounds that make the route's body limit small (tests/test_routes_limits.py)."""
    response = ask(anon, {**GRANT, **as_form(client), **extra}, status=400)
    assert_oauth_error(response, 400, "invalid_request")


def test_a_form_of_more_fields_than_parameters_is_refused_before_it_is_split(anon):
    """``a=&a=&...`` to the limit: counted, never split into 16,000 pairs."""
    response = ask(anon, "&".join(["a="] * 5000), status=400)
    assert_oauth_error(response, 400, "invalid_request")
    assert response.json["details"] == {
        "errors": [{"field": "", "message": "must have at most 10 parameters"}]
    }


def test_a_token_request_racing_a_fresh_start_is_invalid_client(
    config, store, clock, client
):
    # The client is gone before its token is stored: the insert's foreign key
    # refuses it, and the answer is RFC 6749's for an unknown client, not a 500.
    resetting = config.open_store()
    try:
        racing = FreshStartAfter("find_oauth_client", store, resetting)
        app = webtest.TestApp(create_app(config, store=racing, clock=clock))
        refused = ask(app, {**GRANT, **as_form(client)}, status=401)
        assert_oauth_error(refused, 401, "invalid_client")
        assert store.find_oauth_client(client["clientId"]) is None
    finally:
        resetting.close()
