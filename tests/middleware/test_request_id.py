"""RequestId (middleware/request_id.py): every answer names its request, with the
caller's valid ``X-Request-Id`` or one made here; alone and inside another layer.
Over the whole stack: tests/test_app.py."""

from __future__ import annotations

import os
import re

import pytest

from refapi.middleware import (
    Cors,
    RequestId,
)
from refapi.web.environ import TRACE_ID
from tests.middleware.alone import (
    ORIGIN,
    bare,
    client,
)


def test_generated_request_ids_differ(app):
    ids = {app.get("/v1/todos/1").headers["X-Request-Id"] for _ in range(3)}
    assert len(ids) == 3


# -- alone, and in another order than app.py's (tests/middleware/alone.py) ----------


def test_request_id_alone_keeps_a_valid_id_and_makes_one_otherwise():
    app = client(RequestId(bare))
    kept = app.get("/", headers={"X-Request-Id": "trace-1.a_b"})
    assert kept.headers["X-Request-Id"] == "trace-1.a_b"
    assert kept.headers["X-Content-Type-Options"] == "nosniff"
    made = app.get("/", headers={"X-Request-Id": "not valid; at all"})
    assert made.headers["X-Request-Id"] != "not valid; at all"
    assert re.fullmatch(r"[A-Za-z0-9._-]{1,128}", made.headers["X-Request-Id"])
    assert made.json["PATH_INFO"] == "/"


@pytest.mark.parametrize(
    "sent, kept",
    [
        ("", False),
        ("a" * 128, True),
        ("a" * 129, False),
        ("a b", False),
        ("a\u00e9", False),
        ("A-z_0.9", True),
    ],
    ids=["empty", "128-chars", "129-chars", "space", "non-ascii", "every-class"],
)
def test_an_inbound_id_is_kept_only_when_it_matches_the_schema(sent, kept):
    answer = client(RequestId(bare)).get("/", headers={"X-Request-Id": sent})
    assert (answer.headers["X-Request-Id"] == sent) is kept


def test_made_ids_are_a_process_prefix_and_a_counter_in_32_hex_digits():
    app = client(RequestId(bare))
    first, second = (app.get("/").headers["X-Request-Id"] for _ in range(2))
    assert re.fullmatch("[0-9a-f]{32}", first)
    assert first[:20] == second[:20]
    assert int(second[20:], 16) == int(first[20:], 16) + 1


TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.mark.parametrize(
    "headers, expected",
    [
        ({}, None),
        ({"traceparent": ""}, None),
        ({"traceparent": TRACEPARENT}, "4bf92f3577b34da6a3ce929d0e0e4736"),
        ({"traceparent": TRACEPARENT.upper()}, None),
    ],
    ids=["absent", "empty", "valid", "uppercase"],
)
def test_the_trace_id_is_set_for_the_layers_below(headers, expected):
    seen = {}

    def app(environ, start_response):
        seen["trace_id"] = environ[TRACE_ID]
        return bare(environ, start_response)

    client(RequestId(app)).get("/", headers=headers)
    assert seen == {"trace_id": expected}


def test_request_id_inside_cors_still_marks_the_answer():
    app = client(Cors(RequestId(bare), origins=(ORIGIN,)))
    answer = app.get("/", headers={"Origin": ORIGIN, "X-Request-Id": "r1"})
    assert answer.headers["X-Request-Id"] == "r1"
    assert answer.headers["Access-Control-Allow-Origin"] == ORIGIN
    assert answer.headers["Vary"] == "Origin"


def test_a_forked_child_makes_ids_with_a_prefix_of_its_own():
    # The prefix is drawn again at the fork (os.register_at_fork), not found
    # stale by asking the pid at each request.
    app = client(RequestId(bare))
    before = app.get("/").headers["X-Request-Id"]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its id, then out without pytest's clean-up
        os.write(write, app.get("/").headers["X-Request-Id"].encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = os.read(read, 64).decode()
    os.close(read)
    after = app.get("/").headers["X-Request-Id"]
    assert len(child) == len(before) == 32
    assert child[:20] != before[:20] == after[:20]
