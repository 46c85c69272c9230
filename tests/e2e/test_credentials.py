"""API keys and client credentials over gunicorn: made by the admin, used at once by
any worker, revoked at once, and never written in a log."""

from __future__ import annotations

import base64
import json

import pytest

from tests.e2e.harness import exchange, raw_request

pytestmark = pytest.mark.e2e

JSON_HEADERS = {"Content-Type": "application/json"}


def test_a_key_and_a_client_token_work_across_workers_and_stay_out_of_logs(
    gunicorn, pool, anon_pool, server_name
):
    server = gunicorn(workers=2, server=server_name)

    def send(client, method, path, body=None, headers=None):
        # A connection a request, so any worker may take it: gunicorn's sync
        # workers close every one anyway, Granian would keep it to one worker.
        return client.request(
            method, server.url(path), body=body,
            headers={**(headers or {}), "Connection": "close"},
        )  # fmt: skip

    made = send(pool, "POST", "/api/keys", b'{"name": "e2e"}', JSON_HEADERS)
    assert made.status == 201, made.data
    key = made.json()["key"]
    registered = send(
        pool, "POST", "/api/oauth-clients", b'{"name": "e2e"}', JSON_HEADERS
    )
    assert registered.status == 201, registered.data
    client = registered.json()

    # The key, on a route that needs a credential, a few times (both workers).
    article = json.dumps({"title": "by key"}).encode()
    for _ in range(4):
        by_key = send(
            anon_pool, "POST", "/v1/articles", article,
            {**JSON_HEADERS, "X-API-Key": key},
        )  # fmt: skip
        assert by_key.status == 201, by_key.data

    # A token for the client, by HTTP Basic, then a payment made with it.
    pair = f"{client['clientId']}:{client['clientSecret']}".encode()
    issued = send(
        anon_pool, "POST", "/oauth/token", b"grant_type=client_credentials",
        {"Authorization": "Basic " + base64.b64encode(pair).decode(),
         "Content-Type": "application/x-www-form-urlencoded"},
    )  # fmt: skip
    assert issued.status == 200, issued.data
    assert issued.headers["Cache-Control"] == "no-store"
    token = issued.json()["access_token"]
    as_client = {"Authorization": f"Bearer {token}"}
    paid = send(
        anon_pool, "POST", "/v1/payments", b'{"amount": 3, "currency": "EUR"}',
        {**JSON_HEADERS, **as_client, "Idempotency-Key": "e2e"},
    )  # fmt: skip
    assert paid.status == 201, paid.data
    payment = paid.json()["id"]
    for _ in range(2):
        mine = send(anon_pool, "GET", f"/v1/payments/{payment}", headers=as_client)
        assert mine.status == 200
        theirs = send(pool, "GET", f"/v1/payments/{payment}")
        assert theirs.status == 404  # the admin's scope is not the client's

    # Revoked: the key and the client's token fail on every worker at once.
    key_id = made.json()["id"]
    assert send(pool, "DELETE", f"/api/keys/{key_id}").status == 204
    assert send(pool, "DELETE", f"/api/oauth-clients/{client['id']}").status == 204
    for _ in range(4):
        refused = send(anon_pool, "GET", "/api/users", headers={"X-API-Key": key})
        assert refused.status == 401
        assert refused.headers["WWW-Authenticate"] == (
            'Bearer realm="refapi", error="invalid_token"'
        )
        assert send(anon_pool, "GET", "/api/users", headers=as_client).status == 401

    log = server.log()
    assert "POST /oauth/token" in log  # the access log was written
    for secret in (key, client["clientSecret"], token):
        assert secret not in log
    assert server.log_failures() == []


def test_a_tab_after_bearer_is_401_not_anonymous_over_a_real_server(server):
    # What gunicorn hands the app for this header, not what a test client builds.
    token = server.authorization.removeprefix("Bearer ")
    tab = {"Authorization": f"Bearer\t{token}", "Content-Type": "application/json"}
    for method, body in [("GET", b""), ("POST", b'{"title": "t"}')]:
        sent = raw_request(method, "/v1/articles", tab, body)
        response = exchange(server, sent, admin=False)
        assert response.status == 401, response.body
        assert json.loads(response.body)["code"] == "UNAUTHENTICATED"
        assert response.getheader("WWW-Authenticate") == (
            'Bearer realm="refapi", error="invalid_request"'
        )
    spaced = {**tab, "Authorization": f"Bearer {token}"}
    made = raw_request("POST", "/v1/articles", spaced, b'{"title": "t"}')
    assert exchange(server, made, admin=False).status == 201
