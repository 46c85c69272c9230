"""The lab's own authentication challenges (lab/challenges.py; docs/lab.md,
"Authentication"): /lab/basic-auth, /lab/hidden-basic-auth and /lab/bearer, in
process. They check the path's user and password, never the service's
accounts."""

from __future__ import annotations

import base64

import pytest
import webtest

from tests.helpers import assert_error


@pytest.fixture
def anon(make_app) -> webtest.TestApp:
    return make_app(anonymous=True)


def basic(user: str, password: str) -> dict[str, str]:
    pair = f"{user}:{password}".encode()
    return {"Authorization": "Basic " + base64.b64encode(pair).decode()}


@pytest.mark.parametrize("path", ["basic-auth", "hidden-basic-auth"])
def test_the_path_s_user_and_password_authenticate(anon, path):
    answer = anon.get(f"/lab/{path}/ada/s3cr%C3%A9t", headers=basic("ada", "s3crét"))
    assert answer.status_int == 200
    assert answer.json == {"authenticated": True, "user": "ada"}
    assert answer.headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize(
    "headers",
    [{}, basic("ada", "wrong"), basic("bob", "s3cret"), {"Authorization": "Bearer x"},
     {"Authorization": "Basic !!"}],
    ids=["none", "wrong password", "wrong user", "another scheme", "malformed"],
)  # fmt: skip
def test_anything_else_is_the_lab_s_challenge_or_a_404_when_hidden(anon, headers):
    answer = anon.get("/lab/basic-auth/ada/s3cret", headers=headers, status=401)
    assert_error(answer, 401, "UNAUTHENTICATED")
    # The lab's challenge, never the service's (Bearer realm="refapi").
    assert answer.headers["WWW-Authenticate"] == 'Basic realm="refapi lab"'
    hidden = anon.get("/lab/hidden-basic-auth/ada/s3cret", headers=headers, status=404)
    assert_error(hidden, 404, "NOT_FOUND")
    assert "WWW-Authenticate" not in hidden.headers


def test_the_service_s_own_admin_is_nobody_to_the_lab(app):
    # The fixture's app sends the seeded admin's Bearer token: no challenge met.
    answer = app.get("/lab/basic-auth/admin/admin", status=401)
    assert answer.headers["WWW-Authenticate"] == 'Basic realm="refapi lab"'


def test_any_bearer_token_is_taken_and_shown_redacted(anon):
    answer = anon.get("/lab/bearer", headers={"Authorization": "Bearer s3cr3t-token"})
    assert answer.json == {"authenticated": True, "token": "[redacted]"}
    assert "s3cr3t" not in answer.text


@pytest.mark.parametrize("header", [None, "Bearer", "Bearer ", "Basic eDp5"])
def test_no_bearer_token_is_the_lab_s_bearer_challenge(anon, header):
    headers = {} if header is None else {"Authorization": header}
    answer = anon.get("/lab/bearer", headers=headers, status=401)
    assert_error(answer, 401, "UNAUTHENTICATED")
    assert answer.headers["WWW-Authenticate"] == "Bearer"
