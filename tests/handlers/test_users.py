"""Users, login and the session: every rule of who may do what (OWASP API Top 10)."""

from __future__ import annotations

import logging
import os
import stat

import pytest
import webtest
from werkzeug.http import parse_cookie

from refapi import create_app
from refapi.config import Config, shown_url
from refapi.handlers import session as session_module
from refapi.handlers import users as users_module
from tests.conftest import ADMIN, TEST_AUTH, bearer
from tests.helpers import assert_error, refused_bodies

ADA = {"email": "ada@example.com", "password": "ada-password", "firstName": "Ada"}
BOB = {"email": "bob@example.com", "password": "bob-password"}


def register(app, body, **kwargs):
    return app.post_json("/api/users", body, **kwargs)


@pytest.fixture
def users(anon):
    """Ada and Bob registered; their Bearer environs."""
    ada = register(anon, ADA, status=201).json
    bob = register(anon, BOB, status=201).json
    return {
        "ada": (ada, bearer(anon, ADA["email"], ADA["password"])),
        "bob": (bob, bearer(anon, BOB["email"], BOB["password"])),
    }


# -- register ---------------------------------------------------------------------


def test_register_answers_the_user_without_a_password(anon):
    response = register(anon, ADA, status=201)
    user = response.json
    assert set(user) == {
        "id", "email", "firstName", "lastName", "role", "createdAt", "updatedAt",
    }  # fmt: skip
    assert (user["email"], user["firstName"], user["lastName"], user["role"]) == (
        "ada@example.com", "Ada", "", "user",
    )  # fmt: skip
    assert response.headers["Location"] == f"/api/users/{user['id']}"
    assert response.headers["Cache-Control"] == "no-store"
    assert "password" not in response.text and "ada-password" not in response.text


@pytest.mark.parametrize("email", ["ada@example.com", "ADA@Example.COM"])
def test_an_email_is_unique_whatever_its_case(anon, email):
    register(anon, ADA, status=201)
    response = register(anon, {**ADA, "email": email}, status=409)
    assert_error(response, 409, "CONFLICT")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"email": "ada@example.com", "password": "short"}, "/password"),
        ({"email": "not-an-email", "password": "long enough"}, "/email"),
        ({"password": "long enough"}, "/email"),
        ({**ADA, "isAdmin": True}, "/isAdmin"),
        ({**ADA, "role": "root"}, "/role"),
    ],
)
def test_register_validates_the_body(anon, body, field):
    response = register(anon, body, status=400)
    assert field in [e["field"] for e in response.json["details"]["errors"]]


def test_asking_for_the_admin_role_is_403_and_makes_no_one(anon, app):
    response = register(anon, {**ADA, "role": "admin"}, status=403)
    assert_error(response, 403, "FORBIDDEN")
    anon.post_json("/api/login", {"email": ADA["email"], "password": "x"}, status=401)
    assert register(anon, ADA, status=201).json["role"] == "user"
    # An admin may make another admin.
    made = register(app, {**BOB, "role": "admin"}, status=201)
    assert made.json["role"] == "admin"


BAD_EMAILS = [
    pytest.param("admin@example.com\n", id="trailing-newline"),
    pytest.param("ada@example.com\r\n", id="trailing-crlf"),
    pytest.param("\nada@example.com", id="leading-newline"),
    pytest.param("ada @example.com", id="space"),
    pytest.param("ada@exa\tmple.com", id="tab"),
    pytest.param("ada\x00@example.com", id="nul"),
    pytest.param("ada@example.com\x7f", id="delete"),
    pytest.param("ada@example.com\x85", id="next-line"),
    pytest.param("ada@example.com\u2028", id="line-separator"),
    pytest.param("a" * 243 + "@example.com", id="255-characters"),
]


