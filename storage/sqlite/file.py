"""The SQLite file under the store: made once at start, checked while serving.

- **Made once.** ``start()`` creates the data folder (``0700``) and the
  database (``0600``; SQLite gives its ``-wal`` and ``-shm`` the same mode), and
  migrates it under an exclusive ``flock`` on the data folder, so workers booting
  together take turns. Every process holds a shared ``flock`` on ``<db>.lock``
  (``0600``) for its life; one that starts (a late or respawned worker) while
  others hold it creates nothing. While serving, connections open with SQLite's
  ``mode=rw``, which never creates a file, and the folder is never created. So a
  database deleted under a running service stays missing (``503``) instead of
  coming back empty and handing out its ids a second time. The one exception is a
  folder where no database was ever made (a first start that could not write
  there): ``<db>.lock`` is made before the database and records every database
  opened there, and the service never removes it, so while it records none (and is
  the one this process has held, if any), the database is made while serving, under
  the folder's lock (docs/operating.md, "When storage fails").
- **The open file is the file at the path.** A connection remembers the device and
  inode of the file it opened. Before every write, on every health check and at
  most once a second otherwise, the path is looked at again: missing is
  ``StorageUnavailable``; another file there (a restored backup) is opened in
  place of the old one, so no worker goes on alone with an unlinked file. The
  look is one ``stat`` of the folder while its stamp is the one kept at the last
  full look of the three files (``locks.folder_stamp``: a name added, removed or
  replaced changes it; docs/operating.md, "When storage fails").
- **The logs follow the file.** A -wal or -shm left by a deleted file is never
  paired with the file restored in its place, and one deleted under the service is
  folded into the database, not forked: ``locks.py`` says how, through what
  ``<db>.lock`` records.
- **Waiting is short.** A held write lock (a backup, ``make reset``) is waited for
  ``BUSY_TIMEOUT_S``, well under gunicorn's 30 s worker timeout; then the request
  is ``503`` with ``Retry-After``. Readers never wait in WAL mode.
- **Faults are outages, bugs are bugs.** ``outage(exc)`` turns SQLite's errors of
  the environment (locked, read-only, I/O, disk full, cannot open, corrupt; which
  they are is ``faults.py``'s) into ``StorageUnavailable``; anything else, such as
  a missing table, stays an error (a 500). So does a migration that fails: at start
  it stops the process (under gunicorn, the worker fails to boot), and on a file
  opened while serving (an old backup restored) it is a 500 with its traceback. A
  connection a fault may have spoiled (read-only, I/O, corrupt) is reopened before
  its next use, and one SQLite opened read-only (the file was not writable) before
  each write; a held lock or a full disk leave it as it is. So the service
  recovers by itself, without a restart.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import logging
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..base import StorageUnavailable
from .faults import PASSING, is_outage, primary_code, unavailable
from .locks import (
    Identity,
    Stamp,
    Turn,
    folder_stamp,
    hold,
    identity_of,
    last_opened,
    locked,
    logs_of,
    record,
    record_opened,
    served_lock,
    settled,
    try_flock,
    wait_for_a_fold,
)

log = logging.getLogger("refapi")

BUSY_TIMEOUT_S = 5.0  # well under gunicorn's worker timeout (30 s)
CHECK_INTERVAL_S = 1.0  # reads look at the path at most this often


class _State:
    """One thread's connection and what it knows of the file it opened."""

    __slots__ = (
        "pid", "conn", "file", "logs", "folder", "log_lock", "read_only",
        "broken", "next_check", "cache",
    )  # fmt: skip

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.conn: sqlite3.Connection | None = None
        self.file: Identity | None = None  # the database file it opened
        self.logs: tuple[Identity | None, ...] = ()  # and its -wal and -shm
        self.folder: Stamp | None = None  # their folder, settled, when last looked at
        self.log_lock = -1  # <db>.lock, holding the byte of its log while open
        self.read_only = False  # opened while the file was not writable: reopen
        self.broken = False  # a fault hit it: reopen before any use
        self.next_check = 0.0
        self.cache: dict[str, Any] = {}


class _Local(threading.local):
    def __init__(self) -> None:
        self.state = _State()


