"""Broken framing against a real gunicorn: a malformed chunked body, or a body shorter
than its Content-Length (the client half-closes), is 400 MALFORMED_REQUEST, stores
nothing, and the worker goes on serving.

Only a real server shows this: it is gunicorn's ``wsgi.input`` that raises on a bad
chunk (``gunicorn.http.errors``) and that returns fewer bytes than asked when the
client stops sending early.
"""

from __future__ import annotations

import json

import pytest

from tests.e2e.harness import exchange, raw_request

pytestmark = pytest.mark.e2e

JSON = {"Content-Type": "application/json"}
CHUNKED = {**JSON, "Transfer-Encoding": "chunked"}
ARTICLE = b'{"title": "framed"}'


BROKEN = [
    pytest.param(CHUNKED, b"zz\r\n" + ARTICLE + b"\r\n0\r\n\r\n", False,
                 id="chunk-size-not-hex"),
    pytest.param(CHUNKED, b"%x\r\n%sXX0\r\n\r\n" % (len(ARTICLE), ARTICLE), False,
                 id="chunk-without-crlf"),
    pytest.param(CHUNKED, b"%x;a=\x01\r\n%s\r\n0\r\n\r\n" % (len(ARTICLE), ARTICLE),
                 False, id="bad-chunk-extension"),
    pytest.param(CHUNKED, b"40\r\n" + ARTICLE, True, id="chunk-cut-short"),
    pytest.param(CHUNKED, b"%x\r\n%s\r\n" % (len(ARTICLE), ARTICLE), True,
                 id="no-last-chunk"),
    pytest.param({**JSON, "Content-Length": "100"}, ARTICLE, True,
                 id="shorter-than-content-length"),
]  # fmt: skip


@pytest.mark.parametrize(("headers", "body", "half_close"), BROKEN)
def test_broken_framing_is_400_stores_nothing_and_the_worker_serves_on(
    gunicorn, headers, body, half_close
):
    server = gunicorn(workers=1)
    request = raw_request("POST", "/v1/articles", headers) + body
    response = exchange(server, request, half_close)
    assert response.status == 400
    assert response.getheader("Content-Type") == "application/json; charset=utf-8"
    error = json.loads(response.body)
    assert set(error) == {"code", "message", "details"}
    assert error["code"] == "MALFORMED_REQUEST"
    # The same worker answers the next connection, and nothing was stored.
    listed = exchange(server, raw_request("GET", "/v1/articles"))
    assert listed.status == 200 and json.loads(listed.body)["data"] == []
    assert exchange(server, raw_request("GET", "/healthz")).status == 200
    assert server.log_failures() == []


def test_a_complete_body_with_half_close_is_stored(gunicorn):
    server = gunicorn(workers=1)
    request = raw_request("POST", "/v1/articles", JSON, ARTICLE)
    response = exchange(server, request, half_close=True)
    assert response.status == 201
    assert json.loads(response.body)["title"] == "framed"
