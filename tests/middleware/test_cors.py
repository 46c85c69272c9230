"""Cors (middleware/cors.py): preflights, and the CORS fields of every answer to a
listed origin, errors included; in the stack, alone, and in another order."""

from __future__ import annotations

import pytest

from refapi.errors import NotFound
from refapi.middleware import (
    Cors,
    Errors,
    RequestId,
)
from refapi.middleware.headers import response_headers
from tests.helpers import assert_error, varies_on
from tests.middleware.alone import (
    ORIGIN,
    POST_PREFLIGHT,
    bare,
    client,
    raising,
)

ALLOWED_HEADERS = {
    "authorization", "content-type", "idempotency-key", "x-request-id",
    "x-api-key", "x-csrf-token", "if-match", "if-none-match",
}  # fmt: skip


EXPOSED = {
    "X-Next-Cursor", "Retry-After", "X-Request-Id", "ETag", "Location", "Link",
    "RateLimit", "RateLimit-Policy", "Idempotent-Replayed", "WWW-Authenticate",
}  # fmt: skip


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


# -- alone, and in another order than app.py's (tests/middleware/alone.py) ----------


def test_cors_alone_answers_a_preflight_without_calling_the_app():
    def never(environ, start_response):
        raise AssertionError("a preflight reached the app")

    app = client(Cors(never, origins=("*",)))
    answer = app.options("/anything", headers=POST_PREFLIGHT)
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


def test_cors_for_any_origin_starts_the_list_so_what_is_added_below_survives_an_error():
    # Cors("*") adds nothing to a request without an Origin, yet starts the
    # headers' list where no layer outside did: what a layer below Errors added
    # (Versioning's Vary, RateLimit's fields) is not lost with an error raised there.
    def adds_then_raises(environ, start_response):
        added, _ = response_headers(environ, start_response)
        added.append(("X-Added-Below", "yes"))
        raise NotFound()

    answer = client(Cors(Errors(adds_then_raises), origins=("*",))).get("/", status=404)
    assert_error(answer, 404, "NOT_FOUND")
    assert answer.headers["X-Added-Below"] == "yes"
