"""PostgreSQL: one database shared by every worker of several hosts.

The connections (a pool a process, bounded waits, faults as outages) are
``connections.py``'s; this runs the SQL store's statements on them:

- **Placeholders**: the store writes ``?``; psycopg takes ``%s``. Each statement
  is converted once and remembered.
- **Holding what was read**: a transaction that writes what it read holds those
  rows with ``SELECT ... FOR UPDATE``; where rows are not enough (the notes kept
  to the newest, a reset restarting ids), a table lock.
- **Conflicts**: a unique or foreign key violation is the write a concurrent one
  refused; a row lock waited for past ``LOCK_WAIT_MS`` is given up (``55P03``).
- **The credential generation** is a row (migration 011), moved first in the
  transaction of every change to a credential, so such transactions queue on it
  before they lock any other row (never in a circle), and read by a statement of
  its own before a credential is answered from memory.
- **Text**: PostgreSQL's cannot hold U+0000.
"""

from __future__ import annotations

import contextlib
from collections.abc import Hashable, Iterator, Sequence
from typing import Any

from psycopg import errors as pgerrors

from ..dialect import Tx
from ..remembered import Remembered
from ..sql import SqlStore
from .buckets import PostgresBuckets
from .connections import Connections

_BUMP = "UPDATE credential_generation SET value = value + 1"


class PostgresDialect:
    for_update = " FOR UPDATE"
    unique_violation: tuple[type[Exception], ...] = (pgerrors.UniqueViolation,)
    foreign_key_violation: tuple[type[Exception], ...] = (pgerrors.ForeignKeyViolation,)
    holds_nul = False

    def __init__(self, connections: Connections) -> None:
        self.connections = connections
        self._converted: dict[str, str] = {}
        self._remembered = Remembered()
        self._cache: dict[str, Any] = {}

    def _sql(self, sql: str) -> str:
        """``sql`` with psycopg's placeholders (``%s``; a literal ``%`` doubled)."""
        converted = self._converted.get(sql)
        if converted is None:
            converted = sql.replace("%", "%%").replace("?", "%s")
            self._converted[sql] = converted
        return converted

    def one(self, sql: str, args: Sequence[Any] = (), write: bool = False) -> Any:
        with self.connections.connection() as conn:
            return conn.execute(self._sql(sql), args).fetchone()

    def all(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        with self.connections.connection() as conn:
            return conn.execute(self._sql(sql), args).fetchall()

    def run(self, sql: str, args: Sequence[Any] = ()) -> None:
        with self.connections.connection() as conn:
            conn.execute(self._sql(sql), args)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Tx]:
        with self.connections.connection() as conn, conn.transaction():
            yield Tx(conn, self._sql)

    @contextlib.contextmanager
    def changing_credentials(self) -> Iterator[Tx]:
        with self.transaction() as tx:
            tx.run(_BUMP)  # first: see the module's docstring
            yield tx

    def credential_generation(self) -> Hashable | None:
        row = self.one("SELECT value FROM credential_generation")
        return row[0] if row else None  # without the row, nothing is remembered

    def remembered(self) -> Remembered:
        return self._remembered

    def cache(self) -> dict[str, Any]:
        return self._cache

    def lock_wait_given_up(self, exc: BaseException | None) -> bool:
        return isinstance(exc, pgerrors.LockNotAvailable)

    def lock_table(self, tx: Tx, table: str, exclusive: bool = False) -> None:
        mode = "EXCLUSIVE" if exclusive else "SHARE ROW EXCLUSIVE"
        tx.run(f"LOCK TABLE {table} IN {mode} MODE")

    def restart_ids(self, tx: Tx, tables: Sequence[str]) -> None:
        for table in tables:  # a sequence's restart is not transactional: locked
            tx.run(
                "SELECT setval(pg_get_serial_sequence(?, 'id'),"
                f" coalesce(max(id), 0) + 1, false) FROM {table}",
                (table,),
            )

    def hold(self) -> None:
        self.connections.hold()

    def let_go(self) -> None:
        self.connections.let_go()

    def close(self) -> None:
        self.connections.close()


class PostgresStore(SqlStore):
    """The store over one PostgreSQL database (or a schema of one, by the URL's
    ``search_path``); creating it migrates the database when it can. The rate
    limiter's buckets are rows of the same database."""

    def __init__(self, url: str, **settings: Any) -> None:
        """``settings``: the pool's (``Connections``: pool_max, pool_timeout,
        statement_timeout)."""
        self.url = url
        connections = Connections(url, **settings)
        super().__init__(PostgresDialect(connections), PostgresBuckets(connections))
