"""The benchmark's database: refapi's migrations and seed, plus articles to read."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from refapi.storage.sqlite import SqliteStore
from refapi.web.pagination import encode_cursor

ARTICLES = 1000
DEEP_ID = 900  # the deep cursor points past item 900 of 1,000


def prepare(folder: Path) -> tuple[Path, str]:
    """A database file, and refapi's cursor for the page after item ``DEEP_ID``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "template.db"
    store = SqliteStore(str(path))
    for n in range(ARTICLES):
        store.create_article(f"article {n}", ["bench"], 1_795_000_000.0)
    deep = encode_cursor(store.secret_key(), "items", DEEP_ID, store.reset_epoch())
    store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path, deep
