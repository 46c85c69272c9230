"""SQLite, the default: one file, WAL, shared safely by every worker of a host.

- WAL lets readers proceed while one writer commits; ``synchronous=NORMAL`` in WAL
  mode loses nothing when a process is killed (the WAL is in the OS page cache), only
  on a power cut, and makes a commit several times cheaper than ``FULL``.
- A transaction that reads before it writes takes ``BEGIN IMMEDIATE``: the
  database's write lock at once, so two writers queue on the busy timeout instead
  of one failing with "database is locked" when it upgrades its lock, and nothing
  it read can change before it commits (so no ``FOR UPDATE``, which SQLite lacks).
- The file itself (made at start, never while serving; checked against its path;
  which errors are faults) is ``file``'s business. Every statement here lets a
  fault out as ``StorageUnavailable``; a write asks for a checked connection.
- Connections are opened lazily, one per thread and process, so nothing is opened
  at import time and nothing crosses a ``fork``.
- The credential generation is kept in the bucket file's shared memory
  (``buckets.py``): read with no SQL and no lock, moved once a change is committed.
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
from collections.abc import Hashable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..base import StorageUnavailable
from ..dialect import Tx
from ..remembered import Remembered
from ..sql import SqlStore
from . import backup
from .buckets import SharedBuckets, SqliteBuckets
from .file import BUSY_TIMEOUT_S, SqliteFile
from .schema import MIGRATIONS, migrate


class SqliteDialect:
    for_update = ""  # BEGIN IMMEDIATE holds the whole database already
    # A unique index or a foreign key: SQLite says IntegrityError for both.
    unique_violation: tuple[type[Exception], ...] = (sqlite3.IntegrityError,)
    foreign_key_violation: tuple[type[Exception], ...] = (sqlite3.IntegrityError,)
    holds_nul = True

    def __init__(self, file: SqliteFile, shared: SharedBuckets) -> None:
        self.file = file
        self.shared = shared

    def one(self, sql: str, args: Sequence[Any] = (), write: bool = False) -> Any:
        conn = self.file.connection(write)
        try:
            if not write:
                return conn.execute(sql, args).fetchone()
            with self.file.turn:  # docs/operating.md, "When storage fails"
                return conn.execute(sql, args).fetchone()
        except sqlite3.Error as exc:
            self._fault(exc)
            raise  # a bug, not an outage: a 500

    def all(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        conn = self.file.connection()
        try:
            return conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            self._fault(exc)
            raise

    def run(self, sql: str, args: Sequence[Any] = ()) -> None:
        conn = self.file.connection(check=True)
        try:
            with self.file.turn:
                conn.execute(sql, args)
        except sqlite3.Error as exc:
            self._fault(exc)
            raise

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Tx]:
        conn = self.file.connection(check=True)
        with self.file.turn:
            try:
                conn.execute("BEGIN IMMEDIATE")
                yield Tx(conn, str)  # SQLite's placeholders are the store's own: ?
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:  # a failed COMMIT may leave it open
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    self._fault(exc)
                raise

    @contextlib.contextmanager
    def changing_credentials(self) -> Iterator[Tx]:
        with self.transaction() as tx:
            yield tx
        # Once committed: a worker that reads the new number reads the change too.
        try:
            self.shared.bump()
        except OSError as exc:
            # Committed, but other workers may still trust what they remember.
            raise StorageUnavailable(f"rate-limit buckets: {exc}") from exc

    def credential_generation(self) -> Hashable | None:
        try:
            number = self.shared.generation()
        except OSError:
            return None  # the limiter reports the file; the lookup goes on
        # With the count of files opened: another file (a copy put back) may hold
        # the very number this one had when a credential was remembered.
        return (self.shared.opened, number)

    def remembered(self) -> Remembered:
        # Per connection: a database file replaced under the service (a restored
        # backup) is reopened with a new cache, forgetting the old file's answers.
        cache = self.file.cache()
        if "credentials" not in cache:
            cache["credentials"] = Remembered()
        memory: Remembered = cache["credentials"]
        return memory

    def cache(self) -> dict[str, Any]:
        return self.file.cache()

    def lock_wait_given_up(self, exc: BaseException | None) -> bool:
        return False  # a held write lock past the busy timeout is an outage (503)

    def lock_table(self, tx: Tx, table: str, exclusive: bool = False) -> None:
        pass  # BEGIN IMMEDIATE holds the whole database already

    def restart_ids(self, tx: Tx, tables: Sequence[str]) -> None:
        # Without its row, AUTOINCREMENT goes on from the highest id left.
        marks = ", ".join("?" for _ in tables)
        tx.run(f"DELETE FROM sqlite_sequence WHERE name IN ({marks})", tuple(tables))

    def hold(self) -> None:
        pass  # each thread has its connection already (file.py)

    def let_go(self) -> None:
        pass

    def close(self) -> None:
        self.shared.close()
        self.file.close()

    def _fault(self, exc: sqlite3.Error) -> None:
        outage = self.file.outage(exc)
        if outage is not None:
            raise outage from exc


class SqliteStore(SqlStore):
    """The store over one SQLite file; creating it prepares the file (at start).
    The rate limiter's buckets are ``<path>.buckets`` beside it."""

    pooled = False  # each thread has its connection (file.py): nothing to hold

    def __init__(
        self,
        path: str,
        *,
        busy_timeout_s: float = BUSY_TIMEOUT_S,
        migrations: Path = MIGRATIONS,
    ) -> None:
        self.path = path
        file = SqliteFile(
            path, functools.partial(migrate, folder=migrations), busy_timeout_s
        )
        # Placed by the store's secret key, read at the first take: a start that
        # cannot read the database still starts (file.py).
        shared = SharedBuckets(path + ".buckets", self.secret_key, busy_timeout_s)
        super().__init__(SqliteDialect(file, shared), SqliteBuckets(shared))
        self.file = file
        file.start()

    def backup(self, target: str) -> None:
        """Copy the database to ``target`` while serving (``backup.py``)."""
        backup.copy(self.file, target)
