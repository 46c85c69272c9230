"""The order of checks: when a request is wrong in two ways, which answer wins.

Rate limit (429), then routing (404, 405), then what the request accepts (406: the
representation or the API version), then the body (413, 415, 400 INVALID_JSON,
400 VALIDATION_ERROR of the body), then the path parameters (400 VALIDATION_ERROR
on ``id``), then the endpoint's own rule (query parameters, 404 for an unknown
record, 412, 422...). Each case below is wrong in two ways and names the winner.
"""

from __future__ import annotations

import pytest

from tests.helpers import assert_error

V2 = "application/vnd.refapi+json;version=2"
JSON = "application/json"
BIG = b'{"title": "' + b"x" * 2000 + b'"}'


@pytest.fixture
def article_app(make_app):
    app = make_app(max_body_bytes=1000)
    app.post_json("/v1/articles", {"title": "A"}, status=201)
    return app


# (method, path, Accept, Content-Type, body, status, code)
PAIRS = [
    pytest.param("GET", "/nope", V2, None, b"", 404, "NOT_FOUND",
                 id="404-before-406-version"),
    pytest.param("GET", "/nope", "text/html", None, b"", 404, "NOT_FOUND",
                 id="404-before-406"),
    pytest.param("POST", "/nope/x", "text/html", "text/plain", b"{", 404, "NOT_FOUND",
                 id="404-before-406-415"),
    pytest.param("POST", "/healthz", V2, None, b"", 405, "METHOD_NOT_ALLOWED",
                 id="405-before-406-version"),
    pytest.param("DELETE", "/v1/todos/1", "text/html", None, b"", 405,
                 "METHOD_NOT_ALLOWED", id="405-before-406"),
    pytest.param("PUT", "/v1/articles/0", JSON, "text/plain", BIG, 405,
                 "METHOD_NOT_ALLOWED", id="405-before-413-415-400"),
    pytest.param("GET", "/v1/todos/abc", "text/html", None, b"", 406, "NOT_ACCEPTABLE",
                 id="406-before-path-id"),
    pytest.param("GET", "/v1/todos/0", V2, None, b"", 406, "NOT_ACCEPTABLE",
                 id="406-version-before-path-id"),
    pytest.param("PATCH", "/v1/articles/abc", "text/html", "text/plain", b"{", 406,
                 "NOT_ACCEPTABLE", id="406-before-415"),
    pytest.param("POST", "/v1/articles", "text/csv", JSON, BIG, 406, "NOT_ACCEPTABLE",
                 id="406-before-413"),
    pytest.param("PATCH", "/v1/articles/1", V2, JSON, b"{", 406, "NOT_ACCEPTABLE",
                 id="406-version-before-400"),
    pytest.param("PATCH", "/v1/articles/abc", JSON, JSON, BIG, 413, "PAYLOAD_TOO_LARGE",
                 id="413-before-path-id"),
    pytest.param("PATCH", "/v1/articles/abc", JSON, "text/plain", b"{", 415,
                 "UNSUPPORTED_MEDIA_TYPE", id="415-before-path-id"),
    pytest.param("PATCH", "/v1/articles/0", JSON, JSON, b"{", 400, "INVALID_JSON",
                 id="invalid-json-before-path-id"),
    pytest.param("DELETE", "/v1/articles/abc", "text/html", None, b"", 400,
                 "VALIDATION_ERROR", id="bodiless-path-id-not-406"),
    pytest.param("PATCH", "/v1/articles/99", JSON, JSON, b'{"title": 5}', 400,
                 "VALIDATION_ERROR", id="body-400-before-404"),
    pytest.param("GET", "/v1/todos/201", "text/csv", None, b"", 404, "NOT_FOUND",
                 id="negotiated-then-404"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("method", "path", "accept", "content_type", "body", "status", "code"), PAIRS
)
def test_the_first_failing_check_answers(
    article_app, method, path, accept, content_type, body, status, code
):
    before = article_app.get("/v1/articles").json
    headers = {"Accept": accept}
    if content_type:
        headers["Content-Type"] = content_type
    response = article_app.request(
        path, method=method, headers=headers, body=body, expect_errors=True
    )
    assert_error(response, status, code)
    assert article_app.get("/v1/articles").json == before


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        pytest.param(b'{"title": 5}', ["/title"], id="body-before-path-id"),
        pytest.param(b'{"title": "ok"}', ["id"], id="then-path-id"),
    ],
)
def test_the_body_is_validated_before_the_path_id(article_app, body, fields):
    response = article_app.request(
        "/v1/articles/0",
        method="PATCH",
        body=body,
        headers={"Content-Type": JSON},
        expect_errors=True,
    )
    assert_error(response, 400, "VALIDATION_ERROR")
    assert [error["field"] for error in response.json["details"]["errors"]] == fields


def test_the_path_id_is_checked_before_query_parameters(app):
    # Nothing here takes both yet; a collection's limit is the endpoint's rule.
    response = app.get("/v1/items?limit=0", status=400)
    assert response.json["details"]["errors"][0]["field"] == "limit"
    response = app.get("/v1/todos/0?limit=0", status=400)
    assert response.json["details"]["errors"][0]["field"] == "id"


@pytest.mark.parametrize(
    ("method", "path", "accept"),
    [
        ("GET", "/nope", "text/html"),
        ("PUT", "/v1/todos/1", V2),
        ("GET", "/v1/todos/abc", "text/html"),
    ],
    ids=["429-before-404", "429-before-405", "429-before-406"],
)
def test_the_rate_limit_comes_first(make_app, method, path, accept):
    app = make_app(rate_limit_capacity=1)
    app.get("/v1/todos/1", status=200)
    response = app.request(
        path, method=method, headers={"Accept": accept}, expect_errors=True
    )
    assert_error(response, 429, "RATE_LIMITED")
