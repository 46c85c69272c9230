"""Broken framing against a real gunicorn: a malformed chunked body, or a body shorter
than its Content-Length (the client half-closes), is 400 MALFORMED_REQUEST, stores
nothing, and the worker goes on serving. A request that stalls or trickles is 408
REQUEST_TIMEOUT at the worker's deadline (half of gunicorn's ``timeout``), and the
same worker serves on.

Only a real server shows this: it is gunicorn's ``wsgi.input`` that raises on a bad
chunk (``gunicorn.http.errors``) and that returns fewer bytes than asked when the
client stops sending early.
"""

from __future__ import annotations

import http.client
import json
import select
import shutil
import socket
import subprocess
import time
from collections.abc import Sequence

import pytest

from tests.conftest import skip_or_fail
from tests.e2e.conftest import shared
from tests.e2e.harness import as_admin, exchange, raw_request, wait_until

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


@pytest.fixture(scope="module")
def refusing(tmp_path_factory, shared_servers):
    """One worker, shared by the tests of this module whose requests are all
    refused: none stores anything, so each can check that nothing was stored."""
    yield from shared(tmp_path_factory, shared_servers, workers=1)


@pytest.mark.parametrize(("headers", "body", "half_close"), BROKEN)
def test_broken_framing_is_400_stores_nothing_and_the_worker_serves_on(
    refusing, headers, body, half_close
):
    server = refusing
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


WORKER_TIMEOUT = 4  # so the request's deadline is 2 s
DEADLINE = WORKER_TIMEOUT / 2
# The lab's longest delay and the proxy's deadline must be under half the worker
# timeout (checked at start).
SHORT_TIMEOUT = {
    "REFAPI_WORKER_TIMEOUT": str(WORKER_TIMEOUT),
    "REFAPI_LAB_MAX_DELAY": "1",
    "REFAPI_PROXY_TOTAL_TIMEOUT": "1",
}


def trickle(server, parts: Sequence[bytes], pause: float) -> tuple[bytes, float]:
    """Send ``parts`` ``pause`` seconds apart until an answer begins, then read it
    whole, never closing: the answer, and how long it took to begin, from before
    the connection (the server's deadline starts once it accepts, never before: a
    clock started after the connect could start late, under load)."""
    began = time.monotonic()
    with socket.create_connection(("127.0.0.1", server.port), timeout=15) as sock:
        for part in parts:
            sock.sendall(part)
            if select.select([sock], [], [], pause)[0]:
                break
        select.select([sock], [], [], 15)
        seconds = time.monotonic() - began
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        return answer, seconds


# Tuples: a test that adds a header builds its own, so no module sharing these
# (test_granian_refusals.py) is sent another's (a token of another server was, once).
STALLED = [
    pytest.param((b"GET /v1/todos/1 HTTP/1.1\r\nHost: x\r\n",), 0, id="head-stalls"),
    pytest.param((b"G", b"E", b"T", b" ", b"/") * 10, 0.3, id="head-trickles"),
    pytest.param(
        (raw_request("POST", "/v1/articles", {**JSON, "Content-Length": "100"})
         + ARTICLE[:5],), 0, id="body-stalls",
    ),
    pytest.param(
        (raw_request("POST", "/v1/articles", {**JSON, "Content-Length": "100"}),)
        + (b" ",) * 20, 0.3, id="body-trickles",
    ),
]  # fmt: skip


@pytest.fixture(scope="module")
def short_timeout(tmp_path_factory, shared_servers):
    """One worker with the short timeout, shared by the requests that stall (each
    refused, storing nothing)."""
    yield from shared(tmp_path_factory, shared_servers, workers=1, env=SHORT_TIMEOUT)


@pytest.mark.parametrize(("parts", "pause"), STALLED)
def test_a_request_that_stalls_or_trickles_is_408_at_the_deadline(
    short_timeout, parts, pause
):
    server = short_timeout
    [worker] = server.serving_pids()
    if parts[0].startswith(b"POST"):
        parts = (as_admin(server, parts[0]), *parts[1:])
    answer, seconds = trickle(server, parts, pause)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 "), answer
    assert b"\r\nX-Request-Id: " in head
    error = json.loads(body)
    assert set(error) == {"code", "message", "details"}
    assert error["code"] == "REQUEST_TIMEOUT"
    assert DEADLINE - 0.1 <= seconds < DEADLINE + 1.5
    # Not killed by its master: the same worker serves on, and nothing was stored.
    listed = exchange(server, raw_request("GET", "/v1/articles"))
    assert listed.status == 200 and json.loads(listed.body)["data"] == []
    assert server.serving_pids() == {worker}
    assert "WORKER TIMEOUT" not in server.error_log()
    assert [line for line in server.log_failures() if "408" not in line] == []