class SqliteFile:
    def __init__(
        self,
        path: str,
        migrate: Callable[[sqlite3.Connection], None],
        busy_timeout_s: float = BUSY_TIMEOUT_S,
    ) -> None:
        self.path = path
        self.migrate = migrate
        self.busy_timeout_s = busy_timeout_s
        self._uri = f"file:{quote(os.path.abspath(path))}?mode=rw"
        self.folder = os.path.dirname(os.path.abspath(path))  # its stamp, each look
        self._local = _Local()
        # Every thread's state, so close() on one thread releases them all.
        self._states: list[_State] = []
        self._states_lock = threading.Lock()
        self._serving = -1  # <db>.lock, flocked shared while this process serves
        # The <db>.lock a server's master found at its start (locks.mark_served).
        self._served = served_lock(path)
        # The host's turn to write, taken by every write (locks.py, "Writers take
        # turns"; docs/operating.md, "When storage fails").
        self.turn = Turn(path, busy_timeout_s)
        _OPEN.add(self)

    def start(self) -> None:
        """Create the database if it is missing and no one serves it; migrate it.

        A process that cannot prepare its database for a fault of the environment
        still starts, and logs why: health and the requests that need storage say
        ``503`` until the file can be opened (a restored backup, say). Any other
        error (a migration that fails) is raised: the process does not start.
        """
        try:
            late = self._late()
            if not late:  # a late process never makes the folder
                Path(self.path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            alone = self._serve(fcntl.LOCK_EX)
            if not alone:  # waits while another process is starting
                fcntl.flock(self._serving, fcntl.LOCK_SH)
            with locked(self.path):
                if identity_of(self.path) is None:
                    self._create(alone and not late)
                if alone:  # no one is on the logs <db>.lock names: forget them
                    record(self.path, (identity_of(self.path), None, None))
                else:  # opening would start a log beside one still in use
                    wait_for_a_fold(self.path, last_opened(self.path)[1:])
                self._prepare()
        except (OSError, sqlite3.Error, StorageUnavailable) as exc:
            if isinstance(exc, sqlite3.Error) and not is_outage(exc):
                self.close()
                raise
            log.warning("cannot prepare the database %s at start: %s", self.path, exc)
        finally:
            if self._serving >= 0:  # held for the life of the process
                fcntl.flock(self._serving, fcntl.LOCK_SH)

    def _late(self) -> bool:
        """Whether this process started after its master found another
        ``<db>.lock`` than the one at the path now, or than none there: the files
        were deleted under the service (locks.py, "A respawned worker")."""
        return self._served is not None and identity_of(self.path + ".lock") != (
            self._served
        )

    def _serve(self, operation: int = fcntl.LOCK_SH) -> bool:
        """Open ``<db>.lock`` and ``flock`` it (``operation``, not waiting): whether
        this process got it."""
        if self._serving < 0:
            self._serving = os.open(
                self.path + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600
            )
        return try_flock(self._serving, operation)

    def _prepare(self) -> None:
        """Migrate the database (the caller holds the folder's lock)."""
        conn = self._connect()
        try:
            self.migrate(conn)
        finally:
            conn.close()

    def _made_now(self) -> Identity | None:
        """Make the missing database while serving if none was ever made in its
        folder (a first start that could not write there); the file, else None."""
        with locked(self.path):  # the folder itself is never made while serving
            if identity_of(self.path) is not None:  # another process made it
                return identity_of(self.path)
            held = os.fstat(self._serving) if self._serving >= 0 else None
            if held and (held.st_dev, held.st_ino) != identity_of(self.path + ".lock"):
                return None  # the <db>.lock this process held is gone: one was made
            if any(last_opened(self.path)) or self._late():
                return None  # deleted: waits to be put back, ids never reused
            self._serve()
            self._create(alone=True)
            record(self.path, (identity_of(self.path), None, None))
            self._prepare()
            log.warning("created %s, which no start could before", self.path)
            return identity_of(self.path)

    def _create(self, alone: bool) -> None:
        if not alone:
            # Others serve from this folder, so the file was there and is gone: a
            # new empty one would hand out its ids again. Wait for a restore.
            raise StorageUnavailable(
                f"{self.path} is missing while other processes serve it; not"
                " creating a new one (restore it, or stop them all to start afresh)"
            )
        # A -wal or -shm without its database belongs to none: never let SQLite
        # pair it with the new file.
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path + suffix)
        os.close(os.open(self.path, os.O_CREAT | os.O_EXCL, 0o600))

    # -- connections ------------------------------------------------------------

    def connection(self, check: bool = False) -> sqlite3.Connection:
        """This thread's connection; ``check`` (writes, health) looks at the path."""
        state = self._local.state
        conn = state.conn
        if (
            conn is None
            or check
            or time.monotonic() >= state.next_check
            or state.pid != os.getpid()
        ):
            conn = self._checked(state, writing=check)
        return conn

    def cache(self) -> dict[str, Any]:
        """What is read once per connection (the secret key, credentials found),
        forgotten on reopening."""
        self.connection()
        return self._local.state.cache

    def _checked(self, state: _State, writing: bool) -> sqlite3.Connection:
        if state.pid != os.getpid():
            # A fork's inherited connection is its parent's: never touch it.
            state = self._local.state = _State()
        # One stat of the folder, not three of its files, while no name in it
        # has changed since they were last looked at (locks.py, folder_stamp).
        # PERF: about 14,000 instructions a write, make bench-instructions
        folder = folder_stamp(self.folder)
        conn = state.conn
        if (
            conn is not None
            and state.file is not None
            and folder is not None
            and folder == state.folder
        ):
            identity, logs_gone, looked = state.file, False, False
        else:
            state.folder = None  # kept again only once what the look found is done
            (identity, logs_gone), looked = self._looked_at(state), True
        if (writing and not state.read_only) and not os.access(self.path, os.W_OK):
            # Made unwritable under an open connection, which could still write
            # through the descriptor it holds: reopened read-only, so the write
            # fails (503) as it would on any worker opening the file now.
            state.read_only = True
        if (
            conn is None
            or logs_gone
            or state.broken
            or identity != state.file
            or (writing and state.read_only)
        ):
            try:
                if logs_gone and conn is not None:
                    self._fold(state, conn)
                conn = self._reopen(state, identity)
            except (OSError, sqlite3.Error) as exc:
                raise unavailable(self.path, "cannot open", exc) from exc
        if looked:
            # Read before the look; kept only now, if the folder is still so and
            # settled (locks.settled), so a fold or a reopen that failed is
            # tried again, and a change during the look is looked at.
            state.folder = settled(folder, self.folder, state.log_lock)
        if writing and state.read_only:
            # The file's mode decides, not SQLite: in a process with another
            # connection to the file (a threaded worker's), a new one takes over
            # the descriptor that one opened writable (its unix VFS shares them per
            # file), and would write.
            raise StorageUnavailable(f"the database file {self.path} is not writable")
        state.next_check = time.monotonic() + CHECK_INTERVAL_S
        return conn

    def _looked_at(self, state: _State) -> tuple[Identity, bool]:
        """The database file at the path, and whether the -wal and -shm that
        ``state``'s connection opened are gone from it."""
        identity = identity_of(self.path)
        if identity is None:
            state.next_check = 0.0  # look again on every request until it is back
            try:
                identity = self._made_now()
            except (OSError, sqlite3.Error) as exc:
                raise unavailable(self.path, "cannot create", exc) from exc
            if identity is None:
                raise StorageUnavailable(f"the database file {self.path} is missing")
        logs_gone = (
            state.conn is not None
            and identity == state.file
            and logs_of(self.path) != state.logs
        )
        return identity, logs_gone

    def _fold(self, state: _State, conn: sqlite3.Connection) -> None:
        """Fold the log of ``state``'s connection, which is no longer at the path,
        into the database file, and close it; the caller reopens. ``<db>.lock``
        names this log until no connection is on it (``locks.wait_for_a_fold``)."""
        with locked(self.path):
            if last_opened(self.path)[1:] == state.logs:  # no new log was started
                # What the log holds (TRUNCATE's own figures are zeros), then all
                # of it into the database file and the log emptied.
                _, frames, _ = conn.execute("PRAGMA wal_checkpoint").fetchone()
                busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                if busy:  # a reader on it: the next request tries again
                    raise StorageUnavailable(f"the -wal of {self.path} is in use")
                if frames > 0:  # the first to fold it; the others find it empty
                    log.warning(
                        "the -wal or -shm of %s was deleted while in use: folded"
                        " into the database",
                        self.path,
                    )
            self._let_go(state)

    def _let_go(self, state: _State) -> None:
        """Close ``state``'s connection, then give up its hold on its log."""
        if state.conn is not None:
            conn, state.conn = state.conn, None
            conn.close()
        if state.log_lock >= 0:
            os.close(state.log_lock)  # and with it the description's lock
            state.log_lock = -1

    def _reopen(self, state: _State, identity: Identity) -> sqlite3.Connection:
        with locked(self.path):
            # First, so its own hold on a log is not taken for another's.
            self._let_go(state)  # SQLite leaves alone the WAL of a file that moved
            last = last_opened(self.path)
            if last and last[0] == identity:
                wait_for_a_fold(self.path, last[1:])
            if last and last[0] != identity:
                # The -wal and -shm at the path, if they are still the ones last
                # opened with another file, are that file's: remove them first.
                log.warning("the database file %s was replaced: reopened", self.path)
                for suffix, orphan in zip(("-wal", "-shm"), last[1:], strict=True):
                    if orphan is not None and identity_of(self.path + suffix) == orphan:
                        os.unlink(self.path + suffix)
            conn = self._connect()
            try:
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                if version == 0:
                    raise StorageUnavailable(f"{self.path} is not a refapi database")
                self.migrate(conn)  # a restored older backup gets the newer schema
                opened = record_opened(self.path)
                if opened[0] != identity:
                    raise StorageUnavailable(f"{self.path} changed while opened")
                state.log_lock = hold(self.path, opened[1:])
            except BaseException:
                conn.close()
                raise
        state.conn, state.file, state.cache = conn, identity, {}
        state.logs = opened[1:]
        state.broken = False
        with self._states_lock:
            if all(known is not state for known in self._states):
                self._states.append(state)
        # SQLite quietly opens an unwritable file read-only; such a connection is
        # reopened before each write, so a fixed file mode is noticed at once.
        state.read_only = not os.access(self.path, os.W_OK)
        return conn

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self._uri,
            uri=True,
            timeout=self.busy_timeout_s,
            isolation_level=None,
            check_same_thread=False,
        )
        conn.execute("PRAGMA synchronous=NORMAL")
        # Off by default in SQLite: a deleted user takes its tokens and keys along.
        conn.execute("PRAGMA foreign_keys=ON")
        return conn

    # -- faults -----------------------------------------------------------------

    def outage(self, exc: sqlite3.Error) -> StorageUnavailable | None:
        """``StorageUnavailable`` for a fault of the environment, else None (a bug)."""
        if not is_outage(exc):
            return None
        if primary_code(exc) not in PASSING:
            self._local.state.broken = True
        name = getattr(exc, "sqlite_errorname", primary_code(exc))
        return StorageUnavailable(f"{name}: {exc}")

    def close(self) -> None:
        """Close every thread's connection, and stop marking the file as served."""
        before: tuple[Identity | None, ...] = ()
        with contextlib.suppress(StorageUnavailable):
            before = logs_of(self.path)
        with self._states_lock:
            states, self._states = self._states, []
        for state in states:
            # A fork's inherited connections are its parent's: never touch them.
            if state.pid == os.getpid():
                self._let_go(state)  # check_same_thread=False: any thread may
            state.conn = None
        with contextlib.suppress(OSError, StorageUnavailable):
            if any(before) and not any(logs_of(self.path)):
                # SQLite removed the log as its last connection closed: no worker
                # is on it, so no one opening next need wait for a fold.
                record(self.path, (identity_of(self.path), None, None))
        if self._serving >= 0:
            os.close(self._serving)
            self._serving = -1
        self.turn.close()


# Closed as the process exits (a worker stopping for a reload), so the last one
# out records that its log is gone (close()) instead of leaving the next worker to
# wait for a fold.
_OPEN: weakref.WeakSet[SqliteFile] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for file in list(_OPEN):
        with contextlib.suppress(Exception):
            file.close()
