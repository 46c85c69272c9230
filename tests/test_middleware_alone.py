"""Each middleware on its own around a bare WSGI app, and in another order.

A host may take any one layer of the stack (docs/embedding.md, "The middleware on
their own"): each must work without the others around it, and say what it reads from
the environ when they are there. Each test wraps ``bare`` (a few lines answering
``200``) in one layer, or in two in an order ``app.py`` does not use, and drives it
through WebTest, which also lints the WSGI exchange.
"""

from __future__ import annotations

import json
import logging
import re

import pytest
import webtest

from refapi.errors import NotFound
from refapi.middleware import (
    Authenticate,
    Cors,
    Errors,
    RateLimit,
    RequestId,
    TrustedProxy,
    Versioning,
)
from refapi.web.environ import AUTH, BUCKET_KEY
from refapi.web.rate_limits import Policy, RateLimits
from tests.conftest import ADMIN, bearer
from tests.helpers import assert_error

SEEN = ("PATH_INFO", "SCRIPT_NAME", "REMOTE_ADDR", "wsgi.url_scheme", BUCKET_KEY)
ORIGIN = "https://app.example"
ADDRESS = "192.0.2.1"
PREFLIGHT = {"Origin": ORIGIN, "Access-Control-Request-Method": "POST"}


def bare(environ, start_response):
    """A host's own app: 200, and what it was given of the environ, as JSON."""
    auth = environ.get(AUTH)
    seen = {key: environ.get(key) for key in SEEN}
    seen["principal"] = auth.principal.caller if auth and auth.principal else None
    seen["rejected"] = auth.rejected if auth else None
    body = json.dumps(seen).encode()
    start_response(
        "200 OK",
        [("Content-Type", "application/json"), ("Content-Length", str(len(body)))],
    )
    return [body]


def client(app) -> webtest.TestApp:
    """``app`` in WebTest, every request from one client address."""
    return webtest.TestApp(app, extra_environ={"REMOTE_ADDR": ADDRESS})


def raising(error: Exception):
    """A bare app that raises ``error``."""

    def app(environ, start_response):
        raise error

    return app


def limit(app, store, clock, **options):
    """``RateLimit`` around ``app`` on the test's store: 3 tokens, one every 2 s."""
    limits = RateLimits(
        take=store.buckets.take,
        capacity=options.pop("capacity", 3),
        refill=options.pop("refill", 0.5),
        clock=clock,
        policies=options.pop("policies", ()),
    )
    return RateLimit(app, limits=limits, **options)


# RequestId


def test_request_id_alone_keeps_a_valid_id_and_makes_one_otherwise():
    app = client(RequestId(bare))
    kept = app.get("/", headers={"X-Request-Id": "trace-1.a_b"})
    assert kept.headers["X-Request-Id"] == "trace-1.a_b"
    assert kept.headers["X-Content-Type-Options"] == "nosniff"
    made = app.get("/", headers={"X-Request-Id": "not valid; at all"})
    assert made.headers["X-Request-Id"] != "not valid; at all"
    assert re.fullmatch(r"[A-Za-z0-9._-]{1,128}", made.headers["X-Request-Id"])
    assert made.json["PATH_INFO"] == "/"


def test_request_id_inside_cors_still_marks_the_answer():
    app = client(Cors(RequestId(bare), origins=(ORIGIN,)))
    answer = app.get("/", headers={"Origin": ORIGIN, "X-Request-Id": "r1"})
    assert answer.headers["X-Request-Id"] == "r1"
    assert answer.headers["Access-Control-Allow-Origin"] == ORIGIN
    assert answer.headers["Vary"] == "Origin"


# Cors


def test_cors_alone_answers_a_preflight_without_calling_the_app():
    def never(environ, start_response):
        raise AssertionError("a preflight reached the app")

    app = client(Cors(never, origins=("*",)))
    answer = app.options("/anything", headers=PREFLIGHT)
    assert answer.status_int == 204
    assert answer.headers["Access-Control-Allow-Origin"] == "*"
    assert "POST" in answer.headers["Access-Control-Allow-Methods"]
    assert "Authorization" in answer.headers["Access-Control-Allow-Headers"]
    assert answer.headers["Access-Control-Max-Age"] == "600"


