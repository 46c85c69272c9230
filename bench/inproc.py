"""`make bench-inproc`: the cost of one WSGI call, refapi's whole stack beside the bare
baseline called the same way (no network, no server); then the scale check, the
same article reads on 1,000 and on 1,000,000 articles; then the worst bad bodies
(``bad_bodies.py``), each route's limit filled with what costs most to refuse.

refapi is measured as shipped: ``create_app()`` from the environment, its JSON
request log written to a pipe that a ``cat`` drains, its metrics on
(``REFAPI_METRICS=127.0.0.1``, their folder named first, as gunicorn's master
does). Each request gets a new environ, made just before the call and dropped
after it, as a server's is; what making it and calling costs is timed with an app
that answers at once, and taken off.

Each request is timed over many calls in several repeats; the figure is the fastest
repeat's microseconds per call (interference only ever adds time, so the minimum is
the stable figure, as timeit's documentation advises), fit to compare commits.

    BENCH_CALLS=5000 BENCH_REPEATS=7 make bench-inproc
"""

from __future__ import annotations

import io
import itertools
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import bad_bodies  # noqa: E402
import common  # noqa: E402
from bench_db import ARTICLES, prepare  # noqa: E402
from common import ADMIN, environ  # noqa: E402

from refapi import create_app, logs, metrics  # noqa: E402
from refapi.storage.sqlite import SqliteStore  # noqa: E402
from refapi.web.pagination import encode_cursor  # noqa: E402

CALLS = int(os.environ.get("BENCH_CALLS", "5000"))
REPEATS = int(os.environ.get("BENCH_REPEATS", "7"))
TARGETS = {"GET /v1/todos/1": 30.0, "POST /v1/articles": 130.0}  # microseconds
ARTICLE = b'{"title": "Benchmark article", "tags": ["bench", "wrk"]}'
PAYMENT = b'{"amount": 10.5, "currency": "EUR"}'
SCALE = int(os.environ.get("BENCH_SCALE", "1000000"))  # articles in the large table


def requests(deep_cursor: str, authorization: str) -> dict[str, Callable[[], dict]]:
    """The requests to time; writes carry ``authorization`` (the admin's token)."""
    keys = itertools.count()
    token = {"HTTP_AUTHORIZATION": authorization}
    return {
        "GET /v1/todos/1": lambda: environ("GET", "/v1/todos/1"),
        "GET /v1/todos/1 with a token": lambda: environ("GET", "/v1/todos/1", **token),
        "GET /v1/items?limit=20": lambda: environ("GET", "/v1/items", "limit=20"),
        "GET /v1/items deep cursor": lambda: environ(
            "GET", "/v1/items", f"limit=20&cursor={deep_cursor}"
        ),
        "GET /v1/articles/{id}": lambda: environ("GET", "/v1/articles/500"),
        "POST /v1/articles": lambda: environ(
            "POST", "/v1/articles", body=ARTICLE, **token
        ),
        "POST /v1/payments": lambda: environ(
            "POST", "/v1/payments", body=PAYMENT, HTTP_IDEMPOTENCY_KEY=f"k{next(keys)}",
            **token,
        ),
    }  # fmt: skip


def start_response(status, headers, exc_info=None):
    pass


def harness(environ, start_response):
    start_response("200 OK", [])
    return [b""]


def loop_us(app, make_environ: Callable[[], dict]) -> float:
    """The fastest repeat's microseconds a call, each environ made for its call."""
    per_repeat = []
    for _ in range(REPEATS):
        began = time.perf_counter()
        for _ in range(CALLS):
            for _chunk in app(make_environ(), start_response):
                pass
        per_repeat.append((time.perf_counter() - began) / CALLS * 1e6)
    return min(per_repeat)


def cost_us(app, make_environ: Callable[[], dict]) -> float:
    """The app's microseconds a call, the loop's and the environ's taken off."""
    return loop_us(app, make_environ) - loop_us(harness, make_environ)


def refapi_app(database: Path):
    """refapi as shipped, from the environment, on ``database``."""
    os.environ.update({
        "DATABASE_URL": f"sqlite:///{database}",
        "REFAPI_DATA_DIR": str(database.parent),
        # Out of reach of a run's calls, as in every benchmark.
        "REFAPI_RATE_LIMIT_CAPACITY": "1000000000",
        "REFAPI_RATE_LIMIT_REFILL": "1000000000",
        "REFAPI_ADMIN_EMAIL": ADMIN["email"],
        "REFAPI_ADMIN_PASSWORD": ADMIN["password"],
        "REFAPI_LOG_FORMAT": os.environ.get("REFAPI_LOG_FORMAT", "json"),
        "REFAPI_METRICS": "127.0.0.1",
    })  # fmt: skip
    return create_app()


