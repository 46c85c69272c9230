"""The SQLite schema: numbered migrations, the secret key and the seed.

``migrations/NNN_*.sql`` (with the shared ones of ``storage/migrations/``) are
applied in order, each in its own transaction with
``PRAGMA user_version`` set to its number, so a database records how far it has
come and a newer release brings an older file (a restored backup, say) up to date.
"""

from __future__ import annotations

import secrets
import sqlite3
from pathlib import Path

from ..dialect import Tx
from ..migrations import numbered
from ..seed import insert_seed

MIGRATIONS = Path(__file__).parent / "migrations"


def migrate(conn: sqlite3.Connection, folder: Path = MIGRATIONS) -> None:
    """Apply pending numbered migrations from ``folder``, the secret key and the seed.

    The caller holds the data folder's lock, so one process migrates at a time.
    Nothing is written that is already there, so a read-only database still opens.
    A migration that fails is rolled back whole and raised, naming its file.
    """
    if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        conn.execute("PRAGMA journal_mode=WAL")
    current = conn.execute("PRAGMA user_version").fetchone()[0]
    for number, script in numbered(folder):
        if number > current:
            try:
                conn.executescript(
                    f"BEGIN IMMEDIATE;\n{script.read_text()}\n"
                    f"PRAGMA user_version = {number};\nCOMMIT;"
                )
            except sqlite3.Error as exc:
                # executescript stops at the failing statement, inside the BEGIN.
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                exc.add_note(f"in the migration {script}")
                raise
    has_key = conn.execute("SELECT 1 FROM meta WHERE key = 'secret_key'").fetchone()
    seeded = conn.execute("SELECT 1 FROM items LIMIT 1").fetchone()
    if has_key and seeded:
        return
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(
        "INSERT OR IGNORE INTO meta (key, value) VALUES ('secret_key', ?)",
        (secrets.token_hex(32),),
    )
    if conn.execute("SELECT count(*) FROM items").fetchone()[0] == 0:
        insert_seed(Tx(conn, str))
    conn.execute("COMMIT")
