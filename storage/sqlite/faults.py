"""Which of SQLite's errors are outages, and how one is told; ``file.py`` asks it
of every error (docs/operating.md, "When storage fails").

``is_outage(exc)``: SQLite's errors of the environment (locked, read-only, I/O,
disk full, cannot open, corrupt) are outages, ``StorageUnavailable`` (a ``503``);
anything else, such as a missing table, stays an error (a ``500``). ``PASSING``:
the outages after which the connection is fine as it is. ``unavailable``: the
outage an error met while opening is, named by its cause.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from ..base import StorageUnavailable

OUTAGES = {
    sqlite3.SQLITE_BUSY,
    sqlite3.SQLITE_LOCKED,
    sqlite3.SQLITE_PERM,
    sqlite3.SQLITE_READONLY,
    sqlite3.SQLITE_IOERR,
    sqlite3.SQLITE_CORRUPT,
    sqlite3.SQLITE_FULL,
    sqlite3.SQLITE_CANTOPEN,
    sqlite3.SQLITE_PROTOCOL,
    sqlite3.SQLITE_NOTADB,
}
# The connection itself is fine: the lock is held, the disk is full. (Reopening
# would also close it, and the last connection to close checkpoints its WAL.)
PASSING = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_FULL}


def primary_code(exc: sqlite3.Error) -> int | None:
    """SQLite's primary result code of ``exc`` (the extended code's low byte)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


def is_outage(exc: sqlite3.Error) -> bool:
    """Is ``exc`` a fault of the environment (locked, read-only, I/O, full, cannot
    open, corrupt), rather than of our SQL (no such table, a syntax error, a
    constraint) or of our use of the module (a closed connection)?"""
    return primary_code(exc) in OUTAGES


def unavailable(path: str, doing: str, exc: OSError | sqlite3.Error) -> Exception:
    """The outage ``exc`` is, named by its cause; a migration that fails is a bug,
    returned as it is (a 500)."""
    if isinstance(exc, sqlite3.Error) and not is_outage(exc):
        return exc
    folder = Path(path).parent
    if not folder.is_dir():
        return StorageUnavailable(f"{doing} {path}: {folder} is missing")
    if not os.access(folder, os.W_OK | os.X_OK):
        # SQLite makes the -wal and -shm beside the database, even to read it.
        return StorageUnavailable(
            f"{doing} {path}: its folder {folder} is not writable ({exc})"
        )
    return StorageUnavailable(f"{doing} {path}: {exc}")
