"""Two Idempotency-Key header lines, as gunicorn hands them to the app."""

from __future__ import annotations

import http.client
import json
import socket
import sqlite3

import pytest

pytestmark = pytest.mark.e2e


def test_two_idempotency_key_lines_are_400_and_pay_nothing(server):
    body = b'{"amount": 5, "currency": "EUR"}'
    head = (
        "POST /v1/payments HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        "Content-Type: application/json\r\n"
        "Idempotency-Key: order-1\r\nIdempotency-Key: order-2\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head.encode() + body)
        response = http.client.HTTPResponse(sock, method="POST")
        response.begin()
        answer = json.loads(response.read())
    assert response.status == 400
    assert answer["code"] == "IDEMPOTENCY_KEY_INVALID"
    assert set(answer) == {"code", "message", "details"}
    conn = sqlite3.connect(server.db_path)
    try:
        assert conn.execute("SELECT count(*) FROM payments").fetchone()[0] == 0
    finally:
        conn.close()
