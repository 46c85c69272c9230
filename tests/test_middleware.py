"""The middleware stack: request id, security headers, CORS, errors, versioning.

Content negotiation, HEAD and plain OPTIONS are covered here too, since they apply
to every route alike.
"""

from __future__ import annotations

import logging
import re

import pytest
import webtest

from refapi import create_app
from tests.helpers import assert_error, varies_on

ALLOWED_HEADERS = {
    "authorization", "content-type", "idempotency-key", "x-request-id",
    "x-api-key", "x-csrf-token", "if-match", "if-none-match",
}  # fmt: skip
EXPOSED = {
    "X-Next-Cursor", "Retry-After", "X-Request-Id", "ETag", "Location", "Link",
    "RateLimit", "RateLimit-Policy", "Idempotent-Replayed", "WWW-Authenticate",
}  # fmt: skip

# (method, path, headers, status): one answer of each kind the stack produces.
ANSWERS = [
    pytest.param("GET", "/v1/todos/1", {}, 200, id="200"),
    pytest.param("GET", "/v1/todos/1", {"If-None-Match": "*"}, 304, id="304"),
    pytest.param("OPTIONS", "/v1/todos/1", {}, 204, id="options-204"),
    pytest.param("GET", "/v1/todos/0", {}, 400, id="400"),
    pytest.param("GET", "/nope", {}, 404, id="404"),
    pytest.param("DELETE", "/v1/todos/1", {}, 405, id="405"),
    pytest.param("GET", "/v1/todos/1", {"Accept": "text/html"}, 406, id="406"),
    pytest.param(
        "OPTIONS",
        "/v1/todos/1",
        {"Origin": "https://x.example", "Access-Control-Request-Method": "GET"},
        204,
        id="preflight",
    ),
]


def call(app, method, path, headers, **kwargs):
    return app.request(
        path, method=method, headers=headers, expect_errors=True, **kwargs
    )


@pytest.mark.parametrize(
    "request_id", ["abc", "A.b_c-9", "x" * 128, "0"], ids=["word", "punct", "128", "1"]
)
@pytest.mark.parametrize(("method", "path", "headers", "status"), ANSWERS)
def test_valid_request_id_is_kept(app, request_id, method, path, headers, status):
    response = call(app, method, path, {**headers, "X-Request-Id": request_id})
    assert response.status_int == status
    assert response.headers["X-Request-Id"] == request_id


@pytest.mark.parametrize(
    "request_id",
    ["", "x" * 129, "has space", "semi;colon", "a/b", "caf\u00e9"],
    ids=["empty", "129-chars", "space", "semicolon", "slash", "non-ascii"],
)
@pytest.mark.parametrize(("method", "path", "headers", "status"), ANSWERS[:6])
def test_invalid_request_id_is_replaced(app, request_id, method, path, headers, status):
    response = call(app, method, path, {**headers, "X-Request-Id": request_id})
    assert response.status_int == status
    generated = response.headers["X-Request-Id"]
    assert generated != request_id
    assert re.fullmatch(r"[A-Za-z0-9._-]{1,128}", generated)


def test_generated_request_ids_differ(app):
    ids = {app.get("/v1/todos/1").headers["X-Request-Id"] for _ in range(3)}
    assert len(ids) == 3


@pytest.mark.parametrize(("method", "path", "headers", "status"), ANSWERS)
def test_every_answer_has_nosniff(app, method, path, headers, status):
    response = call(app, method, path, headers)
    assert response.status_int == status
    assert response.headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize(("method", "path", "headers", "status"), ANSWERS[:-1])
def test_every_limited_answer_has_ratelimit_fields(app, method, path, headers, status):
    # docs/rate-limits.md: every response but /healthz and preflight carries them.
    response = call(app, method, path, headers)
    assert response.status_int == status
    assert response.headers["RateLimit-Policy"] == '"default";q=100;w=10'
    assert re.fullmatch(r'"default";r=\d+;t=0', response.headers["RateLimit"])


PREFLIGHT = {
    "Access-Control-Request-Method": "PATCH",
    "Access-Control-Request-Headers": "content-type, if-match",
}


@pytest.mark.parametrize(
    ("origins", "origin", "allow_origin", "vary"),
    [
        pytest.param(("*",), "https://x.example", "*", False, id="any-origin"),
        pytest.param(
            ("https://a.example",), "https://a.example", "https://a.example", True,
            id="listed-origin",
        ),
    ],
)  # fmt: skip
def test_preflight(make_app, origins, origin, allow_origin, vary):
    app = make_app(cors_origins=origins)
    response = app.options(
        "/v1/articles/1", headers={**PREFLIGHT, "Origin": origin}, status=204
    )
    assert response.body == b""
    assert response.headers["Access-Control-Allow-Origin"] == allow_origin
    assert ("origin" in varies_on(response)) is vary
    methods = set(response.headers["Access-Control-Allow-Methods"].split(", "))
    assert methods >= {"GET", "POST", "PATCH", "DELETE"}
    allowed = response.headers["Access-Control-Allow-Headers"].lower().split(", ")
    assert set(allowed) >= ALLOWED_HEADERS
    assert response.headers["Access-Control-Max-Age"] == "600"
    assert "Access-Control-Allow-Credentials" not in response.headers


