"""The PostgreSQL schema: numbered migrations, the secret key and the seed.

The migrations are SQLite's numbers in PostgreSQL's dialect (``migrations/``, with
the shared ones of ``storage/migrations/``); ``schema_version`` records how far a
database has come. Hosts starting together migrate once: a start reads the version,
and only when it is behind takes a transaction-scoped advisory lock (waiting for
it with no statement timeout, as long as another host's migration takes), reads
the version again and applies what is still pending, the secret key and the seed,
all in that one transaction: a failure leaves the database as it was.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import psycopg

from ..dialect import Tx
from ..migrations import numbered
from ..seed import insert_seed

MIGRATIONS = Path(__file__).parent / "migrations"
# The advisory lock's key: one a schema, so hosts of different schemas (or the
# tests' schema a test) never wait for each other.
_LOCK = (
    "SELECT pg_advisory_xact_lock(hashtextextended('refapi:' || current_schema(), 0))"
)


def _version(conn: psycopg.Connection) -> int:
    if conn.execute("SELECT to_regclass('schema_version')").fetchone() == (None,):
        return 0
    row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
    return (row[0] if row else None) or 0


def pending(conn: psycopg.Connection, folder: Path = MIGRATIONS) -> bool:
    """Is there a migration to apply, or a secret key or seed to write?"""
    latest = numbered(folder)[-1][0]
    if _version(conn) < latest:
        return True
    found = conn.execute(
        "SELECT (SELECT 1 FROM meta WHERE key = 'secret_key'),"
        " (SELECT 1 FROM items LIMIT 1)"
    ).fetchone()
    return found is None or None in found


def migrate(conn: psycopg.Connection, folder: Path = MIGRATIONS) -> None:
    """Bring the database up to date, under the advisory lock, in one transaction.

    ``conn`` is a connection of its own, not the pool's, in autocommit mode.
    """
    if not pending(conn, folder):
        return
    with conn.transaction():
        # The lock may be held by a host migrating now: wait for it, however long.
        conn.execute("SET LOCAL statement_timeout = 0")
        conn.execute(_LOCK)
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version (version integer PRIMARY KEY)"
        )
        current = _version(conn)
        for number, script in numbered(folder):
            if number > current:
                try:
                    conn.execute(script.read_text())
                except psycopg.Error as exc:
                    exc.add_note(f"in the migration {script}")
                    raise
                conn.execute("INSERT INTO schema_version VALUES (%s)", (number,))
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('secret_key', %s)"
            " ON CONFLICT (key) DO NOTHING",
            (secrets.token_hex(32),),
        )
        if conn.execute("SELECT 1 FROM items LIMIT 1").fetchone() is None:
            # The seed's SQL has the store's placeholders (?); psycopg's are %s.
            insert_seed(Tx(conn, lambda sql: sql.replace("?", "%s")))
