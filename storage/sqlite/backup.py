"""A copy of a SQLite database taken while the service serves it: ``refapi backup
PATH`` (docs/operating.md, "Backups and restore").

SQLite's online backup copies every page in one step, so in one read transaction:
the copy is the database as it stood when that began, every write acknowledged
before it included, whatever other workers commit meanwhile. The copy is a new
file of mode 0600, made beside the target and then linked to its name, so it
appears whole or not at all, and a file already there is never replaced
(``FileExistsError``). Its data and its folder are flushed before the command says
it is done.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3

from .file import SqliteFile


def copy(file: SqliteFile, target: str) -> None:
    """Copy the database of ``file`` to ``target``, a new file."""
    draft = f"{target}.{os.getpid()}.partial"
    os.close(os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    try:
        with contextlib.closing(sqlite3.connect(draft)) as copied:
            source = file.connection(check=True)  # the file at the path
            try:
                source.backup(copied)  # pages=-1: every page in one step
            except sqlite3.Error as exc:  # the source's, or the copy's disk
                outage = file.outage(exc)
                if outage is not None:
                    raise outage from exc
                raise
        _fsync(draft)
        os.link(draft, target)  # never over a file
        _fsync(os.path.dirname(os.path.abspath(target)))
    finally:
        for leftover in (draft, f"{draft}-wal", f"{draft}-shm", f"{draft}-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(leftover)


def _fsync(path: str) -> None:
    """Flush ``path`` (a file or a folder) to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
