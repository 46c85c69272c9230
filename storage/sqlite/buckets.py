"""Token buckets shared by every process on one host, in a memory-mapped file.

A token bucket holds up to ``capacity`` tokens and regains ``refill`` tokens per
second; each request takes one, and a request that finds less than one token is
refused and takes nothing. A request that passes several buckets (a login: its
address's "auth" bucket and the caller's default one) takes a token from each or,
if any is empty, from none, under one lock. The state of a bucket is two numbers
(tokens, time of last update), so refilling is computed lazily when the bucket is
next touched.

The rate limit must hold across all gunicorn workers of a host, and it is consulted on
every request, so it must be cheap: a SQLite upsert costs ~14 us, this a few. The
file (``<db>.buckets``, ``0600``) holds a fixed table of slots (its layout, and
which slot a key takes, are ``bucket_table.py``'s: a table this small forgets, and
what it forgets must never be tokens); an exclusive ``flock`` on the file makes each
read-modify-write atomic between processes. The state is not durable and need not
be: a restart refills every bucket, and so does a rebuild.

The file is not trusted:

- **Validated.** The header names the format (magic, version, slot size and count)
  and the file must be exactly ``SIZE`` bytes. Anything else (garbage, an older
  format, a truncated or grown file) is rebuilt empty, and the rebuild logged, by
  whichever process finds it first; the others find it whole.
- **Never a crash.** Touching a mapped page past the end of a truncated file kills
  the process with SIGBUS, which Python cannot catch; so each take checks the
  file's size (one ``fstat``, under the lock) before it touches the map.
  Blocks are written when the file is made, so a full disk fails then, not in a
  page fault.
- **The file at the path.** At most once a second (and on every health check) the
  path is compared with the open file; one deleted or replaced is reopened, or
  recreated. One that cannot be opened or mapped raises ``OSError``.

The file also holds the host's **credential generation**, a number every change to
a credential moves (``bump``) and every worker reads before it trusts a credential
it remembers (``generation``; docs/authentication.md, "Remembered credentials").
Shared memory is what makes that read cheap: no SQL, no lock between processes. A
rebuilt file starts it at a random number, so a worker's memory of the old file's
numbers can never be taken for the new file's.
"""

from __future__ import annotations

import errno
import fcntl
import hmac
import logging
import mmap
import os
import secrets
import threading
import time
from collections.abc import Callable, Sequence

from ..base import Bucket, StorageUnavailable, Taken
from .bucket_table import (
    GENERATION,
    HEAD,
    HEADER,
    HEADER_BYTES,
    SIZE,
    TABLE,
    find,
    first_probe,
    newcomer,
    slots_of,
    write,
)
from .file import BUSY_TIMEOUT_S
from .locks import try_flock, wait_for

log = logging.getLogger("refapi")

KNOWN_KEYS = 4096  # digests remembered per process, so hashing is not per request
RECHECK_S = 1.0  # how often a take compares the path with the open file


