"""The worst bad bodies: what a hostile 1 MiB request costs the whole stack.

Each body fills the default body limit (1 MiB) with the shape that costs most at one
stage: duplicates for ``uniqueItems`` (quadratic in jsonschema), many small values
for the decoder and its garbage collector, unknown members, nesting at and past
``REFAPI_JSON_MAX_DEPTH``, escapes for the surrogate check. Beside each figure is
what ``json.loads`` alone costs on the same bytes, the floor any Python service
pays for accepting a body that size; the cost is linear in the body limit.

Each figure is the fastest of ``REPEATS`` calls, in milliseconds. ``make
bench-inproc`` ends with this table; alone: ``.venv/bin/python bench/bad_bodies.py``.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import common
from common import ADMIN, environ, log_in

LIMIT = 1_048_576
REPEATS = int(os.environ.get("BENCH_BAD_REPEATS", "5"))
TAGS = (b'{"title": "t", "tags": [', b"]}")


def fill(head: bytes, item: bytes, tail: bytes) -> bytes:
    """``head``, as many comma-separated ``item`` as fit in 1 MiB, then ``tail``."""
    count = (LIMIT - len(head) - len(tail) + 1) // (len(item) + 1)
    return head + b",".join([item] * count) + tail


def towers(height: int) -> bytes:
    """An array of arrays nested ``height`` deep, as many as fit."""
    tower = b"[" * (height - 1) + b"]" * (height - 1)
    return fill(b"[", tower, b"]")


def members(count: int) -> bytes:
    names = b",".join(b'"m%06d": 1' % n for n in range(count))
    return b'{"title": "t", ' + names + b"}"


BODIES: dict[str, bytes] = {
    "262,000 duplicate tags": fill(TAGS[0], b'"a"', TAGS[1]),
    "349,000 empty tags": fill(TAGS[0], b'""', TAGS[1]),
    "524,000 integer tags": fill(TAGS[0], b"1", TAGS[1]),
    "262,000 decimal tags": fill(TAGS[0], b"1.5", TAGS[1]),
    "349,000 empty arrays as tags": fill(TAGS[0], b"[]", TAGS[1]),
    "80,000 unknown members": members(80_000),
    "arrays 32 deep, side by side": towers(32),
    "arrays 524,288 deep": b"[" * (LIMIT // 2) + b"]" * (LIMIT // 2),
    "escaped surrogate pairs as tags": fill(TAGS[0], b'"\\ud83e\\udd84"', TAGS[1]),
    "a 1 MiB title": b'{"title": "' + b"x" * (LIMIT - 14) + b'"}',
}


def fastest_ms(call: Callable[[], object]) -> float:
    costs = []
    for _ in range(REPEATS):
        gc.collect()  # each call starts from the same collector state
        began = time.perf_counter()
        call()
        costs.append(time.perf_counter() - began)
    return min(costs) * 1000


def _json_loads(body: bytes) -> None:
    try:
        json.loads(body)
    except RecursionError:
        pass  # nesting past the interpreter's limit: refapi refuses it before


def report(app) -> None:
    """Print each bad body's cost through ``app`` beside json.loads's, and the worst."""
    answers: dict[str, str] = {}
    # As an admin: without a credential every body would be a 401, never read.
    authorization = log_in(app)

    def through_stack(body: bytes) -> None:
        def start_response(status, headers, exc_info=None):
            answers[status[:3]] = status

        env = environ(
            "POST", "/v1/articles", body=body, HTTP_AUTHORIZATION=authorization
        )
        for _chunk in app(env, start_response):
            pass

    print(f"\n{'bad body (1 MiB)':34} {'refapi ms':>10} {'json.loads ms':>14}  answer")
    worst = ("", 0.0)
    for name, body in BODIES.items():
        assert len(body) <= LIMIT, name
        answers.clear()
        mine = fastest_ms(lambda body=body: through_stack(body))
        floor = fastest_ms(lambda body=body: _json_loads(body))
        print(f"{name:34} {mine:10.1f} {floor:14.1f}  {', '.join(answers)}")
        worst = max(worst, (name, mine), key=lambda pair: pair[1])
    print(f"worst: {worst[0]}, {worst[1]:.0f} ms")


def main() -> int:
    from refapi import create_app
    from refapi.config import Config

    common.request_log_off()

    with tempfile.TemporaryDirectory(prefix="refapi-bad-") as tmp:
        unlimited = {"rate_limit_capacity": 10**9, "rate_limit_refill": 10**9}
        admin = {"admin_email": ADMIN["email"], "admin_password": ADMIN["password"]}
        config = Config(
            database_url=f"sqlite:///{Path(tmp)}/bad.db", **unlimited, **admin
        )
        app = create_app(config)
        report(app)
        app.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
