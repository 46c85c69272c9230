"""Seeded schemas for the in-process tests on PostgreSQL: a fresh one's state, cheaper.

A new schema costs its migrations, about a quarter of a second of DDL, most of what
a test costs on PostgreSQL. So the store migrates and seeds one template schema
once a session, and each test gets a schema in exactly that state: a new one the
first time, then one an earlier test used, put back into the template's state
before it is handed out again. Besides the plain seed (``"plain"``), a template may
hold more (``add_template``: tests/conftest.py adds one with the first admin logged
in, as SQLite's seeded copies have). Putting back changes rows, never structure:
every table emptied and refilled from the template's, in one transaction with
triggers and foreign keys off (``session_replication_role``), every sequence set
where the template's stands, and the secret key deleted, so that the store makes
one of its own at the next start, as in a new database. A schema whose structure
differs from the template's (its tables, columns, indexes or triggers) is dropped,
not reused.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Iterator

import psycopg
from psycopg import sql

from refapi.storage import open_store
from tests.postgres import in_schema, server_url

# What a schema is made of, compared with the template's before a reuse: each of
# the template's relations (tables, indexes, sequences) with its kind, its number
# of columns and of triggers. Looked up by name, through pg_class's index: the
# tests' server makes and drops thousands of schemas, and a scan of its catalog by
# schema costs more than the refill.
STRUCTURE = """
SELECT coalesce(string_agg(
    c.relname || ':' || c.relkind::text || ':' || c.relnatts || ':'
        || (SELECT count(*) FROM pg_trigger t
            WHERE t.tgrelid = c.oid AND NOT t.tgisinternal),
    ',' ORDER BY c.relname), '')
FROM pg_class c
WHERE c.relname = ANY(%(names)s) AND c.relnamespace = %(schema)s::regnamespace
"""


class SeededSchemas:
    """Schemas in the seeded state on the tests' server, dropped at ``close()``."""

    def __init__(self) -> None:
        self.server = server_url()
        # One connection for the session: a new one's first queries fill its caches.
        self.conn = psycopg.connect(self.server, autocommit=True)
        # A schema still locked by a test's connection is an error, not a hang.
        self.conn.execute("SET lock_timeout = '5s'")
        self.made: list[str] = []
        self.free: list[str] = []
        self.templates: dict[str, tuple[str, list[tuple]]] = {}
        self.added: dict[str, object] = {}  # what each template's ``make`` returned
        plain = self._migrated()
        self.relations = [
            row[0]
            for row in self.conn.execute(
                "SELECT relname FROM pg_class WHERE relnamespace = %s::regnamespace",
                (plain,),
            )
        ]
        self.structure = self._structure(plain)
        self.tables = [
            row[0]
            for row in self.conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s", (plain,)
            )
        ]
        self.templates["plain"] = (plain, self._sequences(plain))

    def add_template(self, name: str, make: Callable[[str], object]) -> object:
        """Another template: a seeded schema to which ``make(url)`` adds what it
        will (an admin, logged in); what ``make`` returns."""
        schema = self._migrated()
        self.added[name] = make(in_schema(self.server, schema))
        self.templates[name] = (schema, self._sequences(schema))
        return self.added[name]

    @contextlib.contextmanager
    def schema(self, template: str = "plain") -> Iterator[str]:
        """The URL of a schema in the template's state, the test's until it ends."""
        name = self._take(template)
        try:
            yield in_schema(self.server, name)
        finally:
            self.free.append(name)

    def close(self) -> None:
        with self.conn:
            for name in self.made:
                _drop(self.conn, name)

    def _create(self) -> str:
        name = f"t_{secrets.token_hex(6)}"
        self.conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
        self.made.append(name)
        return name

    def _migrated(self) -> str:
        """A new schema, migrated and seeded by the store."""
        name = self._create()
        store = open_store(in_schema(self.server, name))
        try:
            store.ping()
        finally:
            store.close()
        return name

    def _sequences(self, schema: str) -> list[tuple]:
        return self.conn.execute(
            "SELECT sequencename, last_value, start_value FROM pg_sequences"
            " WHERE schemaname = %s",
            (schema,),
        ).fetchall()

    def _take(self, template: str) -> str:
        """A used schema put back into the template's state; else a new one, made
        so by the same refill (an empty schema the store has migrated)."""
        while self.free:
            name = self.free.pop()
            if self._structure(name) == self.structure:
                self._refill(name, template)
                return name
            _drop(self.conn, name)
            self.made.remove(name)
        name = self._migrated()
        self._refill(name, template)
        return name

    def _structure(self, schema: str) -> str:
        found = self.conn.execute(
            STRUCTURE, {"names": self.relations, "schema": schema}
        ).fetchone()
        return found[0] if found else ""

    def _refill(self, name: str, template: str) -> None:
        """Give schema ``name`` the template's rows and sequences, and no secret key."""
        conn, (source_name, sequences) = self.conn, self.templates[template]
        into, source = sql.Identifier(name), sql.Identifier(source_name)
        with conn.transaction():
            conn.execute("SET LOCAL session_replication_role = replica")
            for table in map(sql.Identifier, self.tables):
                conn.execute(sql.SQL("DELETE FROM {}.{}").format(into, table))
                conn.execute(
                    sql.SQL(
                        "INSERT INTO {}.{} OVERRIDING SYSTEM VALUE SELECT * FROM {}.{}"
                    ).format(into, table, source, table)
                )
            for sequence, last, start in sequences:
                # Where the template's stands: its last value taken, or none yet.
                qualified = sql.Identifier(name, sequence).as_string(conn)
                conn.execute(
                    "SELECT setval(%s::regclass, %s, %s)",
                    (qualified, start if last is None else last, last is not None),
                )
            conn.execute(
                sql.SQL("DELETE FROM {}.meta WHERE key = 'secret_key'").format(into)
            )


def _drop(conn: psycopg.Connection, name: str) -> None:
    conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(name)))