def log_to_a_pipe() -> subprocess.Popen:
    """What ``logs.configure`` does, to a pipe a ``cat`` drains rather than to this
    terminal: the request log's handler is made here first, so it keeps it."""
    drain = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    handler = logging.StreamHandler(io.TextIOWrapper(drain.stdin, write_through=False))
    handler.setFormatter(logs.formatter(os.environ.get("REFAPI_LOG_FORMAT", "json")))
    logging.getLogger(logs.LOGGER).addHandler(handler)
    logging.getLogger(logs.LOGGER).setLevel(logging.INFO)
    return drain


def stack_against_baseline(folder: Path) -> None:
    database, refapi_cursor = prepare(folder)
    os.environ["BENCH_DB"] = str(database)
    import baseline  # reads BENCH_DB on its first request

    refapi = refapi_app(database)
    # One login; the baseline gets the same header, and ignores it.
    authorization = common.log_in(refapi)
    ours = requests(refapi_cursor, authorization)
    bare = requests(common.sign(900), authorization)
    print(f"{'request':28} {'refapi us':>10} {'bare us':>9} {'ratio':>6}  target")
    costs = {}
    for name in ours:
        mine = costs[name] = cost_us(refapi, ours[name])
        theirs = cost_us(baseline.application, bare[name])
        target = TARGETS.get(name)
        verdict = ""
        if target is not None:
            verdict = f"<= {target:.0f} us: {'met' if mine <= target else 'MISSED'}"
        print(f"{name:28} {mine:10.1f} {theirs:9.1f} {mine / theirs:6.2f}  {verdict}")
    deep = costs["GET /v1/items deep cursor"] / costs["GET /v1/items?limit=20"]
    paying = costs["POST /v1/payments"] / costs["POST /v1/articles"]
    token = costs["GET /v1/todos/1 with a token"] - costs["GET /v1/todos/1"]
    print(f"\ndeep page / first page: {deep:.2f} (<= 1.10: {verdict_of(deep <= 1.10)})")
    print(f"payment / article: {paying:.2f} (<= 1.5: {verdict_of(paying <= 1.5)})")
    print(
        f"authentication (a GET with a Bearer token, less one without): {token:.1f} us"
    )


def verdict_of(met: bool) -> str:
    return "met" if met else "MISSED"


def article_reads(database: Path) -> dict[str, float]:
    app = refapi_app(database)
    with sqlite3.connect(database) as conn:
        last = conn.execute("SELECT max(id) FROM articles").fetchone()[0]
    store = SqliteStore(str(database))
    near_end = encode_cursor(
        store.secret_key(), "articles", last - 10, store.reset_epoch()
    )
    page = "limit=20&cursor=" + near_end
    return {
        "GET /v1/articles (first page)": cost_us(
            app, lambda: environ("GET", "/v1/articles", "limit=20")
        ),
        "GET /v1/articles (last page)": cost_us(
            app, lambda: environ("GET", "/v1/articles", page)
        ),
        "GET /v1/articles/{id} (the last)": cost_us(
            app, lambda: environ("GET", f"/v1/articles/{last}")
        ),
    }


def scale(folder: Path) -> None:
    """The same reads on the seeded 1,000 articles and on ``SCALE``."""
    small, _ = prepare(folder / "small")
    large = folder / "large.db"
    shutil.copy(small, large)
    began = time.perf_counter()
    with sqlite3.connect(large) as conn:
        # One statement makes them all (a million rows in seconds).
        conn.execute(
            "WITH RECURSIVE n(x) AS"
            " (SELECT ? UNION ALL SELECT x + 1 FROM n WHERE x < ?)"
            " INSERT INTO articles (title, tags, created_at, updated_at)"
            " SELECT 'article ' || x, '[]', '2026-11-21T00:00:00Z',"
            " '2026-11-21T00:00:00Z' FROM n",
            (ARTICLES, SCALE - 1),
        )
        count = conn.execute("SELECT count(*) FROM articles").fetchone()[0]
        plan = conn.execute(
            "EXPLAIN QUERY PLAN SELECT id, title, tags, created_at, updated_at"
            " FROM articles WHERE id > ? ORDER BY id LIMIT ?",
            (SCALE - 10, 21),
        ).fetchall()
    made = time.perf_counter() - began
    print(f"\n{count:,} articles made in {made:.1f} s")
    print("EXPLAIN QUERY PLAN of a page:", "; ".join(row[3] for row in plan))
    before, after = article_reads(small), article_reads(large)
    big = f"{count:,} us"
    print(f"\n{'request':34} {'1,000 us':>9} {big:>13} {'ratio':>6}")
    for name, cost in before.items():
        print(f"{name:34} {cost:9.1f} {after[name]:13.1f} {after[name] / cost:6.2f}")


def main() -> int:
    drain = log_to_a_pipe()
    metrics.prepare_folder()  # as gunicorn's master does
    try:
        with tempfile.TemporaryDirectory(prefix="refapi-inproc-") as tmp:
            stack_against_baseline(Path(tmp) / "stack")
            scale(Path(tmp) / "scale")
            bad_bodies.report(bad_bodies.app_for(Path(tmp) / "bad.db"))
    finally:
        metrics.remove_folder()
        drain.stdin.close()
        drain.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
