"""The payment and rate-limit contracts hold across four gunicorn workers.

To make the concurrency real rather than likely, ``simultaneous`` opens every
connection and sends each request but its last two bytes; each sync worker accepts
one connection and blocks reading it, so when the last bytes go out, four requests
are in flight at once on four workers, and the rest queue behind them.
"""

from __future__ import annotations

import http.client
import json
import math
import re
import socket
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

pytestmark = pytest.mark.e2e

PAYMENT = json.dumps({"amount": 19.99, "currency": "EUR"}).encode()
HOLD_SECONDS = 0.5  # for the workers to accept and block; correctness never hangs on it


def raw_request(method: str, path: str, headers: dict[str, str], body=b"") -> bytes:
    lines = [
        f"{method} {path} HTTP/1.1",
        "Host: 127.0.0.1",
        "Connection: close",
        f"Content-Length: {len(body)}",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body  # fmt: skip


def simultaneous(server, request: bytes, count: int) -> list[http.client.HTTPResponse]:
    sockets = [socket.create_connection(("127.0.0.1", server.port), timeout=30)
               for _ in range(count)]  # fmt: skip

    def answer(sock: socket.socket) -> http.client.HTTPResponse:
        # Read and close at once, as real clients do: gunicorn lingers after its
        # answer until the client closes (RFC 9112 section 9.6).
        with sock:
            response = http.client.HTTPResponse(sock)
            response.begin()
            response.body = response.read()
            return response

    try:
        for sock in sockets:
            sock.sendall(request[:-2])
        time.sleep(HOLD_SECONDS)
        for sock in sockets:
            sock.sendall(request[-2:])
        with ThreadPoolExecutor(max_workers=count) as executor:
            return list(executor.map(answer, sockets))
    finally:
        for sock in sockets:
            sock.close()


def workers_that_answered(server, path: str) -> set[str]:
    """Worker pids from the access log lines of requests to ``path``."""
    lines = [line for line in server.access_log().splitlines() if f" {path} " in line]
    return {re.search(r"pid=<?(\d+)", line).group(1) for line in lines}


def test_fifty_concurrent_posts_with_one_key_create_one_payment(server):
    request = raw_request(
        "POST",
        "/v1/payments",
        {"Content-Type": "application/json", "Idempotency-Key": "one-key"},
        PAYMENT,
    )
    answers = simultaneous(server, request, 50)

    assert {a.status for a in answers} <= {201, 409}
    created = [a for a in answers if a.status == 201]
    assert len({a.body for a in created}) == 1  # replays are byte for byte
    assert len([a for a in created if a.getheader("Idempotent-Replayed") is None]) == 1
    assert all(a.getheader("Idempotent-Replayed") == "true" for a in created[1:] if
               a.getheader("Idempotent-Replayed") is not None)  # fmt: skip
    for answer in answers:
        if answer.status == 409:
            assert int(answer.getheader("Retry-After")) >= 1
    with sqlite3.connect(server.db_path) as conn:
        assert conn.execute("SELECT count(*) FROM payments").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM idempotency_keys").fetchone()[0] == 1
    assert server.log_failures() == []
    assert len(workers_that_answered(server, "/v1/payments")) == 4


def test_a_burst_over_four_workers_gets_exactly_the_capacity(gunicorn):
    capacity, refill = 40, 2.0
    server = gunicorn(env={"REFAPI_RATE_LIMIT_CAPACITY": str(capacity),
                           "REFAPI_RATE_LIMIT_REFILL": str(refill)})  # fmt: skip
    # The readiness probe used /healthz, which is exempt: the bucket is full.
    request = raw_request("GET", "/v1/todos/1", {})

    began = time.monotonic()
    answers = simultaneous(server, request, capacity + 20)
    elapsed = time.monotonic() - began - HOLD_SECONDS

    ok = [a for a in answers if a.status == 200]
    limited = [a for a in answers if a.status == 429]
    assert len(ok) + len(limited) == len(answers)
    allowed_by_refill = math.floor(refill * elapsed)
    assert capacity <= len(ok) <= capacity + allowed_by_refill, (len(ok), elapsed)
    assert limited, "nothing was limited"
    for answer in limited:
        error = json.loads(answer.body)
        assert error["code"] == "RATE_LIMITED"
        retry_after = int(answer.getheader("Retry-After"))
        assert retry_after == error["details"]["retry_after"]
        assert 1 <= retry_after <= math.ceil(1 / refill)
        assert answer.getheader("RateLimit-Policy") == f'"default";q={capacity};w=20'
    assert len(workers_that_answered(server, "/v1/todos/1")) == 4