@pytest.mark.parametrize(
    ("origins", "allowed", "vary"),
    [
        pytest.param(("*",), "*", None, id="any-origin"),
        pytest.param((ORIGIN,), ORIGIN, "Origin", id="listed-origin"),
    ],
)
def test_cors_alone_marks_an_answer_to_another_origin(origins, allowed, vary):
    app = client(Cors(bare, origins=origins))
    answer = app.get("/", headers={"Origin": ORIGIN})
    assert answer.headers["Access-Control-Allow-Origin"] == allowed
    assert "X-Request-Id" in answer.headers["Access-Control-Expose-Headers"]
    assert answer.headers.get("Vary") == vary
    plain = app.get("/")  # no Origin: only Vary, when the answer depends on it
    assert "Access-Control-Allow-Origin" not in plain.headers
    assert plain.headers.get("Vary") == vary


def test_cors_outside_errors_marks_an_error_answer():
    app = client(Cors(Errors(raising(NotFound())), origins=(ORIGIN,)))
    answer = app.get("/", headers={"Origin": ORIGIN}, status=404)
    assert_error(answer, 404, "NOT_FOUND")
    assert answer.headers["Access-Control-Allow-Origin"] == ORIGIN


def test_cors_inside_errors_marks_an_error_only_if_the_list_began_outside():
    inside = client(Errors(Cors(raising(NotFound()), origins=(ORIGIN,))))
    lost = inside.get("/", headers={"Origin": ORIGIN}, status=404)
    assert "Access-Control-Allow-Origin" not in lost.headers  # lost with the raise
    outside = client(RequestId(inside.app))
    kept = outside.get("/", headers={"Origin": ORIGIN}, status=404)
    assert kept.headers["Access-Control-Allow-Origin"] == ORIGIN
    assert kept.headers["X-Request-Id"]


# Versioning


V1 = "application/vnd.refapi+json;version=1"


def test_versioning_alone_routes_the_vendor_type_and_marks_the_lifecycle():
    app = client(
        Versioning(
            bare,
            prefixes=frozenset({"/articles"}),
            deprecation="@1767225600",
            sunset="Fri, 01 Jan 2027 00:00:00 GMT",
        )
    )
    routed = app.get("/articles/1", headers={"Accept": V1})
    assert routed.json["PATH_INFO"] == "/v1/articles/1"
    assert routed.headers["Deprecation"] == "@1767225600"
    assert routed.headers["Sunset"] == "Fri, 01 Jan 2027 00:00:00 GMT"
    as_sent = app.get("/articles/1")  # no vendor type: left as it is
    assert as_sent.json["PATH_INFO"] == "/articles/1"
    assert "Deprecation" not in as_sent.headers
    unversioned = app.get("/healthz", headers={"Accept": V1})
    assert unversioned.json["PATH_INFO"] == "/healthz"
    assert "Deprecation" not in unversioned.headers


def test_versioning_outside_request_id_adds_to_the_same_answer():
    app = client(Versioning(RequestId(bare), prefixes=frozenset(), deprecation="@1"))
    answer = app.get("/v1/todos/1", headers={"X-Request-Id": "r2"})
    assert answer.headers["Deprecation"] == "@1"
    assert answer.headers["X-Request-Id"] == "r2"


# Errors


def test_errors_alone_renders_an_api_error_and_hides_a_crash(caplog):
    assert_error(
        client(Errors(raising(NotFound()))).get("/", status=404),
        404,
        "NOT_FOUND",
    )
    with caplog.at_level(logging.ERROR, logger="refapi"):
        crash = client(Errors(raising(RuntimeError("secret detail"))))
        answer = crash.get("/", status=500)
    assert_error(answer, 500, "INTERNAL_ERROR")
    assert "secret detail" not in answer.text
    assert "request_id=None" in caplog.text  # no RequestId layer: no id to log


def test_errors_outside_request_id_logs_the_requests_id(caplog):
    app = client(Errors(RequestId(raising(RuntimeError("boom")))))
    with caplog.at_level(logging.ERROR, logger="refapi"):
        app.get("/", headers={"X-Request-Id": "r3"}, status=500)
    assert "request_id=r3" in caplog.text


# TrustedProxy


