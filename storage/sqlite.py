"""SQLite backend, the default: one file, WAL, shared safely by every worker of a host.

- WAL lets readers proceed while one writer commits; ``synchronous=NORMAL`` in WAL
  mode loses nothing when a process is killed (the WAL is in the OS page cache), only
  on a power cut, and makes a commit several times cheaper than ``FULL``.
- Writes that read first take ``BEGIN IMMEDIATE``, so two writers queue on the busy
  timeout instead of one failing with "database is locked" when it upgrades its lock.
- The file itself (made at start, never while serving; checked against its path;
  faults turned into ``StorageUnavailable``) is ``sqlite_file``'s business: every
  method here is ``_guarded``, and every write asks for a checked connection.
- Connections are opened lazily, one per thread and process, so nothing is opened
  at import time and nothing crosses a ``fork``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sqlite3
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any, Concatenate, ParamSpec, TypeVar

from .base import KEY_TTL_S, Check, Idempotent, Record, StorageUnavailable
from .buckets import SharedBuckets
from .sqlite_file import BUSY_TIMEOUT_S, SqliteFile
from .sqlite_schema import migrate, seed

# A write that proves writes work (lock, file mode, room on disk) and leaves one row.
_PROBE = (
    "INSERT INTO meta (key, value) VALUES ('probe', hex(randomblob(8)))"
    " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)

P = ParamSpec("P")
R = TypeVar("R")


def _guarded(
    method: Callable[Concatenate[SqliteStore, P], R],
) -> Callable[Concatenate[SqliteStore, P], R]:
    """Let a fault of the environment out as ``StorageUnavailable`` (a 503)."""

    @functools.wraps(method)
    def guarded(self: SqliteStore, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            outage = self._file.outage(exc)
            if outage is None:
                raise  # a bug, not an outage: a 500
            raise outage from exc

    return guarded


def _article(row: tuple) -> Record:
    return {
        "id": row[0],
        "title": row[1],
        "tags": json.loads(row[2]),
        "createdAt": row[3],
        "updatedAt": row[4],
    }


_ARTICLE_COLUMNS = "id, title, tags, created_at, updated_at"
_INSERT_PAYMENT = (
    "INSERT INTO payments (id, amount, currency, created_at, scope, idempotency_key,"
    " fingerprint, status, body, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class SqliteStore:
    """The store over one SQLite file; creating it prepares the file (at start)."""

    def __init__(self, path: str, *, busy_timeout_s: float = BUSY_TIMEOUT_S) -> None:
        self.path = path
        self._file = SqliteFile(path, migrate, busy_timeout_s)
        self._buckets = SharedBuckets(path + ".buckets")
        self._next_key_cleanup = 0.0
        self._file.start()

    def _connection(self, write: bool = False) -> sqlite3.Connection:
        """This thread's connection; a write's first checks the file at the path."""
        return self._file.connection(check=write)

    def _one(self, sql: str, args: tuple = (), write: bool = False) -> Any:
        return self._file.connection(write).execute(sql, args).fetchone()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        conn = self._connection(write=True)
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # a failed COMMIT may leave it open
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            raise

    # -- the interface ----------------------------------------------------------

    @_guarded
    def ping(self) -> None:
        self._one(_PROBE, write=True)

    def ping_rate_limit(self) -> None:
        try:
            self._buckets.check()
        except OSError as exc:
            raise StorageUnavailable(f"rate-limit buckets: {exc}") from exc

    @_guarded
    def secret_key(self) -> bytes:
        cache = self._file.cache()  # per connection: a restored file brings its own
        if "secret" not in cache:
            row = self._one("SELECT value FROM meta WHERE key = 'secret_key'")
            if row is None:
                raise StorageUnavailable("the database holds no secret key")
            cache["secret"] = bytes.fromhex(row[0])
        return cache["secret"]

    @_guarded
    def list_articles(self, after: int, limit: int) -> list[Record]:
        rows = self._file.connection().execute(
            f"SELECT {_ARTICLE_COLUMNS} FROM articles WHERE id > ? ORDER BY id LIMIT ?",
            (after, limit + 1),
        )
        return [_article(row) for row in rows]

    @_guarded
    def get_article(self, article_id: int) -> Record | None:
        row = self._one(
            f"SELECT {_ARTICLE_COLUMNS} FROM articles WHERE id = ?", (article_id,)
        )
        return _article(row) if row else None

    @_guarded
    def create_article(self, title: str, tags: list[str], now: str) -> Record:
        # One statement is one implicit transaction: no read-then-write to upgrade.
        row = self._one(
            "INSERT INTO articles (title, tags, created_at, updated_at)"
            f" VALUES (?, ?, ?, ?) RETURNING {_ARTICLE_COLUMNS}",
            (title, json.dumps(tags, ensure_ascii=False), now, now),
            write=True,
        )
        return _article(row)

    @_guarded
    def update_article(
        self, article_id: int, changes: Record, now: str, check: Check
    ) -> Record | None:
        with self._write() as conn:
            row = conn.execute(
                f"SELECT {_ARTICLE_COLUMNS} FROM articles WHERE id = ?", (article_id,)
            ).fetchone()
            if row is None:
                return None
            current = _article(row)
            check(current)
            updated = {**current, **changes}
            if updated == current:
                return current
            updated["updatedAt"] = now
            conn.execute(
                "UPDATE articles SET title = ?, tags = ?, updated_at = ? WHERE id = ?",
                (
                    updated["title"],
                    json.dumps(updated["tags"], ensure_ascii=False),
                    now,
                    article_id,
                ),
            )
            return updated

    @_guarded
    def delete_article(self, article_id: int, check: Check) -> bool:
        with self._write() as conn:
            row = conn.execute(
                f"SELECT {_ARTICLE_COLUMNS} FROM articles WHERE id = ?", (article_id,)
            ).fetchone()
            if row is None:
                return False
            check(_article(row))
            conn.execute("DELETE FROM articles WHERE id = ?", (article_id,))
            return True

    @_guarded
    def get_todo(self, todo_id: int) -> Record | None:
        row = self._one(
            "SELECT user_id, id, title, completed FROM todos WHERE id = ?", (todo_id,)
        )
        if row is None:
            return None
        return {
            "userId": row[0],
            "id": row[1],
            "title": row[2],
            "completed": bool(row[3]),
        }

    @_guarded
    def list_items(self, after: int, limit: int) -> list[Record]:
        rows = self._file.connection().execute(
            "SELECT id, name, created_at FROM items WHERE id > ? ORDER BY id LIMIT ?",
            (after, limit + 1),
        )
        return [{"id": r[0], "name": r[1], "createdAt": r[2]} for r in rows]

    @_guarded
    def create_payment(
        self,
        scope: str,
        key: str,
        fingerprint: str,
        payment: Record,
        body: bytes,
        now: float,
    ) -> Idempotent:
        row = (
            payment["id"], str(payment["amount"]), payment["currency"],
            payment["createdAt"], scope, key, fingerprint, 201, body, now,
        )  # fmt: skip
        first_time = Idempotent(fingerprint, 201, body, payment["id"], replayed=False)
        self._expire_keys(now)
        # One statement, one implicit transaction; writers queue on the busy timeout.
        if self._one(
            _INSERT_PAYMENT + " ON CONFLICT DO NOTHING RETURNING 1", row, write=True
        ):
            return first_time
        with self._write() as conn:
            first = conn.execute(
                "SELECT fingerprint, status, body, id, created FROM payments"
                " WHERE scope = ? AND idempotency_key = ?",
                (scope, key),
            ).fetchone()
            if first is not None and first[4] >= now - KEY_TTL_S:
                return Idempotent(first[0], first[1], bytes(first[2]), first[3], True)
            # The key expired and was not yet cleaned up: free it and start afresh.
            conn.execute(
                "UPDATE payments SET idempotency_key = NULL"
                " WHERE scope = ? AND idempotency_key = ?",
                (scope, key),
            )
            conn.execute(_INSERT_PAYMENT, row)
            return first_time

    def _expire_keys(self, now: float) -> None:
        """Free the keys of payments older than 24 hours, at most once a minute."""
        if now < self._next_key_cleanup:
            return
        self._next_key_cleanup = now + 60
        # A range of the partial index on live keys' creation times (migration 003).
        self._one(
            "UPDATE payments SET idempotency_key = NULL"
            " WHERE idempotency_key IS NOT NULL AND created < ?",
            (now - KEY_TTL_S,),
            write=True,
        )

    @_guarded
    def get_payment(self, payment_id: str) -> Record | None:
        row = self._one(
            "SELECT id, amount, currency, created_at FROM payments WHERE id = ?",
            (payment_id,),
        )
        if row is None:
            return None
        return {
            "id": row[0],
            "amount": Decimal(row[1]),
            "currency": row[2],
            "createdAt": row[3],
        }

    def take_token(
        self, key: str, capacity: int, refill: float, now: float
    ) -> tuple[bool, float]:
        try:
            return self._buckets.take(key, capacity, refill, now)
        except OSError as exc:
            raise StorageUnavailable(f"rate-limit buckets: {exc}") from exc

    @_guarded
    def reset(self) -> None:
        with self._write() as conn:
            for table in ("payments", "articles", "todos", "items"):
                conn.execute(f"DELETE FROM {table}")
            conn.execute("DELETE FROM sqlite_sequence WHERE name = 'articles'")
            seed(conn)

    def close(self) -> None:
        self._buckets.close()
        self._file.close()