class SharedBuckets:
    """The table in the file at ``path``; keys are placed by an HMAC under the key
    ``secret`` gives (the store's, read at the first take)."""

    def __init__(
        self,
        path: str,
        secret: Callable[[], bytes],
        lock_wait_s: float = BUSY_TIMEOUT_S,
    ) -> None:
        self.path = path
        self.secret = secret
        self._placing: bytes | None = None  # derived from the secret once
        # How long a take waits for another's lock, as the database's busy wait:
        # past it, an outage (docs/operating.md, "Lock waits are short").
        self.lock_wait_s = lock_wait_s
        self._pid = 0
        self._fd = -1
        self._identity = (0, 0)  # the open file's (device, inode)
        # Its /proc/self/fd entry and the name read there at the open (_named),
        # and when generation() next compares the path's file by a stat.
        self._named: tuple[str, str] | None = None
        self._stat_due = 0.0
        # How many times a file was opened: a number read from another file (one put
        # back from a copy) says nothing of what was remembered from this one.
        self.opened = 0
        self._map: mmap.mmap | None = None
        self._word = memoryview(b"\0" * 8).cast("Q")  # the map's, once opened
        self._path_checked_at = 0.0
        self._digests: dict[str, tuple[bytes, int]] = {}
        self._thread_lock = threading.Lock()

    def take(
        self, key: str, capacity: int, refill: float, now: float
    ) -> tuple[bool, float]:
        """Take a token for ``key``: (allowed, tokens left afterwards). Most
        requests pass one bucket alone, so it has this plain path of its own, which
        ``SqliteBuckets`` hands out as it is: a fault here is ``StorageUnavailable``
        already (PERF: a call fewer a request, 700 instructions, make
        bench-layers)."""
        # PERF: a key seen lately asks nothing more, 400 instructions a take,
        # make bench-instructions
        digest, start = self._digests.get(key) or self._digest(key)
        try:
            with self._thread_lock:
                table = self._locked(now)
                try:
                    offset, level = find(table, digest, start, capacity, refill, now)
                    if offset < 0:
                        offset, level = newcomer(table, start, capacity, now, set())
                    allowed = level >= 1.0
                    if allowed:
                        level -= 1.0
                    write(table, offset, digest, level, now, capacity, refill)
                finally:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
        except OSError as exc:
            raise unavailable(exc) from exc
        return allowed, level

    def take_all(
        self, buckets: Sequence[Bucket], now: float, refund: Bucket | None = None
    ) -> Taken:
        """Take a token from each of ``buckets`` (distinct keys), or from none if any
        has less than one: (allowed, each one's tokens left afterwards). When they
        refuse, ``refund`` gets back the token an earlier take gave it; all of it
        under one lock, so no other process sees a half-taken request."""
        found = [
            (self._digest(key), capacity, refill) for key, capacity, refill in buckets
        ]
        with self._thread_lock:
            table = self._locked(now)
            try:
                # Each bucket's slot is found and refilled; then every bucket
                # gives a token, or (one being empty) none does.
                slots = slots_of(table, found, now, set())
                allowed = min([level for _, _, level in slots]) >= 1.0
                taken = 1.0 if allowed else 0.0
                levels = []
                pairs = zip(slots, found, strict=True)
                for (offset, owner, level), (_, capacity, refill) in pairs:
                    levels.append(level - taken)
                    write(table, offset, owner, level - taken, now, capacity, refill)
                if not allowed and refund is not None:
                    key, capacity, refill = refund
                    held = {offset for offset, _, _ in slots}
                    [(offset, owner, level)] = slots_of(
                        table, [(self._digest(key), capacity, refill)], now, held
                    )
                    level = min(capacity, level + 1)
                    write(table, offset, owner, level, now, capacity, refill)
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        return allowed, levels

    def _locked(self, now: float) -> mmap.mmap:
        """The table, its file locked and whole; the caller unlocks. The path is
        compared with the open file at most once a second."""
        recheck = abs(now - self._path_checked_at) >= RECHECK_S
        # PERF: as a rule the map is open and the lock free: both taken here,
        # calling nothing (RateLimit's row 34,251 -> 33,393, make bench-layers)
        table = self._map
        if table is None or recheck or self._pid != os.getpid():
            table = self._opened(recheck)
            if recheck:
                self._path_checked_at = now
        fd = self._fd
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock(fd)  # another's: waited for
        try:
            if not self._whole(table):  # only a whole file's pages may be touched
                self._repair(table)
        except BaseException:
            fcntl.flock(fd, fcntl.LOCK_UN)
            raise
        return table

    def _digest(self, key: str) -> tuple[bytes, int]:
        """The key's digest and first probe, remembered for the keys seen lately."""
        known = self._digests.get(key)
        if known is None:
            if len(self._digests) >= KNOWN_KEYS:
                self._digests.clear()
            if self._placing is None:
                # Its own key, so that no digest here equals a cursor's signature.
                self._placing = hmac.digest(self.secret(), b"buckets", "sha256")
            digest = hmac.digest(self._placing, key.encode(), "sha256")[:16]
            known = self._digests[key] = (digest, first_probe(digest))
        return known

    def generation(self) -> int:
        """The credential generation now. The path is compared with the open file
        every time, not once a second: a worker must not trust what it remembers
        from a file another worker no longer writes to.

        On Linux the open file's ``/proc/self/fd`` entry is read, not the path
        stat'd: it names the file as it did when opened until the file is
        unlinked (``rm``, another renamed over it: "... (deleted)") or renamed,
        it or a folder above it. What renames nothing (a file mounted over the
        path, a symbolic link pointed elsewhere) a stat of the path sees, at most
        a second later. PERF: a fifth of a ``stat``, 3,500 instructions a request
        with a credential, make bench-prices and bench-layers"""
        with self._thread_lock:
            table = self._opened(recheck=False)
            named, now = self._named, time.monotonic()
            try:
                if named is not None and now < self._stat_due:
                    here = os.readlink(named[0]) == named[1]
                else:  # no /proc, or a second gone: the path's file, by a stat
                    self._stat_due = now + RECHECK_S
                    here = _identity(self.path) == self._identity
            except OSError:
                here = False
            if not here:
                table = self._opened(recheck=True)  # deleted or replaced
            if not self._whole(table):
                self._locked_repair(table)
            number: int = self._word[0]  # without the flock: see _word
            return number

    def bump(self) -> None:
        """Move the credential generation on: what every worker remembers of a
        credential is read again. Called after the change is committed, so a read
        that sees the new number also sees the change."""
        with self._thread_lock:
            table = self._opened(recheck=True)
            self._lock(self._fd)
            try:
                if not self._whole(table):
                    self._repair(table)  # a new random number: moved on as well
                    return
                self._word[0] = (self._word[0] + 1) % 2**63
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def empty(self) -> None:
        """Forget every bucket and every mark of one forgotten early: each key
        starts full again. The header and the credential generation stay."""
        with self._thread_lock:
            table = self._opened(recheck=True)
            self._lock(self._fd)
            try:
                if not self._whole(table):
                    self._repair(table)  # rebuilt empty
                    return
                table[TABLE:SIZE] = bytes(SIZE - TABLE)
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _whole(self, table: mmap.mmap) -> bool:
        """Whether the open file is whole: its size first, since touching a page past
        the end of a truncated file is a SIGBUS. ``lseek`` reads the size without
        building a stat result, which cost a take a tenth of its instructions."""
        return (
            os.lseek(self._fd, 0, os.SEEK_END) == SIZE and table[:HEAD] == HEADER_BYTES
        )

    def _locked_repair(self, table: mmap.mmap) -> None:
        self._lock(self._fd)
        try:
            self._repair(table)
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def check(self) -> None:
        """Raise ``OSError`` unless the file at the path can be used (health)."""
        with self._thread_lock:
            self._locked_repair(self._opened(recheck=True))

    def _lock(self, fd: int) -> None:
        """The file's exclusive lock, waited for at most ``lock_wait_s``
        (``locks.wait_for``): past it, ``TimeoutError``, an outage."""
        wait_for(lambda: try_flock(fd, fcntl.LOCK_EX), self.lock_wait_s, self.path)

    def _opened(self, recheck: bool) -> mmap.mmap:
        """The map of the file at the path, opened anew if it is not that file."""
        if self._pid == os.getpid() and self._map is not None:
            if not recheck:
                return self._map
            if _identity(self.path) == self._identity:
                # The same file, perhaps by another name now (its folder renamed,
                # a symbolic link left at the old name): its name read again.
                self._named = _named(self._fd, self.path, self._identity)
                return self._map
            self.close()
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            self._lock(fd)
            self._fd = fd
            self._repair()
            self._map = mmap.mmap(fd, SIZE)
            # The credential generation is read without the flock, so it is read
            # and written as one aligned 8-byte word, through this view: a read
            # sees the number before a bump or after it, never a mix. (struct's
            # pack_into zero-fills the field and then writes it a byte at a time:
            # a reader racing a bump saw 0 there.) Made once, not a view a read.
            # PERF: 3,000 instructions a read, make bench-instructions
            self._word = memoryview(self._map)[HEAD : HEAD + 8].cast("Q")
        except BaseException:
            self._map, self._fd = None, -1
            os.close(fd)
            raise
        self._pid = os.getpid()
        self.opened += 1
        mine = os.fstat(fd)
        self._identity = (mine.st_dev, mine.st_ino)
        self._named = _named(fd, self.path, self._identity)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return self._map

    def _repair(self, table: mmap.mmap | None = None) -> None:
        """Rebuild the file empty unless it is whole; the caller holds the flock."""
        size = os.fstat(self._fd).st_size
        if size == SIZE:  # only now may the map be touched
            if table is not None:
                header = table[: HEADER.size]
            else:
                header = os.pread(self._fd, HEADER.size, 0)
            if header == HEADER_BYTES:
                return
        # Written through the descriptor, not the map: no page is touched before
        # the file has its size, and writing the zeros allocates every block
        # before the map writes to it (a full disk is an OSError here, not a
        # SIGBUS later). The zeros go over the header first, so a file left
        # half-written is found bad again next time, never used.
        os.ftruncate(self._fd, SIZE)
        if os.pwrite(self._fd, bytes(SIZE), 0) != SIZE:
            raise OSError(errno.ENOSPC, "no room to rebuild", self.path)
        os.pwrite(self._fd, GENERATION.pack(secrets.randbits(63)), HEAD)
        os.pwrite(self._fd, HEADER_BYTES, 0)
        if size or table is not None:  # an empty file is new, unless it was in use
            damage = "a bad header" if size == SIZE else f"{size} bytes, not {SIZE}"
            log.warning("rate-limit bucket file %s had %s: rebuilt", self.path, damage)

    def close(self) -> None:
        if self._map is not None and self._pid == os.getpid():
            self._word.release()  # the map closes only once no view is left
            self._map.close()
            os.close(self._fd)
        self._map, self._fd, self._pid, self._named = None, -1, 0, None