# An address that looks like another's is never made either; a login may still
# name one, made before the rule (docs/authentication.md).
INVISIBLE_EMAILS = [
    pytest.param("ada@example.com\u200b", id="zero-width-space"),
    pytest.param("ad\u200da@example.com", id="zero-width-joiner"),
    pytest.param("ada@\u202eelpmaxe.com", id="right-to-left-override"),
    pytest.param("ada@exam\u00adple.com", id="soft-hyphen"),
    pytest.param("ada@example.com\u2060", id="word-joiner"),
    pytest.param("ada@exam\u061cple.com", id="arabic-letter-mark"),
    pytest.param("ada\ufe0f@example.com", id="variation-selector-16"),
    pytest.param("ada@exa\u180emple.com", id="mongolian-vowel-separator"),
    pytest.param("\u115fada@example.com", id="hangul-choseong-filler"),
    pytest.param("ada@ex\u3164ample.com", id="hangul-filler"),
    pytest.param("ada@example\uffa0.com", id="halfwidth-hangul-filler"),
    pytest.param("ada@example.com\U000e0041", id="tag-latin-capital-a"),
    pytest.param("ada@example.com\u0600", id="arabic-number-sign"),
    pytest.param("ada@exa\U0001d173mple.com", id="musical-begin-beam"),
]


@pytest.mark.parametrize(
    ("email", "at_login"),
    [
        *(pytest.param(*p.values, 400, id=p.id) for p in BAD_EMAILS),
        *(pytest.param(*p.values, 401, id=p.id) for p in INVISIBLE_EMAILS),
    ],
)
def test_an_email_with_whitespace_a_control_or_an_invisible_character_is_400(
    anon, users, email, at_login
):
    body = {"email": email, "password": ADA["password"]}
    assert_error(register(anon, body, status=400), 400, "VALIDATION_ERROR")
    assert register(anon, body, status=400).json["details"]["errors"][0]["field"] == (
        "/email"
    )
    ada, token = users["ada"]
    put = {"email": email, "firstName": "", "lastName": ""}
    changed = anon.put_json(
        f"/api/users/{ada['id']}", put, extra_environ=token, status=400
    )
    assert [e["field"] for e in changed.json["details"]["errors"]] == ["/email"]
    login = anon.post_json("/api/login", body, status=at_login)
    if at_login == 400:
        assert [e["field"] for e in login.json["details"]["errors"]] == ["/email"]


def test_the_admins_email_and_a_newline_is_not_a_second_account(app, anon):
    # A pattern ending in $ would match before the final newline (re.search).
    body = {"email": ADMIN["email"] + "\n", "password": "a-long-password"}
    refused = register(anon, body, status=400)
    [error] = refused.json["details"]["errors"]
    assert error["field"] == "/email"
    assert error["message"].startswith("must be an email address: one @, and no")
    assert [user["email"] for user in app.get("/api/users").json["data"]] == [
        ADMIN["email"]
    ]


def test_an_email_of_254_characters_is_accepted(anon):
    email = "a" * 242 + "@example.com"
    assert (
        register(anon, {"email": email, "password": "a-long-password"}).json["email"]
        == email
    )


@pytest.mark.parametrize("password", ["password", "iloveyou", "TrustNo1", "BASEBALL"])
def test_a_common_password_is_400_whatever_its_case(anon, users, password):
    refused = register(
        anon, {"email": "eve@example.com", "password": password}, status=400
    )
    assert_error(refused, 400, "VALIDATION_ERROR")
    assert refused.json["details"]["errors"] == [
        {"field": "/password", "message": "is one of the 10,000 most common passwords"}
    ]
    ada, token = users["ada"]
    body = {"email": ada["email"], "firstName": "", "lastName": "",
            "password": password, "currentPassword": ADA["password"]}  # fmt: skip
    changed = anon.put_json(
        f"/api/users/{ada['id']}", body, extra_environ=token, status=400
    )
    assert [e["field"] for e in changed.json["details"]["errors"]] == ["/password"]
    bearer(anon, ADA["email"], ADA["password"])  # unchanged


def test_a_taken_email_is_409_before_any_password_is_hashed(anon, monkeypatch):
    register(anon, ADA, status=201)
    hashed = []
    real = users_module.generate_password_hash

    def counting(password, method):
        hashed.append(method)
        return real(password, method)

    monkeypatch.setattr(users_module, "generate_password_hash", counting)
    response = register(anon, {**ADA, "email": ADA["email"].upper()}, status=409)
    assert_error(response, 409, "CONFLICT")
    assert hashed == []
    register(anon, BOB, status=201)
    assert len(hashed) == 1


# -- login, logout, session ---------------------------------------------------------


