"""The worst bad bodies: what a hostile body costs the whole stack, per route.

A body over a route's limit is refused from its ``Content-Length`` alone and costs
nothing, so the worst a client can send is a body that fills the limit with the
shape that costs most at one stage: many small values for the decoder and its
garbage collector, unknown members, nesting at ``REFAPI_JSON_MAX_DEPTH`` side by
side, escapes for the surrogate check, for a form ``a=&a=&...``. Each route that
reads a body is asked its limit (the ``details`` of a ``413`` to a request that
declares 1 GiB and sends nothing), then sent each shape filled to that limit.

Each figure is the CPU time (``time.process_time``) of the fastest of ``REPEATS``
calls through the whole stack, in milliseconds; the last table gives each route's
worst. ``make bench-inproc`` ends with these tables; alone:
``.venv/bin/python bench/bad_bodies.py``.
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

GIB = str(1 << 30)
REPEATS = int(os.environ.get("BENCH_BAD_REPEATS", "3"))
FORM = "application/x-www-form-urlencoded"


def fill(head: bytes, item: bytes, tail: bytes, size: int, sep: bytes = b",") -> bytes:
    """``head``, as many ``sep``-separated ``item`` as fit in ``size``, ``tail``."""
    count = max(1, (size - len(head) - len(tail) + len(sep)) // (len(item) + len(sep)))
    return head + sep.join([item] * count) + tail


def json_shapes(member: str) -> dict[str, Callable[[int], bytes]]:
    """The JSON bodies, each a function of the size to fill; ``member`` is a string
    member of the route's schema, so the body passes the cheap checks before it."""
    head, tail = b'{"%s": [' % member.encode(), b"]}"
    text = b'{"%s": "' % member.encode()
    pair = b"\\ud83e\\udd84"  # one astral character, escaped as JSON writes it

    def members(size: int) -> bytes:
        count = (size - 2) // len(b'"m000000": 1, ')
        return b"{" + b", ".join(b'"m%06d": 1' % n for n in range(count)) + b"}"

    def towers(size: int) -> bytes:
        # 30 deep inside the object and its array: at the limit (32), not past it.
        tower = b"[" * 30 + b"]" * 30
        return fill(head, tower, tail, size)

    return {
        "duplicate strings": lambda n: fill(head, b'"a"', tail, n),
        "integers": lambda n: fill(head, b"1", tail, n),
        "decimals": lambda n: fill(head, b"1.5", tail, n),
        "empty arrays": lambda n: fill(head, b"[]", tail, n),
        "empty objects": lambda n: fill(head, b"{}", tail, n),
        "unknown members": members,
        "arrays 32 deep, side by side": towers,
        "escaped surrogate pairs": lambda n: fill(text, pair, b'"}', n, b""),
        "one long string": lambda n: fill(text, b"x", b'"}', n, b""),
    }


FORM_SHAPES: dict[str, Callable[[int], bytes]] = {
    "a=&a=&...": lambda n: fill(b"", b"a=", b"", n, b"&"),
    "distinct names": lambda n: b"&".join(
        b"p%07d=" % i for i in range(max(1, n // len(b"p0000000=&")))
    ),
    "percent escapes": lambda n: fill(b"grant_type=", b"%41", b"", n, b""),
    "one long value": lambda n: fill(b"grant_type=", b"x", b"", n, b""),
}

# (route, method, path, query, content type, a string member, needs the admin)
ROUTES = (
    ("POST /v1/articles", "POST", "/v1/articles", "", None, "title", True),
    ("POST /api/demo.php?action=create", "POST", "/api/demo.php", "action=create",
     None, "text", False),
    ("POST /api/login", "POST", "/api/login", "", None, "email", False),
    ("POST /api/users", "POST", "/api/users", "", None, "email", False),
    ("POST /oauth/token", "POST", "/oauth/token", "", FORM, None, False),
)  # fmt: skip


def cpu_ms(call: Callable[[], object]) -> float:
    """The fastest of ``REPEATS`` calls, in milliseconds of this process's CPU."""
    costs = []
    for _ in range(REPEATS):
        gc.collect()  # each call starts from the same collector state
        began = time.process_time()
        call()
        costs.append(time.process_time() - began)
    return min(costs) * 1000


def _json_loads(body: bytes) -> None:
    try:
        json.loads(body)
    except (RecursionError, ValueError):
        pass  # nesting past the interpreter's limit, or a form: no floor


def report(app) -> dict[str, tuple[str, float]]:
    """Print each route's limit and each shape's cost; return each route's worst."""
    authorization = log_in(app)  # as an admin: else an article body is a 401
    answers: list[str] = []

    def call(method, path, query, content_type, body, **extra) -> bytes:
        def start_response(status, headers, exc_info=None):
            answers.append(status[:3])

        env = environ(method, path, query, body=body, **extra)
        env["CONTENT_TYPE"] = content_type or "application/json"
        return b"".join(app(env, start_response))

    worst: dict[str, tuple[str, float]] = {}
    heading = f"{'route, bad body':64} {'bytes':>8} {'CPU ms':>8} {'loads ms':>8}"
    print(f"\n{heading}  answer")
    for name, method, path, query, content_type, member, admin in ROUTES:
        extra = {"HTTP_AUTHORIZATION": authorization} if admin else {}
        # Declared 1 GiB, nothing sent: the answer names the limit.
        probe = {**extra, "CONTENT_LENGTH": GIB}
        details = json.loads(call(method, path, query, content_type, b"", **probe))
        details = details.get("details", {})
        limit = details.get("limit", details.get("maxBytes"))
        shapes = FORM_SHAPES if content_type == FORM else json_shapes(member)
        for shape, make in shapes.items():
            body = make(limit)
            assert len(body) <= limit, (name, shape, len(body), limit)
            answers.clear()
            request = (method, path, query, content_type, body)
            mine = cpu_ms(lambda request=request, extra=extra: call(*request, **extra))
            floor = cpu_ms(lambda body=body: _json_loads(body))
            row = f"{name}: {shape}"
            print(f"{row:64} {len(body):8} {mine:8.1f} {floor:8.1f}  {answers[-1]}")
            worst[name] = max(worst.get(name, ("", 0.0)), (shape, mine), key=_cost)
    print(f"\n{'route':34} {'worst bad body':30} {'CPU ms':>8}")
    for name, (shape, cost) in worst.items():
        print(f"{name:34} {shape:30} {cost:8.1f}")
    return worst


def _cost(pair: tuple[str, float]) -> float:
    return pair[1]


def app_for(database: Path):
    """refapi with no rate limit to stop the benchmark, and the benchmark's admin."""
    from refapi import create_app
    from refapi.config import Config

    unlimited = {
        "rate_limit_capacity": 10**9,
        "rate_limit_refill": 10**9,
        "auth_rate_limit": 10**9,
        "register_rate_limit": 10**9,
    }
    admin = {"admin_email": ADMIN["email"], "admin_password": ADMIN["password"]}
    return create_app(
        Config(database_url=f"sqlite:///{database}", **unlimited, **admin)
    )


def main() -> int:
    common.request_log_off()
    with tempfile.TemporaryDirectory(prefix="refapi-bad-") as tmp:
        app = app_for(Path(tmp) / "bad.db")
        report(app)
        app.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