def unavailable(exc: OSError) -> StorageUnavailable:
    """The buckets' file could not be used: a 503 that health explains."""
    return StorageUnavailable(f"rate-limit buckets: {exc}")


def _named(fd: int, path: str, identity: tuple[int, int]) -> tuple[str, str] | None:
    """``fd``'s ``/proc/self/fd`` entry and the name it reads, the file at ``path``
    being ``identity`` once the name is read; None without ``/proc``, or if the
    file at the path is already another (its name would say nothing)."""
    entry = f"/proc/self/fd/{fd}"
    try:
        name = os.readlink(entry)
    except OSError:
        return None
    return (entry, name) if _identity(path) == identity else None


def _identity(path: str) -> tuple[int, int] | None:
    """The (device, inode) of the file at ``path``; None if there is none."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    return found.st_dev, found.st_ino


class SqliteBuckets:
    """The ``Buckets`` of a SQLite backend: this host's shared table, its faults
    as ``StorageUnavailable`` (a 503 that health explains)."""

    def __init__(self, shared: SharedBuckets) -> None:
        self.shared = shared
        self.take_one = shared.take  # its faults are StorageUnavailable already

    def ping(self) -> None:
        try:
            self.shared.check()
        except OSError as exc:
            raise unavailable(exc) from exc

    def take(
        self, buckets: Sequence[Bucket], now: float, refund: Bucket | None = None
    ) -> Taken:
        try:
            if len(buckets) == 1 and refund is None:
                allowed, level = self.take_one(*buckets[0], now)
                return allowed, [level]
            return self.shared.take_all(buckets, now, refund)
        except OSError as exc:
            raise unavailable(exc) from exc

    def empty(self) -> None:
        try:
            self.shared.empty()
        except OSError as exc:
            raise unavailable(exc) from exc
