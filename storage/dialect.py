"""What the SQL store asks of a database engine: the dialect.

The store's SQL is written once (``sql.py``, ``records.py``, ``credentials.py``),
with ``?`` placeholders; a dialect runs it. SQLite and PostgreSQL differ only where
the engines do, and that is all a dialect holds:

- **connections and transactions**: where a connection comes from (SQLite: one a
  thread, checked against the file at its path; PostgreSQL: a pool, one connection
  held for a request between ``hold`` and ``let_go``), and how a transaction that
  reads before it writes keeps others out (SQLite: ``BEGIN IMMEDIATE`` takes the
  database's write lock; PostgreSQL: ``FOR UPDATE`` on the rows read, a table lock
  where rows are not enough);
- **which errors mean what**: an outage of the environment (``StorageUnavailable``,
  a 503), a conflict with a concurrent write (a unique or foreign key violation),
  a lock waited for past a short wait;
- **what else is the engine's**: restarting ids after a reset, the credential
  generation (docs/authentication.md, "Remembered credentials") and where it is
  kept, and whether a text may hold U+0000.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from . import rows
from .remembered import Remembered

Row = Sequence[Any]


class Tx:
    """A connection inside one transaction, running the store's SQL; made by a
    dialect, which passes how to turn ``?`` into its placeholders."""

    __slots__ = ("conn", "sql")

    def __init__(self, conn: Any, sql: Callable[[str], str]) -> None:
        self.conn = conn
        self.sql = sql

    def one(self, sql: str, args: Sequence[Any] = ()) -> Any:
        return self.conn.execute(self.sql(sql), args).fetchone()

    def all(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        return list(self.conn.execute(self.sql(sql), args).fetchall())

    def run(self, sql: str, args: Sequence[Any] = ()) -> None:
        self.conn.execute(self.sql(sql), args)

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        cursor = self.conn.cursor()
        try:
            cursor.executemany(self.sql(sql), rows)
        finally:
            cursor.close()


class Dialect(Protocol):
    """One engine under the SQL store."""

    # Appended to a SELECT in a transaction that writes what it read: the rows
    # are held until it commits (PostgreSQL), or nothing, where the transaction
    # holds the whole database already (SQLite's BEGIN IMMEDIATE).
    for_update: str
    # The errors of a write refused by a unique index (an email taken by a
    # concurrent insert) and by a foreign key (a user deleted meanwhile).
    unique_violation: tuple[type[Exception], ...]
    foreign_key_violation: tuple[type[Exception], ...]
    # Whether a text can hold U+0000 (PostgreSQL's cannot): a lookup by such a
    # text finds nothing, as it does where it could be stored.
    holds_nul: bool

    def one(self, sql: str, args: Sequence[Any] = (), write: bool = False) -> Any:
        """The first row of one statement (its own transaction), or None;
        ``write``: it writes (SQLite then checks the file first)."""

    def all(self, sql: str, args: Sequence[Any] = ()) -> list[Any]: ...

    def run(self, sql: str, args: Sequence[Any] = ()) -> None:
        """One statement that writes and answers nothing."""

    def transaction(self) -> AbstractContextManager[Tx]:
        """A transaction that reads before it writes: committed whole, or rolled
        back; faults raised as ``StorageUnavailable``."""

    def changing_credentials(self) -> AbstractContextManager[Tx]:
        """A transaction that changes a credential: the credential generation
        moves with it, so every worker reads again what it remembers."""

    def credential_generation(self) -> Hashable | None:
        """The credential generation now; None when it cannot be read (then
        nothing is trusted from memory, and nothing is remembered)."""

    def remembered(self) -> Remembered:
        """Where the credentials found are remembered (SQLite: per connection,
        forgotten with a file replaced; PostgreSQL: per process)."""

    def cache(self) -> dict[str, Any]:
        """What is read once and kept (the secret key), for as long as the data
        it was read from (SQLite: per connection; PostgreSQL: per process)."""

    def lock_wait_given_up(self, exc: BaseException | None) -> bool:
        """Whether ``exc`` is a row lock waited for past the short wait (another
        request's uncommitted claim of an idempotency key): a 409, not a 503."""

    def lock_table(self, tx: Tx, table: str, exclusive: bool = False) -> None:
        """Queue writers of ``table`` behind this transaction (``exclusive``:
        readers too) until it commits."""

    def restart_ids(self, tx: Tx, tables: Sequence[str]) -> None:
        """Ids of these tables start again after the highest one left, at 1 when
        none is (a reset of the data)."""

    def hold(self) -> None: ...

    def let_go(self) -> None: ...

    def close(self) -> None: ...


class Queries:
    """What every part of the SQL store shares: its dialect, and the queries
    written once for any table (a keyset page, a delete by id)."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect

    def _page(
        self,
        table: str,
        columns: str,
        mapper: rows.Page,
        after: int,
        limit: int,
    ) -> list[dict[str, Any]]:
        """A keyset page of ``table`` in id order: the rows after ``after``, one
        past the page (``rows.page_size``), mapped by the page's ``mapper``."""
        found = self.dialect.all(
            f"SELECT {columns} FROM {table} WHERE id > ? ORDER BY id LIMIT ?",
            (after, rows.page_size(limit)),
        )
        return mapper(found)

    def _delete(self, table: str, record_id: int, credential: bool = False) -> bool:
        """Delete one row by id in one statement; whether there was one. A
        ``credential`` moves the credential generation with it."""
        sql = f"DELETE FROM {table} WHERE id = ? RETURNING 1"
        if not credential:
            return bool(self.dialect.one(sql, (record_id,), write=True))
        with self.dialect.changing_credentials() as tx:
            return bool(tx.one(sql, (record_id,)))

    def _unstorable(self, text: str) -> bool:
        """A text no row can hold (U+0000 where the engine's text cannot): a
        lookup by it finds nothing, without asking."""
        return not self.dialect.holds_nul and "\x00" in text
