"""The locks by which the processes on one SQLite file take turns, and what
``<db>.lock`` records for them; ``file.py`` uses them, and ``buckets.py`` the wait
for a lock (nothing else may import this module).

- **One at a time.** An exclusive ``flock`` on the data folder (``locked``): one
  process makes, migrates or (re)opens the database at once.
- **The deleted file's -wal is not the restored file's.** SQLite finds the WAL and
  shared-memory files by name. Left beside a restored backup, the deleted
  database's WAL would be replayed onto it. So whoever opens a connection records
  in ``<db>.lock`` the database, ``-wal`` and ``-shm`` it opened together
  (``record_opened``), and the first process to open another database file at the
  path removes a ``-wal`` or ``-shm`` that is still the recorded one
  (``last_opened``). (Closing a stale connection is safe: SQLite neither
  checkpoints nor deletes the WAL of a file that has moved.)
- **A -wal or -shm deleted under the service is folded in, not forked.** Every
  connection of every worker writes to the one log it opened; a worker started
  after the files were deleted would start a second log beside the first, and the
  two would hand out the same ids and overwrite each other's pages. So a connection
  also remembers its -wal and -shm, and looks at them with the database file (before
  every write, on every health check, at most once a second otherwise). One that
  finds them gone folds its log into the database file (a TRUNCATE checkpoint:
  nothing committed is lost) and closes. A new log is started only once no
  connection is left on the old one: each holds, while it is open, a read lock on
  a byte of ``<db>.lock`` that stands for its log (``hold``: an open-file-description
  lock, which a process's other descriptors and SQLite's own locks leave alone), and
  a connection opening while the log the record names is gone tests that byte first
  (``wait_for_a_fold``): held, it refuses (``503``), however long a worker idles on
  the old log. (A time-out here lost writes: the old log's last writes went with it.)
- **Writers take turns.** SQLite lets one writer in at a time; the others wait in
  its busy handler, which sleeps a millisecond and more between tries, whenever the
  writer it waits for lets go. Under a burst of writes from several workers that
  sleep was most of a write's time. So a writer of this host first takes the
  host's turn (``Turn``): a write lock on one byte of ``<db>.lock``, ``TURN``,
  which the next writer waiting gets as soon as it is let go (tried again at once,
  then with growing pauses: ``wait_for``), so it finds SQLite's lock free. A
  process that dies holding it lets go with its descriptor. Another program that
  writes the file (the ``sqlite3`` shell) does not take the turn: SQLite's own
  lock keeps it and refapi's writers apart, as before.
- **A respawned worker knows it is late.** A server's master makes each database's
  folder and ``<db>.lock`` before its workers, and names the lock's identity in
  the environment they inherit (``mark_served``, ``SERVED_LOCKS``). A worker that
  finds another ``<db>.lock`` at the path, or none (the folder or the files deleted
  under the service), is late: it makes neither folder nor database
  (``file.py``), so the deleted database stays missing (``503``) instead of coming
  back empty with its ids handed out again.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import struct
import threading
import time
import weakref
import zlib
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from pathlib import Path

from ..base import StorageUnavailable

LOGS = ("-wal", "-shm")
Identity = tuple[int, int]  # (st_dev, st_ino)
Stamp = tuple[int, int, int]  # a folder's (st_dev, st_ino, st_ctime_ns)
# How old a folder's change time must be before it is trusted to move with the
# next change: a file system's clock ticks in up to a few milliseconds locally,
# up to 2 s on some network and FAT file systems.
SETTLED_NS = 2_000_000_000
# The bytes of <db>.lock that stand for logs (a lock, not data) begin past its record.
LOG_LOCKS = 4096
# The byte of <db>.lock whose write lock is the host's turn to write: past the
# record, before the logs' bytes.
TURN = 1024
SPINS = 50  # tries for a lock before pausing between tries (wait_for)
# Linux's struct flock: type, whence, start, length, pid (0 for a description's lock).
_FLOCK = struct.Struct("hhqqi4x")


# The environment's name for what a server's master found: each <db>.lock's
# identity, by its absolute path, as JSON (docs/operating.md, "When storage fails").
SERVED_LOCKS = "REFAPI_SERVED_LOCKS"


def mark_served(path: str, environ: MutableMapping[str, str] = os.environ) -> None:
    """In a server's master, before any worker: make the database's folder and its
    ``<db>.lock``, and name the lock's identity in ``environ``. One that cannot be
    made names nothing: the workers report the outage, and make what they can."""
    lock = os.path.abspath(path) + ".lock"
    try:
        Path(lock).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.close(os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600))
        found = identity_of(lock)
    except (OSError, StorageUnavailable):
        return
    served = json.loads(environ.get(SERVED_LOCKS) or "{}")
    served[lock] = found
    environ[SERVED_LOCKS] = json.dumps(served)


def served_lock(path: str, environ: Mapping[str, str] = os.environ) -> Identity | None:
    """The ``<db>.lock`` this process's master found at its start (``mark_served``);
    None when none was named (a process no refapi server started)."""
    found = json.loads(environ.get(SERVED_LOCKS) or "{}").get(
        os.path.abspath(path) + ".lock"
    )
    return (found[0], found[1]) if found else None


def identity_of(path: str) -> Identity | None:
    """The file at ``path`` (None when there is none)."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:  # a folder in the path is gone, unreadable, a file...
        raise StorageUnavailable(f"cannot look at {path}: {exc}") from exc
    return found.st_dev, found.st_ino