def test_login_answers_a_token_and_sets_a_session_cookie(anon):
    register(anon, ADA, status=201)
    response = anon.post_json(
        "/api/login", {"email": "ADA@example.com", "password": ADA["password"]}
    )
    body = response.json
    assert set(body) == {"token", "tokenType", "expiresIn", "csrfToken", "user"}
    assert body["tokenType"] == "Bearer" and body["expiresIn"] == 3600
    assert body["user"]["email"] == ADA["email"]
    assert response.headers["Cache-Control"] == "no-store"
    cookie = response.headers["Set-Cookie"]
    attributes = [part.strip() for part in cookie.split(";")]
    assert attributes[0].startswith("refapi_session=")
    assert {"HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=3600"} <= set(attributes)
    assert "Secure" not in attributes
    assert body["token"] not in cookie  # the cookie is its own secret


def test_over_https_the_cookie_is_secure(anon):
    register(anon, ADA, status=201)
    response = anon.post_json(
        "/api/login",
        {"email": ADA["email"], "password": ADA["password"]},
        extra_environ={"wsgi.url_scheme": "https"},
    )
    assert "Secure" in [p.strip() for p in response.headers["Set-Cookie"].split(";")]


def test_a_wrong_password_and_an_unknown_email_get_the_same_answer(anon, monkeypatch):
    register(anon, ADA, status=201)
    checks = []
    real = session_module.check_password_hash

    def counting(stored, password):
        checks.append(stored)
        return real(stored, password)

    monkeypatch.setattr(session_module, "check_password_hash", counting)
    wrong = anon.post_json(
        "/api/login", {"email": ADA["email"], "password": "wrong-password"}, status=401
    )
    unknown = anon.post_json(
        "/api/login", {"email": "nobody@example.com", "password": "x"}, status=401
    )
    assert_error(wrong, 401, "INVALID_CREDENTIALS")
    assert wrong.json == unknown.json
    assert wrong.headers["WWW-Authenticate"] == unknown.headers["WWW-Authenticate"]
    assert len(checks) == 2  # the slow hash ran once for each, known email or not


def test_failed_logins_are_limited_per_account(make_app, clock):
    anon = make_app(anonymous=True, login_max_failures=2)
    register(anon, ADA, status=201)
    wrong = {"email": ADA["email"], "password": "wrong-password"}
    for n in range(20):  # ten times the limit of an address, from many
        environ = {"REMOTE_ADDR": f"10.0.0.{n}"}
        anon.post_json("/api/login", wrong, extra_environ=environ, status=401)
    right = {"email": ADA["email"], "password": ADA["password"]}
    limited = anon.post_json(
        "/api/login", right, extra_environ={"REMOTE_ADDR": "10.0.1.1"}, status=429
    )
    assert_error(limited, 429, "RATE_LIMITED")
    assert limited.headers["Retry-After"] == "60"
    clock.advance(61)
    anon.post_json("/api/login", right, status=200)


def test_failed_logins_are_limited_per_address(anon):
    for n in range(5):
        body = {"email": f"guess{n}@example.com", "password": "x"}
        anon.post_json("/api/login", body, status=401)
    register(anon, ADA, status=201)
    right = {"email": ADA["email"], "password": ADA["password"]}
    anon.post_json("/api/login", right, status=429)
    anon.post_json("/api/login", right, extra_environ={"REMOTE_ADDR": "10.1.1.1"})


def test_logout_revokes_the_token_and_the_session(anon):
    register(anon, ADA, status=201)
    login = anon.post_json(
        "/api/login", {"email": ADA["email"], "password": ADA["password"]}
    )
    token = {"HTTP_AUTHORIZATION": f"Bearer {login.json['token']}"}
    anon.get("/api/users", extra_environ=token, status=200)
    out = anon.post("/api/logout", extra_environ=token, status=204)
    assert "Max-Age=0" in out.headers["Set-Cookie"]
    refused = anon.get("/api/users", extra_environ=token, status=401)
    assert refused.headers["WWW-Authenticate"] == (
        'Bearer realm="refapi", error="invalid_token"'
    )
    # The session cookie of that login is gone too.
    anon.set_cookie("refapi_session", _session_of(login))
    anon.get("/api/session", status=401)


def _session_of(login) -> str:
    return parse_cookie(login.headers["Set-Cookie"])["refapi_session"]


def test_an_expired_token_is_401(anon, clock):
    register(anon, ADA, status=201)
    token = bearer(anon, ADA["email"], ADA["password"])
    clock.advance(3601)
    response = anon.get("/api/users", extra_environ=token, status=401)
    assert_error(response, 401, "UNAUTHENTICATED")


