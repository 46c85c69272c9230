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
  most once a second otherwise, the path is looked at again (one ``stat``): missing
  is ``StorageUnavailable``; another file there (a restored backup) is opened in
  place of the old one, so no worker goes on alone with an unlinked file.
- **The deleted file's -wal is not the restored file's.** SQLite finds the WAL and
  shared-memory files by name. Left beside a restored backup, the deleted
  database's WAL would be replayed onto it. So whoever opens a connection records
  in ``<db>.lock`` the database, ``-wal`` and ``-shm`` it opened together, and the
  first process to open another database file at the path removes a ``-wal`` or
  ``-shm`` that is still the recorded one. (Closing a stale connection is safe:
  SQLite neither checkpoints nor deletes the WAL of a file that has moved.)
- **A -wal or -shm deleted under the service is folded in, not forked.** Every
  connection of every worker writes to the one log it opened; a worker started
  after the files were deleted would start a second log beside the first, and the
  two would hand out the same ids and overwrite each other's pages. So a connection
  also remembers its -wal and -shm, and looks at them with the database file (before
  every write, on every health check, at most once a second otherwise). One that
  finds them gone folds its log into the database file (a TRUNCATE checkpoint:
  nothing committed is lost) and closes. A new log is started only once no
  connection is left on the old one: each holds, while it is open, a read lock on
  a byte of ``<db>.lock`` that stands for its log (an open-file-description lock,
  which a process's other descriptors and SQLite's own locks leave alone), and a
  connection opening while the log the record names is gone tests that byte first:
  held, it refuses (``503``), however long a worker idles on the old log. (A
  time-out here lost writes: the old log's last writes went with it.)
- **Waiting is short.** A held write lock (a backup, ``make reset``) is waited for
  ``BUSY_TIMEOUT_S``, well under gunicorn's 30 s worker timeout; then the request
  is ``503`` with ``Retry-After``. Readers never wait in WAL mode.
- **Faults are outages, bugs are bugs.** ``outage(exc)`` turns SQLite's errors of
  the environment (locked, read-only, I/O, disk full, cannot open, corrupt) into
  ``StorageUnavailable``; anything else, such as a missing table, stays an error
  (a 500). So does a migration that fails: at start it stops the process (under
  gunicorn, the worker fails to boot), and on a file opened while serving (an old
  backup restored) it is a 500 with its traceback. A connection a fault may have
  spoiled (read-only, I/O, corrupt) is reopened before its next use, and one SQLite
  opened read-only (the file was not writable) before each write; a held lock or a
  full disk leave it as it is. So the service recovers by itself, without a restart.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import logging
import os
import sqlite3
import struct
import threading
import time
import weakref
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..base import StorageUnavailable

log = logging.getLogger("refapi")

BUSY_TIMEOUT_S = 5.0  # well under gunicorn's worker timeout (30 s)
CHECK_INTERVAL_S = 1.0  # reads look at the path at most this often
LOGS = ("-wal", "-shm")
Identity = tuple[int, int]  # (st_dev, st_ino)
# The bytes of <db>.lock that stand for logs (a lock, not data) begin past its record.
LOG_LOCKS = 4096
# Linux's struct flock: type, whence, start, length, pid (0 for a description's lock).
_FLOCK = struct.Struct("hhqqi4x")

_OUTAGES = {
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
_PASSING = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_FULL}


def _identity(path: str) -> Identity | None:
    """The file at ``path`` (None when there is none)."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:  # a folder in the path is gone, unreadable, a file...
        raise StorageUnavailable(f"cannot look at {path}: {exc}") from exc
    return found.st_dev, found.st_ino


class _State:
    """One thread's connection and what it knows of the file it opened."""

    __slots__ = (
        "pid", "conn", "file", "logs", "log_lock", "read_only", "broken",
        "next_check", "cache",
    )  # fmt: skip

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.conn: sqlite3.Connection | None = None
        self.file: Identity | None = None  # the database file it opened
        self.logs: tuple[Identity | None, ...] = ()  # and its -wal and -shm
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
        self._local = _Local()
        # Every thread's state, so close() on one thread releases them all.
        self._states: list[_State] = []
        self._states_lock = threading.Lock()
        self._serving = -1  # <db>.lock, flocked shared while this process serves
        _OPEN.add(self)

    def start(self) -> None:
        """Create the database if it is missing and no one serves it; migrate it.

        A process that cannot prepare its database for a fault of the environment
        still starts, and logs why: health and the requests that need storage say
        ``503`` until the file can be opened (a restored backup, say). Any other
        error (a migration that fails) is raised: the process does not start.
        """
        try:
            Path(self.path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            alone = self._serve(fcntl.LOCK_EX)
            if not alone:  # waits while another process is starting
                fcntl.flock(self._serving, fcntl.LOCK_SH)
            with self._locked():
                if _identity(self.path) is None:
                    self._create(alone)
                if alone:  # no one is on the logs <db>.lock names: forget them
                    self._record((_identity(self.path), None, None))
                else:  # opening would start a log beside one still in use
                    self._wait_for_a_fold(self._last_opened()[1:])
                self._prepare()
        except (OSError, sqlite3.Error, StorageUnavailable) as exc:
            if isinstance(exc, sqlite3.Error) and not _is_outage(exc):
                self.close()
                raise
            log.warning("cannot prepare the database %s at start: %s", self.path, exc)
        finally:
            if self._serving >= 0:  # held for the life of the process
                fcntl.flock(self._serving, fcntl.LOCK_SH)

    def _serve(self, operation: int = fcntl.LOCK_SH) -> bool:
        """Open ``<db>.lock`` and ``flock`` it (``operation``, not waiting): whether
        this process got it."""
        if self._serving < 0:
            self._serving = os.open(
                self.path + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600
            )
        return _try_flock(self._serving, operation)

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
        with self._locked():  # the folder itself is never made while serving
            if _identity(self.path) is not None:  # another process made it
                return _identity(self.path)
            held = os.fstat(self._serving) if self._serving >= 0 else None
            if held and (held.st_dev, held.st_ino) != _identity(self.path + ".lock"):
                return None  # the <db>.lock this process held is gone: one was made
            if any(self._last_opened()):
                return None  # deleted: waits to be put back, ids never reused
            self._serve()
            self._create(alone=True)
            self._record((_identity(self.path), None, None))
            self._prepare()
            log.warning("created %s, which no start could before", self.path)
            return _identity(self.path)

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
        identity = _identity(self.path)
        if identity is None:
            state.next_check = 0.0  # look again on every request until it is back
            try:
                identity = self._made_now()
            except (OSError, sqlite3.Error) as exc:
                raise self._unavailable("cannot create", exc) from exc
            if identity is None:
                raise StorageUnavailable(f"the database file {self.path} is missing")
        if writing and not state.read_only and not os.access(self.path, os.W_OK):
            # Made unwritable under an open connection, which could still write
            # through the descriptor it holds: reopened read-only, so the write
            # fails (503) as it would on any worker opening the file now.
            state.read_only = True
        conn = state.conn
        logs_gone = (
            conn is not None and identity == state.file and self._logs() != state.logs
        )
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
                raise self._unavailable("cannot open", exc) from exc
        state.next_check = time.monotonic() + CHECK_INTERVAL_S
        return conn

    def _unavailable(self, doing: str, exc: OSError | sqlite3.Error) -> Exception:
        """The outage ``exc`` is, named by its cause; a migration that fails is a bug,
        returned as it is (a 500)."""
        if isinstance(exc, sqlite3.Error) and not _is_outage(exc):
            return exc
        folder = Path(self.path).parent
        if not folder.is_dir():
            return StorageUnavailable(f"{doing} {self.path}: {folder} is missing")
        if not os.access(folder, os.W_OK | os.X_OK):
            # SQLite makes the -wal and -shm beside the database, even to read it.
            return StorageUnavailable(
                f"{doing} {self.path}: its folder {folder} is not writable ({exc})"
            )
        return StorageUnavailable(f"{doing} {self.path}: {exc}")

    def _logs(self) -> tuple[Identity | None, ...]:
        return tuple(_identity(self.path + suffix) for suffix in LOGS)

    def _fold(self, state: _State, conn: sqlite3.Connection) -> None:
        """Fold the log of ``state``'s connection, which is no longer at the path,
        into the database file, and close it; the caller reopens. ``<db>.lock``
        names this log until no connection is on it (``_wait_for_a_fold``)."""
        with self._locked():
            if self._last_opened()[1:] == state.logs:  # no new log was started
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
        with self._locked():
            # First, so its own hold on a log is not taken for another's.
            self._let_go(state)  # SQLite leaves alone the WAL of a file that moved
            last = self._last_opened()
            if last and last[0] == identity:
                self._wait_for_a_fold(last[1:])
            if last and last[0] != identity:
                # The -wal and -shm at the path, if they are still the ones last
                # opened with another file, are that file's: remove them first.
                log.warning("the database file %s was replaced: reopened", self.path)
                for suffix, orphan in zip(("-wal", "-shm"), last[1:], strict=True):
                    if orphan is not None and _identity(self.path + suffix) == orphan:
                        os.unlink(self.path + suffix)
            conn = self._connect()
            try:
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                if version == 0:
                    raise StorageUnavailable(f"{self.path} is not a refapi database")
                self.migrate(conn)  # a restored older backup gets the newer schema
                opened = self._record_opened()
                if opened[0] != identity:
                    raise StorageUnavailable(f"{self.path} changed while opened")
                state.log_lock = self._hold(opened[1:])
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

    def _wait_for_a_fold(self, recorded: tuple[Identity | None, ...]) -> None:
        """Refuse to open (and so start a new log) while the log ``<db>.lock``
        names is gone from the path and a connection is still on it; each folds
        it in and lets go at its next look (``_fold``)."""
        if not any(recorded) or self._logs() == recorded:
            return
        fd = os.open(self.path + ".lock", os.O_RDWR | os.O_CLOEXEC)
        try:
            free = _byte_lock(fd, fcntl.F_OFD_GETLK, fcntl.F_WRLCK, recorded)
        finally:
            os.close(fd)
        if not free:
            raise StorageUnavailable(
                f"the -wal or -shm of {self.path} was deleted; waiting for the"
                " workers still on it to fold it into the database"
            )

    def _hold(self, logs: tuple[Identity | None, ...]) -> int:
        """A descriptor of ``<db>.lock`` holding a read lock on the byte of
        ``logs``, for as long as a connection is on them."""
        fd = os.open(self.path + ".lock", os.O_RDWR | os.O_CLOEXEC)
        try:
            _byte_lock(fd, fcntl.F_OFD_SETLK, fcntl.F_RDLCK, logs)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _last_opened(self) -> tuple[Identity | None, ...]:
        """The database, -wal and -shm last opened together, as ``<db>.lock`` says."""
        with contextlib.suppress(FileNotFoundError, ValueError):
            numbers = [int(n) for n in Path(self.path + ".lock").read_text().split()]
            if len(numbers) == 6:
                pairs = zip(numbers[::2], numbers[1::2], strict=True)
                return tuple((dev, ino) if ino else None for dev, ino in pairs)
        return ()

    def _record_opened(self) -> tuple[Identity | None, ...]:
        """Write the files now at the path into ``<db>.lock``, and return them."""
        now = (_identity(self.path), *self._logs())
        if now != self._last_opened():
            self._record(now)
        return now

    def _record(self, files: tuple[Identity | None, ...]) -> None:
        # Written in place: the same file carries the start lock (see start()).
        fd = os.open(self.path + ".lock", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            text = " ".join(f"{dev} {ino}" for dev, ino in map(_or_zero, files))
            os.pwrite(fd, text.encode().ljust(96), 0)
        finally:
            os.close(fd)

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

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """An exclusive ``flock`` on the data folder: one process (re)opens at once."""
        fd = os.open(Path(self.path).parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    # -- faults -----------------------------------------------------------------

    def outage(self, exc: sqlite3.Error) -> StorageUnavailable | None:
        """``StorageUnavailable`` for a fault of the environment, else None (a bug)."""
        if not _is_outage(exc):
            return None
        if _primary_code(exc) not in _PASSING:
            self._local.state.broken = True
        name = getattr(exc, "sqlite_errorname", _primary_code(exc))
        return StorageUnavailable(f"{name}: {exc}")

    def close(self) -> None:
        """Close every thread's connection, and stop marking the file as served."""
        before: tuple[Identity | None, ...] = ()
        with contextlib.suppress(StorageUnavailable):
            before = self._logs()
        with self._states_lock:
            states, self._states = self._states, []
        for state in states:
            # A fork's inherited connections are its parent's: never touch them.
            if state.pid == os.getpid():
                self._let_go(state)  # check_same_thread=False: any thread may
            state.conn = None
        with contextlib.suppress(OSError, StorageUnavailable):
            if any(before) and not any(self._logs()):
                # SQLite removed the log as its last connection closed: no worker
                # is on it, so no one opening next need wait for a fold.
                self._record((_identity(self.path), None, None))
        if self._serving >= 0:
            os.close(self._serving)
            self._serving = -1


# Closed as the process exits (a worker stopping for a reload), so the last one
# out records that its log is gone (close()) instead of leaving the next worker to
# wait for a fold.
_OPEN: weakref.WeakSet[SqliteFile] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for file in list(_OPEN):
        with contextlib.suppress(Exception):
            file.close()


def _primary_code(exc: sqlite3.Error) -> int | None:
    """SQLite's primary result code of ``exc`` (the extended code's low byte)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


def _is_outage(exc: sqlite3.Error) -> bool:
    """Is ``exc`` a fault of the environment (locked, read-only, I/O, full, cannot
    open, corrupt), rather than of our SQL (no such table, a syntax error, a
    constraint) or of our use of the module (a closed connection)?"""
    return _primary_code(exc) in _OUTAGES


def _or_zero(identity: Identity | None) -> Identity:
    return identity or (0, 0)


def _byte_lock(
    fd: int, command: int, kind: int, logs: tuple[Identity | None, ...]
) -> bool:
    """fcntl's open-file-description lock ``command`` (set, or test) of ``kind``
    on the byte of ``<db>.lock`` that stands for ``logs``: whether it is free (a
    test), or was taken."""
    numbers = [number for files in logs for number in _or_zero(files)]
    byte = LOG_LOCKS + zlib.crc32(struct.pack(f"<{len(numbers)}Q", *numbers))
    answer = fcntl.fcntl(fd, command, _FLOCK.pack(kind, os.SEEK_SET, byte, 1, 0))
    return command != fcntl.F_OFD_GETLK or _FLOCK.unpack(answer)[0] == fcntl.F_UNLCK


def _try_flock(fd: int, operation: int) -> bool:
    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