def folder_stamp(folder: str) -> Stamp | None:
    """The stamp of ``folder`` (None when there is none): its device, inode and
    change time. While it stays the same, no name in the folder was added,
    removed or replaced: the database, its -wal and -shm at their paths are the
    files last looked at (docs/operating.md, "When storage fails")."""
    try:
        found = os.stat(folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageUnavailable(f"cannot look at {folder}: {exc}") from exc
    return found.st_dev, found.st_ino, found.st_ctime_ns


def settled(stamp: Stamp | None, folder: str, clock: int) -> Stamp | None:
    """``stamp``, the folder's as read before a look at its files, if it may be
    kept for the next write to compare: None when it may not (the files are
    looked at again then).

    A change within the same tick of the file system's clock could leave the
    folder's change time as it was (the "racy" case git's index guards against),
    so the stamp is kept only once that time is ``SETTLED_NS`` older than the file
    system's own clock, read by setting the time of ``clock``'s file (a descriptor
    of ``<db>.lock``) to now: a network file system's times are its server's, and
    a process's clock may be seconds off it. Only after that reading is the
    folder looked at again, so a change made during the look, or while the
    process stood still since, is never taken for settled. On a file system whose
    times are whole seconds, no stamp is kept: a clock stepped back could give a
    later change the very second of the stamp (docs/operating.md, "When storage
    fails")."""
    if stamp is None or clock < 0:
        return None
    try:
        os.utime(clock)
        now = os.fstat(clock).st_ctime_ns
        again = folder_stamp(folder)
    except (OSError, StorageUnavailable):
        return None
    if now % 1_000_000_000 == 0 or stamp[2] > now - SETTLED_NS or again != stamp:
        return None
    return stamp


def logs_of(path: str) -> tuple[Identity | None, ...]:
    return tuple(identity_of(path + suffix) for suffix in LOGS)


@contextlib.contextmanager
def locked(path: str) -> Iterator[None]:
    """An exclusive ``flock`` on the data folder: one process (re)opens at once."""
    fd = os.open(Path(path).parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def try_flock(fd: int, operation: int) -> bool:
    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def wait_for(attempt: Callable[[], bool], wait_s: float, path: str) -> None:
    """Call ``attempt`` (a lock tried without waiting) until it takes the lock, for
    at most ``wait_s``: a holder that does not let go (a stopped process, an
    operator's tool) makes this an outage, ``TimeoutError``, not a worker parked
    until its master kills it. A lock cannot be waited for with a time-out, so it
    is tried again at once while the holder is most likely mid-way (microseconds),
    then with growing pauses."""
    for _ in range(SPINS):
        if attempt():
            return
        time.sleep(0)  # let the holder run
    deadline, pause = time.monotonic() + wait_s, 0.001
    while True:
        time.sleep(pause)
        if attempt():
            return
        if time.monotonic() >= deadline:
            raise TimeoutError(
                errno.ETIMEDOUT, f"locked by another for over {wait_s} s", path
            )
        pause = min(pause * 2, 0.05)


class Turn:
    """The host's turn to write the database at ``path``, for one write statement
    or transaction (``with turn:``), waited for at most ``wait_s``: past it,
    ``StorageUnavailable``, as SQLite's lock waited for that long is.

    A thread of this process takes the process's lock, then the process the
    byte (an open-file-description lock, which the process's threads share),
    through a descriptor of ``<db>.lock`` of its own. A forked child makes its
    own of both at the fork: the descriptor, since one shared with its parent
    would make the two one holder, and the lock, which a thread the fork left
    behind may have held."""

    def __init__(self, path: str, wait_s: float) -> None:
        self.path, self.wait_s = path, wait_s
        self._lock = threading.Lock()
        self._fd = -1
        forked = weakref.WeakMethod(self._forked)  # a Turn gone since: nothing
        os.register_at_fork(after_in_child=lambda: (forked() or _nothing)())

    def _forked(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)  # the parent's description lives on in it
        self._lock, self._fd = threading.Lock(), -1

    def __enter__(self) -> None:
        if not self._lock.acquire(timeout=self.wait_s):
            raise StorageUnavailable(
                f"{self.path}: another thread held the turn to write for over"
                f" {self.wait_s} s"
            )
        try:
            if self._fd < 0:
                self._fd = os.open(
                    self.path + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600
                )
            # PERF: free, as a rule: no wait, and no call of _turn (1,000
            # instructions a write with __exit__'s, make bench-layers)
            try:
                fcntl.fcntl(self._fd, fcntl.F_OFD_SETLK, _TAKE)
            except (BlockingIOError, PermissionError):  # EAGAIN or EACCES: another's
                wait_for(lambda: _turn(self._fd, _TAKE), self.wait_s, self.path)
        except BaseException as exc:
            self._lock.release()
            if isinstance(exc, OSError):  # a time-out, or <db>.lock unusable
                raise StorageUnavailable(f"the turn to write: {exc}") from exc
            raise

    def __exit__(self, *exc_info: object) -> None:
        try:
            fcntl.fcntl(self._fd, fcntl.F_OFD_SETLK, _LET_GO)
        finally:
            self._lock.release()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
        self._fd = -1


def _nothing() -> None:
    """What a fork runs for a ``Turn`` gone since."""


# The turn's byte locked, and let go: what fcntl is handed, made once.
_TAKE = _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, TURN, 1, 0)
_LET_GO = _FLOCK.pack(fcntl.F_UNLCK, os.SEEK_SET, TURN, 1, 0)


def _turn(fd: int, lock: bytes) -> bool:
    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, lock)
    except (BlockingIOError, PermissionError):  # EAGAIN or EACCES: another's
        return False
    return True