def test_an_invalid_token_is_401_even_on_public_routes_but_not_health(anon):
    forged = {"HTTP_AUTHORIZATION": "Bearer not-a-token"}
    for path in ("/v1/todos/1", "/api/demo.php?action=list", "/api/download_csv.php"):
        assert_error(
            anon.get(path, extra_environ=forged, status=401), 401, "UNAUTHENTICATED"
        )
    anon.get("/healthz", extra_environ=forged, status=200)
    bad_key = anon.get("/v1/todos/1", headers={"X-API-Key": "nope"}, status=401)
    assert_error(bad_key, 401, "UNAUTHENTICATED")


def test_session_tells_a_page_who_is_logged_in(anon):
    register(anon, ADA, status=201)
    login = anon.post_json(
        "/api/login", {"email": ADA["email"], "password": ADA["password"]}
    )
    session = anon.get("/api/session", status=200)  # WebTest keeps the cookie
    assert session.json == {
        "user": login.json["user"],
        "csrfToken": login.json["csrfToken"],
    }
    assert session.headers["Cache-Control"] == "no-store"
    anon.reset()
    assert_error(anon.get("/api/session", status=401), 401, "UNAUTHENTICATED")


# -- the session cookie and CSRF ---------------------------------------------------


@pytest.fixture
def logged_in(anon, users):
    """Ada logged in by cookie (WebTest keeps it), and her CSRF token."""
    login = anon.post_json(
        "/api/login", {"email": ADA["email"], "password": ADA["password"]}
    )
    return anon, login.json["csrfToken"], users["ada"][0]


def test_a_cookie_request_with_the_csrf_token_passes(logged_in):
    app, csrf, ada = logged_in
    body = {"email": ada["email"], "firstName": "Ada", "lastName": "King"}
    response = app.put_json(
        f"/api/users/{ada['id']}", body, headers={"X-CSRF-Token": csrf}, status=200
    )
    assert response.json["lastName"] == "King"
    app.get("/api/users", status=200)  # a safe method needs no token


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"X-CSRF-Token": "forged"},
        {"X-CSRF-Token": "CSRF", "Origin": "https://evil.example"},
    ],
    ids=["none", "wrong", "foreign-origin"],
)
def test_a_cookie_request_without_a_valid_csrf_token_is_403(logged_in, headers):
    app, csrf, ada = logged_in
    if headers.get("X-CSRF-Token") == "CSRF":
        headers = {**headers, "X-CSRF-Token": csrf}
    body = {"email": ada["email"], "firstName": "Eve", "lastName": ""}
    response = app.put_json(
        f"/api/users/{ada['id']}", body, headers=headers, status=403
    )
    assert_error(response, 403, "CSRF_FAILED")
    # The message names the cause: a valid token from another origin was told
    # its token was not valid.
    cause = "Origin names another" if "Origin" in headers else "valid X-CSRF-Token"
    assert cause in response.json["message"]
    app.delete(f"/api/users/{ada['id']}", headers=headers, status=403)
    assert app.get(f"/api/users/{ada['id']}").json["firstName"] == "Ada"


def test_a_put_answers_no_etag_as_what_is_stored_is_not_what_was_sent(logged_in):
    # RFC 9110 9.3.4: a validator only when the PUT's body was stored as sent; a
    # user's answer adds the id and timestamps (docs/api.md, "Conditional requests").
    app, csrf, ada = logged_in
    body = {"email": ada["email"], "firstName": "Ada", "lastName": "King"}
    url = f"/api/users/{ada['id']}"
    response = app.put_json(url, body, headers={"X-CSRF-Token": csrf}, status=200)
    assert "ETag" not in response.headers
    assert response.json != body


# WebTest sends Host: localhost:80; a browser's Origin leaves the port out, and
# was refused (RFC 6454 section 6.1: the scheme's own port is not written).
@pytest.mark.parametrize(
    "origin", ["http://localhost:80", "http://localhost", "HTTP://LOCALHOST"]
)
def test_the_own_origin_passes(logged_in, origin):
    app, csrf, ada = logged_in
    headers = {"X-CSRF-Token": csrf, "Origin": origin}
    body = {"email": ada["email"], "firstName": "A", "lastName": ""}
    app.put_json(f"/api/users/{ada['id']}", body, headers=headers, status=200)


