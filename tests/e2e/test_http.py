"""HTTP details only a real server shows: chunked bodies, early 413, HEAD, mounting."""

from __future__ import annotations

import http.client
import json
import socket

import pytest

from tests.e2e.harness import raw_request, wait_until

pytestmark = pytest.mark.e2e


def exchange(server, raw: bytes) -> http.client.HTTPResponse:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(raw)
        response = http.client.HTTPResponse(sock, method=raw.split(b" ", 1)[0].decode())
        response.begin()
        response.body = response.read()
        return response


def chunked(path: str, body: bytes) -> bytes:
    headers = {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}
    return raw_request(
        "POST", path, headers, b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    )


def test_a_chunked_body_is_read(server):
    response = exchange(server, chunked("/v1/articles", b'{"title": "chunked"}'))
    assert response.status == 201
    assert json.loads(response.body)["title"] == "chunked"


def test_a_chunked_body_over_the_limit_is_413(gunicorn):
    server = gunicorn(workers=1, env={"REFAPI_MAX_BODY_BYTES": "64"})
    body = json.dumps({"title": "x" * 100}).encode()
    response = exchange(server, chunked("/v1/articles", body))
    assert response.status == 413
    assert json.loads(response.body)["code"] == "PAYLOAD_TOO_LARGE"


def test_a_huge_declared_body_is_refused_before_it_is_sent(server):
    # Only the headers go out: the answer must come without the 50 MB body.
    headers = {"Content-Type": "application/json", "Content-Length": "52428800"}
    response = exchange(server, raw_request("POST", "/v1/articles", headers))
    assert response.status == 413
    assert json.loads(response.body)["details"] == {"maxBytes": 1048576}


def test_head_has_the_headers_of_get_and_no_body(server):
    get = exchange(server, raw_request("GET", "/v1/todos/1"))
    head = exchange(server, raw_request("HEAD", "/v1/todos/1"))
    assert head.status == 200 and head.body == b""
    assert head.getheader("Content-Length") == get.getheader("Content-Length")
    assert head.getheader("ETag") == get.getheader("ETag")


def test_mounted_under_a_prefix_every_url_carries_it(gunicorn):
    # gunicorn takes the mount point from SCRIPT_NAME, as a gateway mapping would.
    server = gunicorn(workers=1, env={"SCRIPT_NAME": "/prod"}, ready="listening")
    health = raw_request("GET", "/prod/healthz")
    wait_until(lambda: exchange(server, health).status == 200, 20, "/prod/healthz")
    headers = {"Content-Type": "application/json"}
    created = exchange(
        server, raw_request("POST", "/prod/v1/articles", headers, b'{"title": "a"}')
    )
    assert created.status == 201
    assert created.getheader("Location").startswith("/prod/v1/articles/")
    page = exchange(server, raw_request("GET", "/prod/v1/items?limit=1"))
    assert page.getheader("Link").startswith("</prod/v1/items?cursor=")