def head_then_wait(server, head: bytes, seconds: float = 3) -> bytes:
    """Send a request's head alone and read what comes back within ``seconds``."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head)
        answer, until = b"", time.monotonic() + seconds
        while (left := until - time.monotonic()) > 0 and select.select(
            [sock], [], [], left
        )[0]:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
        return answer


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        pytest.param({**JSON, "Content-Length": str(2 << 20)}, 413, id="too-large"),
        pytest.param({"Content-Type": "text/plain", "Content-Length": "5"}, 415,
                     id="unsupported-type"),
        pytest.param({**JSON, "Content-Length": "5", "Authorization": "Bearer nope"},
                     401, id="bad-token"),
    ],
)  # fmt: skip
def test_expect_100_continue_refused_from_the_head_gets_no_100(
    refusing, headers, status
):
    """RFC 9110, 10.1.1: a server that refuses from the head answers with the final
    status, never inviting the body it will not read."""
    server = refusing
    head = as_admin(
        server,
        raw_request("POST", "/v1/articles", {**headers, "Expect": "100-continue"}),
    )
    answer = head_then_wait(server, head)
    assert answer.startswith(b"HTTP/1.1 %d " % status), answer[:200]
    assert b"100 Continue" not in answer


def test_expect_100_continue_is_answered_when_the_body_is_read(gunicorn):
    continued_when_read(gunicorn(workers=1))


def continued_when_read(server) -> None:
    """``100 Continue`` once the app reads the body, then the answer (Granian's
    test asks it too)."""
    headers = {**JSON, "Content-Length": str(len(ARTICLE)), "Expect": "100-continue"}
    head = as_admin(server, raw_request("POST", "/v1/articles", headers))
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head)
        assert select.select([sock], [], [], 5)[0], "no 100 Continue"
        assert sock.recv(65536) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(ARTICLE)
        response = http.client.HTTPResponse(sock, method="POST")
        response.begin()
        assert response.status == 201
        assert json.loads(response.read())["title"] == "framed"


def test_answered_clients_that_never_close_hold_a_worker_briefly(gunicorn):
    """After each answer gunicorn waits for the client's FIN, for up to 2 s of
    silence (RFC 9112 section 9.6): twenty clients that sent a whole request and
    never closed held two workers 20 s, and /healthz waited behind them. A
    silence of 0.1 s ends the wait (docs/operating.md, "Slow clients")."""
    server = gunicorn(workers=2)
    held = []
    try:
        for _ in range(20):
            client = socket.create_connection(("127.0.0.1", server.port))
            client.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            held.append(client)
        began = time.monotonic()
        probe = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        probe.request("GET", "/healthz")
        assert probe.getresponse().status == 200
        assert time.monotonic() - began < 8  # was 20 s
    finally:
        for client in held:
            client.close()


def test_a_client_that_reads_nothing_is_let_go_at_the_deadline_quietly(gunicorn):
    """A sync worker writes to a client that reads nothing until half the worker
    timeout, then lets it go, its answer cut: one line at debug, as a reset
    connection, where a time-out was a traceback in gunicorn's log."""
    server = gunicorn(workers=1, env=SHORT_TIMEOUT)
    client = socket.socket()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    client.connect(("127.0.0.1", server.port))
    try:
        client.sendall(b"GET /docs/swagger-ui-bundle.js HTTP/1.1\r\nHost: a\r\n\r\n")
        time.sleep(3)  # past the 2 s a write may wait
        probe = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        probe.request("GET", "/healthz")
        assert probe.getresponse().status == 200  # the worker serves on
    finally:
        client.close()
    log = server.error_log()
    assert "Traceback" not in log and "Socket error" not in log, log[-2000:]


def test_a_failed_tls_handshake_is_no_request(gunicorn, tmp_path):
    """A plain-HTTP request to gunicorn's own TLS port reads no request: it was
    logged and counted as a 403 request, whose answer went down the broken TLS
    connection, unread (an operator's review)."""
    if shutil.which("openssl") is None:
        skip_or_fail("openssl is needed to make the TLS server's certificate")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
         "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    server = gunicorn(
        workers=1, ready="booted", extra_args=("--certfile", str(cert), "--keyfile",
                                               str(key)),
    )  # fmt: skip
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(raw_request("GET", "/healthz"))
        assert sock.recv(65536) == b""  # closed, no answer
    wait_until(lambda: "TLS failed with ip=127.0.0.1" in server.log(), 10, "its line")
    assert [line for line in server.requests() if line["status"] == 403] == []
    assert "Invalid request" not in server.log()
