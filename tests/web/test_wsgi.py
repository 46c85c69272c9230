"""The response as WSGI (web/wsgi.py): HEAD has the GET's headers and no body,
and no URL the service emits (Location, Link) starts with ``//``, which a client
reads as a scheme-relative URL naming another host (RFC 3986 section 4.2)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    "path", ["/v1/articles", "/v1/articles/1", "/v1/todos/1", "/v1/items", "/healthz"]
)
def test_head_has_the_get_headers_and_no_body(article_app, path):
    get = article_app.get(path, status=200)
    head = article_app.head(path, status=200)
    assert head.body == b""
    assert head.headers["Content-Type"] == get.headers["Content-Type"]
    assert head.headers["Content-Length"] == str(len(get.body))
    assert head.headers.get("ETag") == get.headers.get("ETag")


@pytest.mark.parametrize(
    "script_name", ["", "//", "//evil.example", "/\\evil.example", "/prod"]
)
def test_no_emitted_url_starts_with_two_slashes(app, script_name):
    environ = {"SCRIPT_NAME": script_name}
    created = app.post_json(
        "/v1/articles", {"title": "a"}, extra_environ=environ, status=201
    )
    app.post_json("/v1/articles", {"title": "b"}, status=201)
    page = app.get("/v1/articles?limit=1", extra_environ=environ, status=200)
    urls = [created.headers["Location"], page.headers["Link"].removeprefix("<")]
    for url in urls:
        assert url.startswith("/") and not url.startswith(("//", "/\\")), url
        assert "\\" not in url
