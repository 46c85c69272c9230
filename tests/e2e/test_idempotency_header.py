"""Two Idempotency-Key header lines, as gunicorn hands them to the app."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.e2e.harness import exchange

pytestmark = pytest.mark.e2e


@pytest.mark.fresh_server  # counts every payment
def test_two_idempotency_key_lines_are_400_and_pay_nothing(server):
    body = b'{"amount": 5, "currency": "EUR"}'
    head = (
        "POST /v1/payments HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        "Content-Type: application/json\r\n"
        "Idempotency-Key: order-1\r\nIdempotency-Key: order-2\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    response = exchange(server, head.encode() + body)
    answer = json.loads(response.body)
    assert response.status == 400
    assert answer["code"] == "IDEMPOTENCY_KEY_INVALID"
    assert set(answer) == {"code", "message", "details"}
    conn = sqlite3.connect(server.db_path)
    try:
        assert conn.execute("SELECT count(*) FROM payments").fetchone()[0] == 0
    finally:
        conn.close()
