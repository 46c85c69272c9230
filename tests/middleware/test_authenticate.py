"""Authenticate (middleware/authenticate.py): a credential present but unusable is
401, never anonymous, and costs its address; alone, it names the principal and
sets the caller for the layers above it."""

from __future__ import annotations

import pytest

from refapi.middleware import (
    Authenticate,
)
from refapi.web.auth import SESSION_COOKIE, request_cookie
from refapi.web.environ import BUCKET_KEY
from tests.helpers import assert_error
from tests.middleware.alone import (
    ADDRESS,
    bare,
    client,
    limit,
)

# -- a credential present but unusable is 401, never anonymous ----------------------

INVALID_REQUEST = 'Bearer realm="refapi", error="invalid_request"'


@pytest.fixture
def credentials(app, anon) -> dict[str, str]:
    """The admin's Bearer token and API key, and another user's API key."""
    other = anon.post_json(
        "/api/users", {"email": "ana@example.com", "password": "ana-password"}
    ).json
    return {
        "token": app.extra_environ["HTTP_AUTHORIZATION"].removeprefix("Bearer "),
        "admin key": app.post_json("/api/keys", {"name": "admin's"}).json["key"],
        "other key": app.post_json(
            "/api/keys", {"name": "ana's", "userId": other["id"]}
        ).json["key"],
    }


def environ_of(credentials, authorization=None, api_key=None) -> dict[str, str]:
    """``HTTP_AUTHORIZATION`` and ``HTTP_X_API_KEY`` as given (None: not sent), with
    ``{token}``, ``{admin key}`` and ``{other key}`` filled in."""
    sent = {"HTTP_AUTHORIZATION": authorization, "HTTP_X_API_KEY": api_key}
    return {
        name: value.format_map(credentials)
        for name, value in sent.items()
        if value is not None
    }


# (Authorization, X-API-Key): not one readable credential.
UNUSABLE = [
    pytest.param("Bearer\t{token}", None, id="tab-after-bearer"),
    pytest.param("Bearer", None, id="bearer-alone"),
    pytest.param("Bearer ", None, id="bearer-space-no-token"),
    pytest.param("Bearer {token} {token}", None, id="two-tokens"),
    pytest.param("Bearer {token}, Bearer {token}", None, id="two-headers-joined"),
    pytest.param("Basic YWRtaW46cGFzcw==", None, id="basic"),
    pytest.param("Token abc", None, id="another-scheme"),
    pytest.param("", None, id="empty-authorization"),
    pytest.param(None, "", id="empty-api-key"),
    pytest.param(None, "   ", id="blank-api-key"),
    pytest.param("Bearer {token}", "{other key}", id="token-and-key-of-two-callers"),
]


@pytest.mark.parametrize(("authorization", "api_key"), UNUSABLE)
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/articles"),
        ("POST", "/v1/articles"),
        ("OPTIONS", "/v1/articles"),
        ("OPTIONS", "/api/demo.php"),  # a path of actions
    ],
    ids=["public", "protected", "options", "options-of-actions"],
)
def test_an_unusable_credential_is_401_on_every_route(
    anon, credentials, authorization, api_key, method, path
):
    environ = environ_of(credentials, authorization, api_key)
    if method == "GET":
        response = anon.get(path, extra_environ=environ, status=401)
    elif method == "OPTIONS":  # not a CORS preflight: no Origin
        response = anon.options(path, extra_environ=environ, status=401)
    else:
        response = anon.post_json(
            path, {"title": "x"}, extra_environ=environ, status=401
        )
    assert_error(response, 401, "UNAUTHENTICATED")
    # RFC 6750 section 3.1: the request is not one readable credential.
    assert response.headers["WWW-Authenticate"] == INVALID_REQUEST
    assert anon.get("/v1/articles").json["data"] == []  # nothing was written


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/v1/todos/1", 200), ("/api/users", 401), ("/api/session", 401),
        ("/ui/", 200), ("/lab/cookies", 200), ("/lab/anything", 200),
        ("/lab/get", 200), ("/lab/cache", 200),
    ],
)  # fmt: skip
def test_a_cookie_that_is_not_utf8_is_read_never_a_500(make_app, path, status):
    # Werkzeug's WSGI parser decodes the header strictly: every route was a 500.
    app = make_app(anonymous=True)
    cookie = "a=\xff; refapi_session=\xfe"  # the header's bytes, as PEP 3333 hands them
    response = app.get(path, headers={"Cookie": cookie}, status=status)
    if path == "/lab/cookies":
        assert response.json == {"cookies": {"a": "\ufffd"}}
    if path == "/api/users":  # a session cookie that is no session's: cleared
        assert "refapi_session=;" in response.headers["Set-Cookie"]


