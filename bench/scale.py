"""The scale check of `make bench-instructions`: a page costs what it costs
whatever the table's size. refapi's first page of articles, a page near the end
(through its cursor) and the last article, counted on the seeded 1,000 articles
and on a copy grown to ``BENCH_SCALE`` (1,000,000) by one SQL statement.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

SCALE = int(os.environ.get("BENCH_SCALE", "1000000"))
TARGET = 1.05  # a large table's count, at most this many times the small's


def calls(database: Path, call: type) -> tuple:
    """The three reads on ``database``, as ``call`` objects."""
    from refapi.storage.sqlite import SqliteStore
    from refapi.web.pagination import encode_cursor

    store = SqliteStore(str(database))
    with sqlite3.connect(database) as conn:
        last = conn.execute("SELECT max(id) FROM articles").fetchone()[0]
    deep = encode_cursor(
        store.secret_key(), "articles", last - 100, store.reset_epoch()
    )
    store.close()
    return (
        call("GET /v1/articles?limit=20 (the first page)", "GET", "/v1/articles",
             "limit=20"),
        call("GET /v1/articles?limit=20 (100 from the end)", "GET", "/v1/articles",
             f"limit=20&cursor={deep}"),
        call("GET /v1/articles/{the last}", "GET", f"/v1/articles/{last}"),
    )  # fmt: skip


def grown(small: Path, large: Path) -> Path:
    """A copy of ``small`` with its articles made up to ``SCALE``, in one statement."""
    shutil.copy(small, large)
    with sqlite3.connect(large) as conn:
        conn.execute(
            "WITH RECURSIVE n(x) AS"
            " (SELECT count(*) + 1 FROM articles UNION ALL"
            "  SELECT x + 1 FROM n WHERE x < ?)"
            " INSERT INTO articles (title, tags, created_at, updated_at)"
            " SELECT 'article ' || x, '[\"bench\"]', '2026-11-21T00:00:00Z',"
            " '2026-11-21T00:00:00Z' FROM n",
            (SCALE,),
        )
    return large


def report(small: dict[str, float], large: dict[str, float]) -> list[str]:
    lines = [
        "",
        f"The cost of a page does not grow with the table: refapi's article reads on"
        f" 1,000 articles and on {SCALE:,} (target: within {(TARGET - 1) * 100:.0f}%).",
        "",
        f"| request | 1,000 | {SCALE:,} | ratio | target | verdict |",
        "|---|---:|---:|---:|---|---|",
    ]
    for name, few in small.items():
        many = large[name]
        verdict = "PASS" if many / few <= TARGET else "MISS"
        lines.append(f"| {name} | {few:,.0f} | {many:,.0f} | {many / few:.3f}"
                     f" | <= {TARGET:.2f}x | {verdict} |")  # fmt: skip
    return lines
