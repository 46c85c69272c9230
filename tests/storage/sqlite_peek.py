"""What the SQLite backend holds beneath the interface, read from its file.

For the tests that check what was stored and the interface does not show (how
many payments exist, a key or an amount as stored): the one place outside
tests/storage/test_sqlite_*.py that knows SQLite's tables. Reads open the file
afresh, read-only, so they see what every worker sees and touch no store's
connection.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

from refapi.storage.sqlite import SqliteStore


def rows(store: SqliteStore, sql: str, args: tuple = ()) -> list[tuple[Any, ...]]:
    uri = Path(store.path).resolve().as_uri() + "?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
        return conn.execute(sql, args).fetchall()


def payment_count(store: SqliteStore) -> int:
    return rows(store, "SELECT count(*) FROM payments")[0][0]
