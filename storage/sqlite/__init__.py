"""The SQLite backend: one file, shared by every worker of one host.

``dialect`` runs the SQL store's queries on it; ``file`` holds the file itself
(made at start, checked against its path), with ``locks`` (how its processes take
turns, what ``<db>.lock`` records) and ``faults`` (which errors are outages);
``schema`` and ``migrations/`` its tables (``PRAGMA user_version``); ``buckets``
the rate limiter's memory-mapped token buckets beside the file, ``bucket_table``
their table (its layout, which slot a key takes).

Like the whole of ``storage/``, it imports nothing above it: only the storage's
shared modules (``base``, ``sql``, ``dialect``, ``migrations``, ``seed``,
``remembered``) and the standard library.
"""

from __future__ import annotations

from .dialect import SqliteStore

__all__ = ["SqliteStore"]
