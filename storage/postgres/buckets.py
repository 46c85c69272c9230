"""The rate limiter's token buckets on PostgreSQL: one row a bucket, shared by
every worker of every host (``base.Buckets``).

A row holds a bucket's tokens and when they were counted; a take refills it by the
time since (the database's clock, so hosts whose clocks differ agree) and takes a
token, in one statement for one bucket. A take of several buckets refills and
locks each row, in key order, then takes from all or none. A row full again is
forgotten by a sweep (a new row starts full anyway), so the table holds only the
callers of the last minutes.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..base import Bucket, Taken
from .connections import Connections

SWEEP_S = 60  # how often a worker forgets the buckets full again

# The database's clock, in epoch seconds: every host's buckets refill by one clock.
_NOW = "extract(epoch FROM clock_timestamp())::float8"
# A bucket's tokens now: its row's, refilled since its last take, up to capacity.
_LEVEL = f"least(%(capacity)s, b.tokens + greatest(0, {_NOW} - b.stamp) * %(refill)s)"
# One bucket, one statement: refill the row (made full when new), and take a token
# when it holds one; `taken` says which (RETURNING sees the new row only).
_TAKE_ONE = f"""
INSERT INTO buckets AS b (key, tokens, stamp, full_at, taken)
    VALUES (%(key)s, %(capacity)s - 1.0, {_NOW}, {_NOW} + 1.0 / %(refill)s, true)
ON CONFLICT (key) DO UPDATE SET
    tokens = {_LEVEL} - CASE WHEN {_LEVEL} >= 1 THEN 1 ELSE 0 END,
    full_at = {_NOW} + (%(capacity)s - {_LEVEL}
        + CASE WHEN {_LEVEL} >= 1 THEN 1 ELSE 0 END) / %(refill)s,
    taken = {_LEVEL} >= 1,
    stamp = {_NOW}
RETURNING tokens, taken
"""
# Several buckets: each row refilled and locked (in key order, so two takes never
# wait for each other in a circle), then all give a token, or none does.
_REFILL = f"""
INSERT INTO buckets AS b (key, tokens, stamp, full_at, taken)
    VALUES (%(key)s, %(capacity)s, {_NOW}, {_NOW}, false)
ON CONFLICT (key) DO UPDATE SET
    tokens = {_LEVEL},
    full_at = {_NOW} + (%(capacity)s - {_LEVEL}) / %(refill)s,
    stamp = {_NOW}
RETURNING tokens
"""
# Then add to a refilled, locked row (-1: a take, +1: a refund), up to capacity.
_ADD = """
UPDATE buckets SET tokens = least(%(capacity)s, tokens + %(add)s),
    full_at = stamp + (%(capacity)s - least(%(capacity)s, tokens + %(add)s))
        / %(refill)s
WHERE key = %(key)s
"""


class PostgresBuckets:
    def __init__(self, connections: Connections) -> None:
        self.connections = connections
        self._next_sweep = 0.0

    def ping(self) -> None:
        # A write, as a take is one: a read-only server (a standby) fails it. The
        # row is full at once, so the next sweep forgets it.
        with self.connections.connection() as conn:
            conn.execute(
                "INSERT INTO buckets (key, tokens, stamp, full_at, taken)"
                f" VALUES ('health probe', 1, {_NOW}, {_NOW}, false)"
                " ON CONFLICT (key) DO UPDATE SET stamp = excluded.stamp"
            )

    def empty(self) -> None:
        # DELETE, not TRUNCATE: takes meanwhile go on rather than queue on its lock.
        with self.connections.connection() as conn:
            conn.execute("DELETE FROM buckets")

    def _sweep(self, now: float) -> None:
        """Once a minute a worker forgets the buckets full again. (``now`` is the
        host's clock: the buckets run on the database's.)"""
        if now >= self._next_sweep:
            self._next_sweep = now + SWEEP_S
            with self.connections.connection() as conn:
                conn.execute(f"DELETE FROM buckets WHERE full_at < {_NOW}")

    def take_one(
        self, key: str, capacity: int, refill: float, now: float
    ) -> tuple[bool, float]:
        self._sweep(now)
        with self.connections.connection() as conn:
            level, taken = conn.execute(
                _TAKE_ONE, {"key": key, "capacity": capacity, "refill": refill}
            ).fetchone() or (0.0, False)
        return bool(taken), float(level)

    def take(
        self, buckets: Sequence[Bucket], now: float, refund: Bucket | None = None
    ) -> Taken:
        if len(buckets) == 1 and refund is None:
            allowed, level = self.take_one(*buckets[0], now)
            return allowed, [level]
        self._sweep(now)
        wanted = {key: (capacity, refill) for key, capacity, refill in buckets}
        if refund is not None:
            wanted.setdefault(refund[0], refund[1:])
        with self.connections.connection() as conn, conn.transaction():
            levels: dict[str, float] = {}
            for key in sorted(wanted):  # one lock order for every take
                capacity, refill = wanted[key]
                (level,) = conn.execute(
                    _REFILL, {"key": key, "capacity": capacity, "refill": refill}
                ).fetchone() or (0.0,)
                levels[key] = float(level)
            allowed = all(levels[key] >= 1.0 for key, _, _ in buckets)
            changes = (
                [(key, capacity, refill, -1.0) for key, capacity, refill in buckets]
                if allowed
                else [(*refund, 1.0)]
                if refund is not None
                else []
            )
            for key, capacity, refill, add in changes:
                conn.execute(
                    _ADD,
                    {"key": key, "capacity": capacity, "refill": refill, "add": add},
                )
        taken = 1.0 if allowed else 0.0
        return allowed, [levels[key] - taken for key, _, _ in buckets]
