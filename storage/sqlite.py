"""SQLite backend, the default: one file, WAL, shared safely by every worker of a host.

- WAL lets readers proceed while one writer commits; ``synchronous=NORMAL`` in WAL
  mode loses nothing when a process is killed (the WAL is in the OS page cache), only
  on a power cut, and makes a commit several times cheaper than ``FULL``.
- Writes that read first take ``BEGIN IMMEDIATE``, so two writers queue on the busy
  timeout instead of one failing with "database is locked" when it upgrades its lock.
- Setting up a new file races: switching to WAL needs an exclusive lock, and four
  workers booting at once would trip over each other. The first connection of each
  process therefore migrates under an exclusive ``flock`` on a lock file beside the
  database; after that, every connection is plain.
- Connections are opened lazily, one per thread and process, so nothing is opened
  at import time and nothing crosses a ``fork``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import sqlite3
import threading
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

from . import seed
from .base import KEY_TTL_S, Check, Idempotent, Record, StorageUnavailable
from .buckets import SharedBuckets

MIGRATIONS = Path(__file__).parent / "migrations"
BUSY_TIMEOUT_S = 30.0


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
    def __init__(self, path: str) -> None:
        self.path = path
        self._local = threading.local()
        self._migrated_pid = 0
        self._secret: bytes | None = None
        self._buckets = SharedBuckets(path + ".buckets")
        self._next_key_cleanup = 0.0

    # -- connections ------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        local = self._local
        if getattr(local, "pid", 0) != os.getpid():
            local.conn = self._connect()
            local.pid = os.getpid()
        return local.conn

    def _connect(self) -> sqlite3.Connection:
        try:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            if self._migrated_pid != os.getpid():
                self._migrate()
                self._migrated_pid = os.getpid()
            conn = sqlite3.connect(
                self.path,
                timeout=BUSY_TIMEOUT_S,
                isolation_level=None,
                check_same_thread=False,
            )
            conn.execute("PRAGMA synchronous=NORMAL")
        except (OSError, sqlite3.Error) as exc:
            raise StorageUnavailable(str(exc)) from exc
        return conn

    def _one(self, sql: str, args: tuple = ()) -> Any:
        return self._connection().execute(sql, args).fetchone()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _migrate(self) -> None:
        """Apply pending numbered migrations and the seed, one process at a time."""
        with open(self.path + ".lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None
            )
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                current = conn.execute("PRAGMA user_version").fetchone()[0]
                for script in sorted(MIGRATIONS.glob("[0-9][0-9][0-9]_*.sql")):
                    number = int(script.name[:3])
                    if number > current:
                        conn.executescript(
                            f"BEGIN IMMEDIATE;\n{script.read_text()}\n"
                            f"PRAGMA user_version = {number};\nCOMMIT;"
                        )
                conn.execute("BEGIN IMMEDIATE")
                conn.execute(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES ('secret_key', ?)",
                    (secrets.token_hex(32),),
                )
                if conn.execute("SELECT count(*) FROM items").fetchone()[0] == 0:
                    self._seed(conn)
                conn.execute("COMMIT")
            finally:
                conn.close()

    @staticmethod
    def _seed(conn: sqlite3.Connection) -> None:
        conn.executemany("INSERT INTO todos VALUES (?, ?, ?, ?)", seed.todos())
        conn.executemany("INSERT INTO items VALUES (?, ?, ?)", seed.items())

    # -- the interface ----------------------------------------------------------

    def ping(self) -> None:
        try:
            self._connection().execute("SELECT 1 FROM meta LIMIT 1").fetchall()
        except sqlite3.Error as exc:
            raise StorageUnavailable(str(exc)) from exc

    def secret_key(self) -> bytes:
        if self._secret is None:
            row = self._one("SELECT value FROM meta WHERE key = 'secret_key'")
            if row is None:
                raise StorageUnavailable("the database holds no secret key")
            self._secret = bytes.fromhex(row[0])
        return self._secret

    def list_articles(self, after: int, limit: int) -> list[Record]:
        rows = self._connection().execute(
            f"SELECT {_ARTICLE_COLUMNS} FROM articles WHERE id > ? ORDER BY id LIMIT ?",
            (after, limit + 1),
        )
        return [_article(row) for row in rows]

    def get_article(self, article_id: int) -> Record | None:
        row = self._one(
            f"SELECT {_ARTICLE_COLUMNS} FROM articles WHERE id = ?", (article_id,)
        )
        return _article(row) if row else None

    def create_article(self, title: str, tags: list[str], now: str) -> Record:
        # One statement is one implicit transaction: no read-then-write to upgrade.
        row = self._one(
            "INSERT INTO articles (title, tags, created_at, updated_at)"
            f" VALUES (?, ?, ?, ?) RETURNING {_ARTICLE_COLUMNS}",
            (title, json.dumps(tags, ensure_ascii=False), now, now),
        )
        return _article(row)

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

    def list_items(self, after: int, limit: int) -> list[Record]:
        rows = self._connection().execute(
            "SELECT id, name, created_at FROM items WHERE id > ? ORDER BY id LIMIT ?",
            (after, limit + 1),
        )
        return [{"id": r[0], "name": r[1], "createdAt": r[2]} for r in rows]

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
        if self._one(_INSERT_PAYMENT + " ON CONFLICT DO NOTHING RETURNING 1", row):
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
        self._connection().execute(
            "UPDATE payments SET idempotency_key = NULL"
            " WHERE idempotency_key IS NOT NULL AND created < ?",
            (now - KEY_TTL_S,),
        )

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
            raise StorageUnavailable(str(exc)) from exc

    def reset(self) -> None:
        with self._write() as conn:
            for table in ("payments", "articles", "todos", "items"):
                conn.execute(f"DELETE FROM {table}")
            conn.execute("DELETE FROM sqlite_sequence WHERE name = 'articles'")
            self._seed(conn)

    def close(self) -> None:
        self._buckets.close()
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.pid = 0
