"""The PostgreSQL backend: one database shared by every worker of several hosts.

``dialect`` runs the SQL store's queries; ``connections`` holds a pool a process,
with ``watchdog`` cutting a connection whose use outlives its deadline; ``schema``
and ``migrations/`` its tables; ``buckets`` the rate limiter's token buckets as
rows. Like the whole of ``storage/``, it imports nothing above it: only the
storage's shared modules (``base``, ``sql``, ``dialect``, ``migrations``, ``seed``,
``remembered``), psycopg, psycopg_pool and the standard library.
"""

from __future__ import annotations

from .dialect import PostgresStore

__all__ = ["PostgresStore"]