FORWARDED = {
    "X-Forwarded-For": "203.0.113.9",
    "X-Forwarded-Proto": "https",
    "X-Forwarded-Prefix": "/api",
}


def test_trusted_proxy_alone_applies_the_proxys_headers():
    app = client(TrustedProxy(bare, hops=1))
    seen = app.get("/", headers=FORWARDED).json
    assert seen["REMOTE_ADDR"] == "203.0.113.9"
    assert seen["wsgi.url_scheme"] == "https"
    assert seen["SCRIPT_NAME"] == "/api"
    foreign = {**FORWARDED, "X-Forwarded-Prefix": "//evil.example"}
    assert app.get("/", headers=foreign).json["SCRIPT_NAME"] == ""


def test_trusted_proxy_outside_rate_limit_limits_each_forwarded_client(store, clock):
    app = client(TrustedProxy(limit(bare, store, clock, capacity=1), hops=1))
    app.get("/", headers={"X-Forwarded-For": "203.0.113.1"})
    app.get("/", headers={"X-Forwarded-For": "203.0.113.1"}, status=429)
    app.get("/", headers={"X-Forwarded-For": "203.0.113.2"})  # its own bucket


# RateLimit


# Moves the app's clock to refill a bucket: SQLite's buckets follow it, PostgreSQL's
# the database's clock (one clock for every host), which no test can move.
@pytest.mark.sqlite_only
def test_rate_limit_alone_keys_on_the_address_and_refuses_when_empty(store, clock):
    app = client(limit(bare, store, clock))
    answers = [app.get("/") for _ in range(3)]
    assert [a.headers["RateLimit"] for a in answers] == [
        '"default";r=2;t=0',
        '"default";r=1;t=0',
        '"default";r=0;t=2',
    ]
    assert answers[0].headers["RateLimit-Policy"] == '"default";q=3;w=6'
    assert answers[0].json[BUCKET_KEY] is None  # it reads no caller it was not given
    refused = app.get("/", status=429)
    assert_error(refused, 429, "RATE_LIMITED")
    assert refused.headers["Retry-After"] == "2"
    assert refused.json["details"] == {"retry_after": 2}
    assert refused.headers["RateLimit"] == '"default";r=0;t=2'
    other = app.get("/", extra_environ={"REMOTE_ADDR": "192.0.2.77"})
    assert other.headers["RateLimit"] == '"default";r=2;t=0'
    clock.advance(2)
    assert app.get("/").headers["RateLimit"] == '"default";r=0;t=2'


def test_rate_limit_alone_passes_its_address_buckets(store, clock):
    app = client(
        limit(
            bare,
            store,
            clock,
            policies=(Policy.per("auth", 1, 60),),
            routes={("POST", "/login"): ("auth",)},
        )
    )
    passed = app.post("/login")
    assert passed.headers["RateLimit-Policy"] == '"default";q=3;w=6, "auth";q=1;w=60'
    refused = app.post("/login", status=429)
    assert refused.headers["RateLimit"] == '"default";r=2;t=0, "auth";r=0;t=60'
    assert app.get("/").headers["RateLimit"] == '"default";r=1;t=0'


def test_rate_limit_outside_request_id_adds_to_the_same_answer(store, clock):
    app = client(limit(RequestId(bare), store, clock, capacity=1))
    assert app.get("/").headers["X-Request-Id"]
    refused = app.get("/", headers={"X-Request-Id": "r4"}, status=429)
    assert refused.headers["RateLimit"] == '"default";r=0;t=2'
    # Refused before RequestId was reached: the id is not this layer's to give.
    assert "X-Request-Id" not in refused.headers


# Authenticate


@pytest.fixture
def token(make_app) -> dict[str, str]:
    """The first admin's Bearer token, from a login through the whole app."""
    return bearer(make_app(anonymous=True), ADMIN["email"], ADMIN["password"])


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


def test_rate_limit_outside_authenticate_counts_every_request_by_address(
    store, clock, token
):
    app = client(
        limit(Authenticate(bare, store=store, clock=clock), store, clock, capacity=2)
    )
    app.get("/", extra_environ=token)
    app.get("/")
    app.get("/", extra_environ=token, status=429)  # the address's bucket: empty