@pytest.mark.parametrize("path", ["/api/users", "/api/session"])
def test_a_stale_cookie_is_401_and_cleared_on_protected_routes_only(anon, path):
    anon.set_cookie("refapi_session", "expired-or-forged")
    response = anon.get(path, status=401)
    cleared = response.headers["Set-Cookie"]
    assert cleared.startswith("refapi_session=;") and "Max-Age=0" in cleared
    # Without a cookie there is nothing to clear.
    anon.reset()
    assert "Set-Cookie" not in anon.get(path, status=401).headers
    # Public routes ignore it: it never locks anyone out of logging in again.
    anon.get("/v1/articles", status=200)
    register(anon, ADA, status=201)
    anon.post_json(
        "/api/login", {"email": ADA["email"], "password": ADA["password"]}, status=200
    )


# -- who may read and change users (BOLA, mass assignment) -------------------------


def test_users_need_a_credential(anon):
    calls = [("GET", "/api/users"), ("GET", "/api/users/1"),
             ("PUT", "/api/users/1"), ("DELETE", "/api/users/1")]  # fmt: skip
    for method, path in calls:
        response = anon.request(path, method=method, expect_errors=True)
        assert_error(response, 401, "UNAUTHENTICATED")
        assert response.headers["WWW-Authenticate"] == 'Bearer realm="refapi"'


def test_any_user_may_read_users_paginated(anon, users):
    _, ada = users["ada"]
    first = anon.get("/api/users?limit=2", extra_environ=ada, status=200)
    assert [u["email"] for u in first.json["data"]] == [ADMIN["email"], ADA["email"]]
    assert first.headers["Cache-Control"] == "no-store"
    rest = anon.get(
        f"/api/users?limit=2&cursor={first.json['nextCursor']}", extra_environ=ada
    )
    assert [u["email"] for u in rest.json["data"]] == [BOB["email"]]
    bob = users["bob"][0]
    assert anon.get(f"/api/users/{bob['id']}", extra_environ=ada).json == bob
    missing = anon.get("/api/users/999", extra_environ=ada, status=404)
    assert missing.headers["Cache-Control"] == "no-store"  # errors too


def test_a_user_cannot_change_or_delete_another(anon, users):
    _, ada = users["ada"]
    bob, _ = users["bob"]
    body = {"email": "taken@example.com", "firstName": "x", "lastName": "y"}
    changed = anon.put_json(
        f"/api/users/{bob['id']}", body, extra_environ=ada, status=403
    )
    assert_error(changed, 403, "FORBIDDEN")
    anon.delete(f"/api/users/{bob['id']}", extra_environ=ada, status=403)
    anon.put_json("/api/users/999", body, extra_environ=ada, status=403)
    assert anon.get(f"/api/users/{bob['id']}", extra_environ=ada).json == bob


@pytest.mark.parametrize(("content_type", "body"), refused_bodies(b"{}", 32 * 1024))
def test_another_user_gets_403_before_the_body_is_read(anon, users, content_type, body):
    # Authorization before the body (docs/api.md, "The order of checks").
    _, ada = users["ada"]
    bob, _ = users["bob"]
    for user_id in (bob["id"], 999):  # from the path alone, so nothing is probed
        refused = anon.put(
            f"/api/users/{user_id}", body, extra_environ=ada, status=403,
            headers={"Content-Type": content_type},
        )  # fmt: skip
        assert_error(refused, 403, "FORBIDDEN")
    own = anon.put(
        f"/api/users/{users['ada'][0]['id']}", body, extra_environ=ada, status="4*",
        headers={"Content-Type": content_type},
    )  # fmt: skip
    assert own.status_int in (400, 413, 415)


def test_a_user_asking_to_be_admin_is_403_and_stays_a_user(anon, users):
    ada, token = users["ada"]
    body = {"email": ada["email"], "firstName": "", "lastName": "", "role": "admin"}
    response = anon.put_json(
        f"/api/users/{ada['id']}", body, extra_environ=token, status=403
    )
    assert_error(response, 403, "FORBIDDEN")
    assert anon.get(f"/api/users/{ada['id']}", extra_environ=token).json["role"] == (
        "user"
    )
    body["role"] = "user"  # naming the role one has is no change
    anon.put_json(f"/api/users/{ada['id']}", body, extra_environ=token, status=200)


