"""The bucket table: where in ``<db>.buckets`` a key's bucket lives, and what a
key the table does not hold gets (docs/rate-limits.md, "The bucket table").
``buckets.py`` reads and writes the table through these, under the file's lock;
nothing else may import this module (the tests read ``SLOTS`` and ``PROBES``).

The file is a header, the credential generation, then a fixed open-addressing hash
table of ``SLOTS`` slots, each ``(key digest, tokens, updated, full at)``, then one
number a first probe (below); ``SIZE`` bytes in all.

A table this small forgets, so what it forgets must never be tokens:

- **Placed by a keyed hash.** A key's digest and first probe are an HMAC under the
  store's secret key (``SharedBuckets._digest``), so nobody outside can compute
  which keys collide (one IPv6 /48 holds 65,536 /64s: with a public hash, dozens of
  them land near any slot).
- **Only full buckets are forgotten freely.** A key probes ``PROBES`` slots from
  its first; if none holds it, it takes one that is free or whose bucket has
  refilled to capacity (forgetting a full bucket loses nothing) and starts full.
  With neither, it takes the slot touched longest ago and starts empty, refilling
  from now: a flood may delay a newcomer, never hand it tokens.
- **What was forgotten early is remembered by its first probe.** A bucket pushed
  out before it was full could come back later into a free or full slot; so the
  time it would have been full again is kept for its first probe, and until then
  every newcomer probing from there starts empty.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Sequence

# Key digest, tokens, last update, full again at (epoch seconds).
SLOT = struct.Struct("<16sddd")
SLOTS = 16384
PROBES = 8
# Until when a newcomer probing from a slot starts empty (epoch seconds).
FORGOTTEN = struct.Struct("<d")
HEADER = struct.Struct("<8sIII12x")  # magic, version, slot size, slots: 32 bytes
GENERATION = struct.Struct("<Q24x")  # the credential generation: 32 bytes, aligned
MAGIC, VERSION = b"refapiTB", 3
HEADER_BYTES = HEADER.pack(MAGIC, VERSION, SLOT.size, SLOTS)
HEAD = HEADER.size  # where the credential generation begins
TABLE = HEAD + GENERATION.size  # where the slots begin
_FORGOTTEN = TABLE + SLOT.size * SLOTS  # then a number per first probe
SIZE = _FORGOTTEN + FORGOTTEN.size * SLOTS


def first_probe(digest: bytes) -> int:
    return int.from_bytes(digest[:4], "little") % SLOTS


def slots_of(
    table: mmap.mmap,
    found: Sequence[tuple[tuple[bytes, int], int, float]],
    now: float,
    held: set[int],
) -> list[tuple[int, bytes, float]]:
    """Each bucket's slot (offset, digest) and its tokens now, the slots ``held``
    by others of the same take excepted; the caller holds the locks and writes
    the levels it decides on. Buckets in the table are found before any newcomer
    is placed, so that no newcomer pushes out another bucket of its take."""
    slots: list[tuple[int, bytes, float] | None] = []
    for (digest, start), capacity, refill in found:
        offset, level = find(table, digest, start, capacity, refill, now)
        if offset < 0:
            slots.append(None)
        else:
            slots.append((offset, digest, level))
            held.add(offset)
    placed = []
    for slot, ((digest, start), capacity, _) in zip(slots, found, strict=True):
        if slot is None:
            offset, level = newcomer(table, start, capacity, now, held)
            slot = (offset, digest, level)
            held.add(offset)
        placed.append(slot)
    return placed


def find(
    table: mmap.mmap,
    digest: bytes,
    start: int,
    capacity: int,
    refill: float,
    now: float,
) -> tuple[int, float]:
    """The slot holding ``digest``, and its bucket's tokens now (refilled since its
    last update, up to ``capacity``; a clock gone back refills nothing); -1 if
    none does."""
    for probe in range(PROBES):
        offset = TABLE + (start + probe) % SLOTS * SLOT.size
        owner, tokens, updated, _ = SLOT.unpack_from(table, offset)
        if owner == digest:
            tokens += (now - updated) * refill if now > updated else 0.0
            return offset, tokens if tokens < capacity else float(capacity)
    return -1, 0.0


def newcomer(
    table: mmap.mmap, start: int, capacity: int, now: float, held: set[int]
) -> tuple[int, float]:
    """A slot for a key the table does not hold, and its tokens: full in a free
    slot or a full bucket's, empty in the one touched longest ago (whose bucket,
    forgotten before it was full, then makes its own first probe's newcomers
    start empty until it would have been). docs/rate-limits.md, "The bucket
    table"."""
    free, oldest, oldest_at = -1, -1, float("inf")
    for probe in range(PROBES):
        offset = TABLE + (start + probe) % SLOTS * SLOT.size
        if offset in held:
            continue
        _, _, updated, full_at = SLOT.unpack_from(table, offset)
        if full_at <= now:  # free (all zeros), or its bucket refilled
            free = offset
            break
        if updated < oldest_at:
            oldest, oldest_at = offset, updated
    if free >= 0:
        [until] = FORGOTTEN.unpack_from(table, _FORGOTTEN + start * FORGOTTEN.size)
        return free, float(capacity) if until <= now else 0.0
    owner, _, _, full_at = SLOT.unpack_from(table, oldest)
    marker = _FORGOTTEN + first_probe(owner) * FORGOTTEN.size
    [until] = FORGOTTEN.unpack_from(table, marker)
    FORGOTTEN.pack_into(table, marker, max(until, full_at))
    return oldest, 0.0


def write(
    table: mmap.mmap,
    offset: int,
    digest: bytes,
    level: float,
    now: float,
    capacity: int,
    refill: float,
) -> None:
    """Write a bucket's slot, with the time it will be full again."""
    full_at = now + (capacity - level) / refill
    SLOT.pack_into(table, offset, digest, level, now, full_at)