def test_preflight_from_an_unlisted_origin_grants_nothing(make_app):
    app = make_app(cors_origins=("https://a.example",))
    headers = {**PREFLIGHT, "Origin": "https://evil.example"}
    response = app.options("/v1/articles/1", headers=headers, status=204)
    assert "Access-Control-Allow-Origin" not in response.headers
    assert "Access-Control-Allow-Methods" not in response.headers
    assert "origin" in varies_on(response)


CORS_CASES = [
    pytest.param(("*",), "https://x.example", "*", id="any"),
    pytest.param(("https://a.example",), "https://a.example", "https://a.example",
                 id="listed"),
]  # fmt: skip


@pytest.mark.parametrize(("origins", "origin", "allow_origin"), CORS_CASES)
@pytest.mark.parametrize(
    ("path", "status"),
    [("/v1/todos/1", 200), ("/nope", 404), ("/v1/items?limit=0", 400)],
    ids=["200", "404", "400"],
)
def test_cors_headers_on_answers(make_app, origins, origin, allow_origin, path, status):
    app = make_app(cors_origins=origins)
    response = app.get(path, headers={"Origin": origin}, status=status)
    assert response.headers["Access-Control-Allow-Origin"] == allow_origin
    exposed = response.headers["Access-Control-Expose-Headers"].split(", ")
    assert set(exposed) >= EXPOSED
    assert ("origin" in varies_on(response)) is (allow_origin != "*")


@pytest.mark.parametrize(
    "headers", [{"Origin": "https://evil.example"}, {}], ids=["unlisted", "no-origin"]
)
def test_origin_list_varies_on_origin_without_granting(make_app, headers):
    app = make_app(cors_origins=("https://a.example",))
    response = app.get("/v1/todos/1", headers=headers, status=200)
    assert "origin" in varies_on(response)
    assert "Access-Control-Allow-Origin" not in response.headers
    assert "Access-Control-Expose-Headers" not in response.headers


@pytest.mark.parametrize(
    "path",
    ["/nope", "/v1/articles/", "/v1", "/v2/articles", "/articles", "/v1//todos/1"],
)
def test_unknown_path_is_404_error_object(app, path):
    assert_error(app.get(path, status=404), 404, "NOT_FOUND")


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/v1/articles", {"GET", "HEAD", "POST"}),
        ("DELETE", "/v1/articles", {"GET", "HEAD", "POST"}),
        ("PUT", "/v1/articles/1", {"GET", "HEAD", "PATCH", "DELETE"}),
        ("POST", "/v1/todos/1", {"GET", "HEAD"}),
        ("POST", "/v1/items", {"GET", "HEAD"}),
        ("POST", "/healthz", {"GET", "HEAD"}),
        ("DELETE", "/v1/payments/pay_1", {"GET", "HEAD"}),
    ],
)
def test_wrong_method_is_405_with_allow(app, method, path, allowed):
    # OPTIONS is answered on every routed path, so a 405's Allow lists it too.
    response = call(app, method, path, {})
    assert_error(response, 405, "METHOD_NOT_ALLOWED")
    assert sorted(response.headers["Allow"].split(", ")) == sorted(
        {*allowed, "OPTIONS"}
    )
    assert response.json["details"]["allowed"] == sorted({*allowed, "OPTIONS"})
    options = app.options(path, status=204)
    assert options.headers["Allow"] == response.headers["Allow"]


class BrokenTodos:
    """The test's store, but reading a todo is a bug."""

    def __init__(self, store) -> None:
        self.store = store

    def __getattr__(self, name: str):
        return getattr(self.store, name)

    def get_todo(self, todo_id):
        raise RuntimeError("secret internals at /srv/refapi")


def test_uncaught_exception_is_500_without_traceback(store, config, clock, caplog):
    app = webtest.TestApp(create_app(config, store=BrokenTodos(store), clock=clock))
    with caplog.at_level(logging.ERROR, logger="refapi"):
        response = app.get(
            "/v1/todos/1", headers={"X-Request-Id": "trace-500"}, status=500
        )
    assert_error(response, 500, "INTERNAL_ERROR")
    assert response.headers["X-Request-Id"] == "trace-500"
    assert "secret" not in response.text and "Traceback" not in response.text
    [record] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "trace-500" in record.getMessage()
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError


def test_storage_down_is_503_unavailable(down_store, config, clock):
    app = webtest.TestApp(create_app(config, store=down_store, clock=clock))
    response = app.get(
        "/v1/todos/1", headers={"Origin": "https://x.example"}, status=503
    )
    assert_error(response, 503, "UNAVAILABLE")
    assert response.headers["Access-Control-Allow-Origin"] == "*"


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