def test_put_replaces_the_editable_fields_and_may_change_the_password(anon, users):
    ada, token = users["ada"]
    body = {
        "email": "Ada.King@example.com",
        "firstName": "Augusta",
        "lastName": "King",
        "password": "a-new-password",
        "currentPassword": ADA["password"],
    }
    user = anon.put_json(f"/api/users/{ada['id']}", body, extra_environ=token).json
    assert user == {
        **ada, "email": "Ada.King@example.com", "firstName": "Augusta",
        "lastName": "King", "updatedAt": user["updatedAt"],
    }  # fmt: skip
    login = {"email": "ada.king@example.com", "password": "a-new-password"}
    anon.post_json("/api/login", login, status=200)
    old = {"email": "ada.king@example.com", "password": ADA["password"]}
    anon.post_json("/api/login", old, status=401)
    taken = {"email": BOB["email"].upper(), "firstName": "", "lastName": ""}
    conflict = anon.put_json(
        f"/api/users/{ada['id']}", taken, extra_environ=token, status=409
    )
    assert_error(conflict, 409, "CONFLICT")
    missing = anon.put_json(
        f"/api/users/{ada['id']}", {"email": "a@b.c"}, extra_environ=token, status=400
    )
    fields = {e["field"] for e in missing.json["details"]["errors"]}
    assert fields == {"/firstName", "/lastName"}


def test_an_admin_may_change_and_delete_anyone(app, users):
    bob, bob_token = users["bob"]
    body = {"email": bob["email"], "firstName": "B", "lastName": "", "role": "admin"}
    assert app.put_json(f"/api/users/{bob['id']}", body).json["role"] == "admin"
    app.delete(f"/api/users/{bob['id']}", status=204)
    app.delete(f"/api/users/{bob['id']}", status=404)
    # The deleted user's tokens went with it.
    app.get("/api/users", extra_environ=bob_token, status=401)


def test_a_user_may_delete_themself(anon, users):
    ada, token = users["ada"]
    anon.delete(f"/api/users/{ada['id']}", extra_environ=token, status=204)
    anon.get("/api/users", extra_environ=token, status=401)


def test_article_writes_need_a_credential_and_reads_do_not(anon, users):
    _, token = users["ada"]
    response = anon.post_json("/v1/articles", {"title": "a"}, status=401)
    assert_error(response, 401, "UNAUTHENTICATED")
    anon.post_json("/v1/articles", {"title": "a"}, extra_environ=token, status=201)
    anon.get("/v1/articles/1", status=200)
    anon.patch_json("/v1/articles/1", {"title": "b"}, status=401)
    anon.delete("/v1/articles/1", status=401)


# -- the last admin ------------------------------------------------------------------


def test_the_last_admin_can_be_neither_demoted_nor_deleted(app, users):
    me = app.get("/api/users/1").json
    demote = {"email": me["email"], "firstName": "", "lastName": "", "role": "user"}
    for response in (
        app.put_json("/api/users/1", demote, status=409),
        app.delete("/api/users/1", status=409),
    ):
        assert_error(response, 409, "CONFLICT")
        assert response.json["details"] == {"reason": "last admin"}
    assert app.get("/api/users/1").json == me  # nothing changed
    # With a second admin, either may go; then that one is the last.
    bob, bob_token = users["bob"]
    promote = {"email": bob["email"], "firstName": "", "lastName": "", "role": "admin"}
    app.put_json(f"/api/users/{bob['id']}", promote, status=200)
    app.put_json("/api/users/1", demote, status=200)
    gone = app.delete(f"/api/users/{bob['id']}", extra_environ=bob_token, status=409)
    assert gone.json["details"] == {"reason": "last admin"}


# -- changing a password ----------------------------------------------------------


def _password_change(user, password, current=None):
    body = {
        "email": user["email"],
        "firstName": "",
        "lastName": "",
        "password": password,
    }
    if current is not None:
        body["currentPassword"] = current
    return body


def test_changing_your_own_password_needs_the_current_one(anon, users):
    ada, token = users["ada"]
    path = f"/api/users/{ada['id']}"
    for current in (None, "not-her-password"):
        body = _password_change(ada, "a-new-password", current)
        refused = anon.put_json(path, body, extra_environ=token, status=403)
        assert_error(refused, 403, "FORBIDDEN")
    assert anon.get(path, extra_environ=token).json == ada  # nothing changed
    bearer(anon, ADA["email"], ADA["password"])  # the old password still works
    body = _password_change(ada, "a-new-password", ADA["password"])
    anon.put_json(path, body, extra_environ=token, status=200)
    bearer(anon, ADA["email"], "a-new-password")


