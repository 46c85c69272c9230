"""Token buckets shared by every process on one host, in a memory-mapped file.

A token bucket holds up to ``capacity`` tokens and regains ``refill`` tokens per
second; each request takes one, and a request that finds less than one token is
refused and takes nothing. The state of a bucket is two numbers (tokens, time of last
update), so refilling is computed lazily when the bucket is next touched.

The rate limit must hold across all gunicorn workers of a host, and it is consulted on
every request, so it must be cheap: a SQLite upsert costs ~14 us, this ~3 us. The
file is a fixed open-addressing hash table of ``SLOTS`` slots, each
``(key digest, tokens, updated)``; an exclusive ``flock`` on the file makes each
read-modify-write atomic between processes. A key probes ``PROBES`` slots from its
hash; if none holds it, it takes the slot touched longest ago (an empty slot has time
0, and a slot idle for ``capacity / refill`` seconds is full again anyway).
The state is not durable and need not be: a restart refills every bucket.
"""

from __future__ import annotations

import fcntl
import hashlib
import mmap
import os
import struct
import threading

SLOT = struct.Struct("<16sdd")  # key digest, tokens, last update (epoch seconds)
SLOTS = 16384
PROBES = 8
SIZE = SLOT.size * SLOTS
KNOWN_KEYS = 4096  # digests remembered per process, so hashing is not per request


class SharedBuckets:
    def __init__(self, path: str) -> None:
        self.path = path
        self._pid = 0
        self._fd = -1
        self._map: mmap.mmap | None = None
        self._digests: dict[str, tuple[bytes, int]] = {}
        self._thread_lock = threading.Lock()

    def _open(self) -> None:
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.fstat(fd).st_size < SIZE:
                os.ftruncate(fd, SIZE)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
        self._fd, self._map, self._pid = fd, mmap.mmap(fd, SIZE), os.getpid()

    def take(
        self, key: str, capacity: int, refill: float, now: float
    ) -> tuple[bool, float]:
        """Take a token for ``key``: (allowed, tokens left afterwards)."""
        known = self._digests.get(key)
        if known is None:
            if len(self._digests) >= KNOWN_KEYS:
                self._digests.clear()
            digest = hashlib.blake2b(key.encode(), digest_size=16).digest()
            known = self._digests[key] = (digest, int.from_bytes(digest[:4], "little"))
        digest, start = known
        with self._thread_lock:
            if self._pid != os.getpid():
                self._open()
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                level, allowed = self._update(digest, start, capacity, refill, now)
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        return allowed, level

    def _update(
        self, digest: bytes, start: int, capacity: int, refill: float, now: float
    ) -> tuple[float, bool]:
        """Refill and take from the bucket of ``digest``; the caller holds the locks."""
        table = self._map
        assert table is not None  # opened by take() before it calls this
        oldest_offset, oldest = 0, float("inf")
        for probe in range(PROBES):
            offset = ((start + probe) % SLOTS) * SLOT.size
            owner, tokens, updated = SLOT.unpack_from(table, offset)
            if owner == digest:
                break
            if updated < oldest:
                oldest_offset, oldest = offset, updated
        else:
            offset, tokens, updated = oldest_offset, float(capacity), now
        level = min(capacity, tokens + max(0.0, now - updated) * refill)
        allowed = level >= 1.0
        if allowed:
            level -= 1.0
        SLOT.pack_into(table, offset, digest, level, now)
        return level, allowed

    def close(self) -> None:
        if self._map is not None and self._pid == os.getpid():
            self._map.close()
            os.close(self._fd)
        self._map, self._pid = None, 0