# -- the record ----------------------------------------------------------------


def last_opened(path: str) -> tuple[Identity | None, ...]:
    """The database, -wal and -shm last opened together, as ``<db>.lock`` says."""
    with contextlib.suppress(FileNotFoundError, ValueError):
        numbers = [int(n) for n in Path(path + ".lock").read_text().split()]
        if len(numbers) == 6:
            pairs = zip(numbers[::2], numbers[1::2], strict=True)
            return tuple((dev, ino) if ino else None for dev, ino in pairs)
    return ()


def record_opened(path: str) -> tuple[Identity | None, ...]:
    """Write the files now at the path into ``<db>.lock``, and return them."""
    now = (identity_of(path), *logs_of(path))
    if now != last_opened(path):
        record(path, now)
    return now


def record(path: str, files: tuple[Identity | None, ...]) -> None:
    # Written in place: the same file carries the start lock (see SqliteFile.start).
    fd = os.open(path + ".lock", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        text = " ".join(f"{dev} {ino}" for dev, ino in map(_or_zero, files))
        os.pwrite(fd, text.encode().ljust(96), 0)
    finally:
        os.close(fd)


# -- the logs' bytes -------------------------------------------------------------


def wait_for_a_fold(path: str, recorded: tuple[Identity | None, ...]) -> None:
    """Refuse to open (and so start a new log) while the log ``<db>.lock``
    names is gone from the path and a connection is still on it; each folds
    it in and lets go at its next look (``SqliteFile._fold``)."""
    if not any(recorded) or logs_of(path) == recorded:
        return
    fd = os.open(path + ".lock", os.O_RDWR | os.O_CLOEXEC)
    try:
        free = _byte_lock(fd, fcntl.F_OFD_GETLK, fcntl.F_WRLCK, recorded)
    finally:
        os.close(fd)
    if not free:
        raise StorageUnavailable(
            f"the -wal or -shm of {path} was deleted; waiting for the"
            " workers still on it to fold it into the database"
        )


def hold(path: str, logs: tuple[Identity | None, ...]) -> int:
    """A descriptor of ``<db>.lock`` holding a read lock on the byte of
    ``logs``, for as long as a connection is on them."""
    fd = os.open(path + ".lock", os.O_RDWR | os.O_CLOEXEC)
    try:
        _byte_lock(fd, fcntl.F_OFD_SETLK, fcntl.F_RDLCK, logs)
    except BaseException:
        os.close(fd)
        raise
    return fd


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