def test_a_wrong_current_password_counts_as_a_failed_login(make_app, users):
    anon = make_app(anonymous=True, login_max_failures=2)
    ada, token = users["ada"]
    body = _password_change(ada, "a-new-password", "not-her-password")
    for _ in range(2):
        anon.put_json(f"/api/users/{ada['id']}", body, extra_environ=token, status=403)
    right = {"email": ADA["email"], "password": ADA["password"]}
    limited = anon.post_json("/api/login", right, status=429)
    assert_error(limited, 429, "RATE_LIMITED")


def test_a_password_change_ends_the_users_other_logins(anon, users):
    ada, token = users["ada"]
    stolen = bearer(anon, ADA["email"], ADA["password"])  # another login of hers
    anon.get("/api/users", extra_environ=stolen, status=200)
    body = _password_change(ada, "a-new-password", ADA["password"])
    anon.put_json(f"/api/users/{ada['id']}", body, extra_environ=token, status=200)
    refused = anon.get("/api/users", extra_environ=stolen, status=401)
    assert_error(refused, 401, "UNAUTHENTICATED")
    anon.get("/api/users", extra_environ=token, status=200)  # the caller's stays


def test_an_admin_changes_a_password_without_it_and_ends_every_login(app, anon, users):
    bob, bob_token = users["bob"]
    key = app.post_json("/api/keys", {"name": "job", "userId": bob["id"]}).json["key"]
    app.put_json(f"/api/users/{bob['id']}", _password_change(bob, "a-new-password"))
    app.get("/api/users", extra_environ=bob_token, status=401)
    # API keys stay until revoked.
    anon.get("/api/users", headers={"X-API-Key": key}, status=200)
    bearer(app, BOB["email"], "a-new-password")


# -- the first admin ---------------------------------------------------------------


def test_without_configured_credentials_the_first_admin_gets_a_password_file(
    tmp_path, database_url, clock, caplog
):
    config = Config(
        database_url=database_url,
        secret_key=b"k",
        password_hash=TEST_AUTH["password_hash"],
        data_dir=f"{tmp_path}/data",  # REFAPI_DATA_DIR, apart from the database
    )
    with caplog.at_level(logging.WARNING, logger="refapi"):
        service = create_app(config, clock=clock)
    try:
        path = tmp_path / "data" / "admin-password.txt"
        email, password, database = path.read_text().splitlines()
        assert email == "admin@localhost"
        assert database == f"database: {shown_url(database_url)}"
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert str(path) in caplog.text and password not in caplog.text
        app = webtest.TestApp(service)
        login = app.post_json("/api/login", {"email": email, "password": password})
        assert login.json["user"]["role"] == "admin"
        # A second start makes no second admin, and leaves the file alone.
        create_app(config, store=service.store, clock=clock)
        assert path.read_text().splitlines()[:2] == [email, password]
    finally:
        service.close()


@pytest.mark.parametrize(
    ("configured", "taken"),
    [
        ({"admin_email": ADA["email"], "admin_password": "admin-password"}, ADA),
        ({}, {"email": "admin@localhost", "password": "x"}),
    ],
    ids=["configured-email-is-a-user", "admin-localhost-is-a-user"],
)
def test_a_start_that_cannot_make_an_admin_says_so_and_how_to_fix_it(
    tmp_path, database_url, store, clock, caplog, configured, taken
):
    store.create_user(taken["email"], "!", "", "", "user", 1_795_000_000.0)
    config = Config(
        database_url=database_url,
        secret_key=b"k",
        password_hash=TEST_AUTH["password_hash"],
        data_dir=str(tmp_path),  # not the working folder's data/
        **configured,
    )
    with caplog.at_level(logging.WARNING, logger="refapi"):
        create_app(config, store=store, clock=clock)
    assert not store.has_admin()
    [error] = [r for r in caplog.records if r.levelno == logging.ERROR]
    message = error.getMessage()
    assert taken["email"] in message and "REFAPI_ADMIN_EMAIL" in message
