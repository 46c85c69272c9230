"""The PostgreSQL backend: one database shared by every worker of several hosts."""

from __future__ import annotations

from .dialect import PostgresStore

__all__ = ["PostgresStore"]