@pytest.mark.parametrize(
    ("header", "value"),
    [
        (None, None), ("", None), ("a=1", None), ("refapi_session=s1", "s1"),
        ("a=1; refapi_session=s1; refapi_session=s2", "s1"),
        ("refapi_session=", ""),
    ],
)  # fmt: skip
def test_request_cookie_is_the_first_of_its_name_or_none(header, value):
    environ = {} if header is None else {"HTTP_COOKIE": header}
    assert request_cookie(environ, SESSION_COOKIE) == value


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("POST", "/oauth/token", 401, "invalid_client"),
        ("GET", "/lab/basic-auth/u/p", 401, "UNAUTHENTICATED"),
        ("GET", "/lab/hidden-basic-auth/u/p", 404, "NOT_FOUND"),
        ("GET", "/lab/digest-auth/auth/u/p", 401, "UNAUTHENTICATED"),
    ],
)
@pytest.mark.parametrize("sent", ["Basic \xff", "Basic \xc3\xa9"])
def test_basic_credentials_that_are_not_ascii_are_refused_never_a_500(
    make_app, method, path, status, code, sent
):
    # Werkzeug's Basic decoding raises on them: each route was a 500.
    app = make_app(anonymous=True)
    form = {"grant_type": "client_credentials"} if method == "POST" else None
    response = app.request(
        path, method=method, headers={"Authorization": sent}, expect_errors=True,
        **({"POST": form} if form else {}),
    )  # fmt: skip
    assert response.status_int == status
    assert code in (response.json.get("code"), response.json.get("error"))


@pytest.mark.parametrize(
    ("authorization", "api_key"),
    [
        pytest.param("Bearer {token}", None, id="bearer"),
        pytest.param("bEaReR   {token}", None, id="any-case-several-spaces"),
        pytest.param(" Bearer {token}\t", None, id="surrounding-whitespace"),
        pytest.param(None, " {admin key} ", id="api-key"),
        pytest.param("Bearer {token}", "{admin key}", id="token-and-key-of-one-caller"),
    ],
)
def test_a_usable_credential_passes(anon, credentials, authorization, api_key):
    environ = environ_of(credentials, authorization, api_key)
    anon.post_json("/v1/articles", {"title": "x"}, extra_environ=environ, status=201)


def test_the_token_endpoint_is_left_its_basic_scheme(anon):
    # The handler reads it and answers in RFC 6749's words, not the middleware.
    form = {"grant_type": "client_credentials"}
    basic = {"HTTP_AUTHORIZATION": "Basic bm86c3VjaA=="}  # no:such
    response = anon.post("/oauth/token", form, extra_environ=basic, status=401)
    assert response.json["error"] == "invalid_client"
    assert response.headers["WWW-Authenticate"].startswith("Basic")


def test_a_refused_credential_is_limited_by_its_address(make_app):
    anon = make_app(anonymous=True, rate_limit_capacity=3, rate_limit_refill=0.001)
    body = {"email": "admin@example.com", "password": "admin-password"}
    login = anon.post_json("/api/login", body)
    cookie = {"HTTP_COOKIE": login.headers["Set-Cookie"].split(";")[0]}
    anon.cookiejar.clear()
    anon.get("/v1/todos/1")
    anon.get("/v1/todos/1")
    anon.get("/v1/todos/1", status=429)  # the address has spent its bucket
    # A valid session beside a refused credential buys no fresh bucket.
    for authorization in ("Bearer\tx", "Bearer not-a-token"):
        environ = {**cookie, "HTTP_AUTHORIZATION": authorization}
        anon.get("/v1/todos/1", extra_environ=environ, status=429)


def test_authenticate_alone_names_the_principal_and_sets_the_caller(
    store, clock, token
):
    app = client(Authenticate(bare, store=store, clock=clock))
    seen = app.get("/", extra_environ=token).json
    assert seen["principal"] == seen[BUCKET_KEY] == "user:1"
    assert seen["rejected"] is None
    forged = app.get("/", headers={"Authorization": "Bearer forged"}).json
    assert forged["principal"] is None
    assert forged["rejected"] == "The Bearer token is not valid, or has expired."
    assert forged[BUCKET_KEY] == "addr:" + ADDRESS  # a bad credential buys no bucket
    assert app.get("/").json[BUCKET_KEY] == "addr:" + ADDRESS


def test_authenticate_outside_rate_limit_gives_it_the_principals_bucket(
    store, clock, token
):
    app = client(
        Authenticate(limit(bare, store, clock, capacity=2), store=store, clock=clock)
    )
    app.get("/", extra_environ=token)
    app.get("/", extra_environ=token)
    app.get("/", extra_environ=token, status=429)
    assert app.get("/").headers["RateLimit"] == '"default";r=1;t=0'  # the address
