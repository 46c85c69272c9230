"""`make bench-inproc`: the cost of one WSGI call, refapi's whole stack beside the bare
baseline called the same way (no network, no server).

Each request is timed over many calls in several repeats; the figure is the median
repeat's microseconds per call, which is stable enough to compare commits.

    BENCH_CALLS=5000 BENCH_REPEATS=7 .venv-bench/bin/python bench/inproc.py
"""

from __future__ import annotations

import io
import itertools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

CALLS = int(os.environ.get("BENCH_CALLS", "5000"))
REPEATS = int(os.environ.get("BENCH_REPEATS", "7"))
TARGETS = {"GET /v1/todos/1": 30.0, "POST /v1/articles": 130.0}  # microseconds
ARTICLE = b'{"title": "Benchmark article", "tags": ["bench", "wrk"]}'
PAYMENT = b'{"amount": 10.5, "currency": "EUR"}'


def environ(method: str, path: str, query: str = "", body: bytes = b"", **headers):
    env = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "HTTP_ACCEPT": "application/json",
    }
    if body:
        env["CONTENT_TYPE"] = "application/json"
        env["CONTENT_LENGTH"] = str(len(body))
    env.update(headers)
    return env


def requests(deep_cursor: str) -> dict[str, Callable[[], dict]]:
    keys = itertools.count()
    return {
        "GET /v1/todos/1": lambda: environ("GET", "/v1/todos/1"),
        "GET /v1/items?limit=20": lambda: environ("GET", "/v1/items", "limit=20"),
        "GET /v1/items deep cursor": lambda: environ(
            "GET", "/v1/items", f"limit=20&cursor={deep_cursor}"
        ),
        "GET /v1/articles/{id}": lambda: environ("GET", "/v1/articles/500"),
        "POST /v1/articles": lambda: environ("POST", "/v1/articles", body=ARTICLE),
        "POST /v1/payments": lambda: environ(
            "POST", "/v1/payments", body=PAYMENT, HTTP_IDEMPOTENCY_KEY=f"k{next(keys)}"
        ),
    }


def cost_us(app, make_environ: Callable[[], dict]) -> float:
    def start_response(status, headers, exc_info=None):
        pass

    per_repeat = []
    for _ in range(REPEATS):
        environs = [make_environ() for _ in range(CALLS)]
        began = time.perf_counter()
        for env in environs:
            for _chunk in app(env, start_response):
                pass
        per_repeat.append((time.perf_counter() - began) / CALLS * 1e6)
    return statistics.median(per_repeat)


def main() -> int:
    from bench_db import prepare

    with tempfile.TemporaryDirectory(prefix="refapi-inproc-") as tmp:
        template, refapi_cursor = prepare(Path(tmp))
        os.environ["BENCH_DB"] = str(template)
        import baseline
        import common

        from app import create_app
        from config import Config

        refapi = create_app(
            Config(
                database_url=f"sqlite:///{template}",
                rate_limit_capacity=10**9,
                rate_limit_refill=10**9,
            )
        )
        ours, bare = requests(refapi_cursor), requests(common.sign(900))
        print(f"{'request':28} {'refapi us':>10} {'bare us':>9} {'ratio':>6}  target")
        for name in ours:
            mine = cost_us(refapi, ours[name])
            theirs = cost_us(baseline.application, bare[name])
            target = TARGETS.get(name)
            verdict = ""
            if target is not None:
                verdict = f"<= {target:.0f} us: {'met' if mine <= target else 'MISSED'}"
            print(
                f"{name:28} {mine:10.1f} {theirs:9.1f} {mine / theirs:6.2f}  {verdict}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
