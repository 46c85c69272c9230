"""Pluggable storage: ``open_store(url)`` picks the backend from ``DATABASE_URL``."""

from __future__ import annotations

from .base import StorageUnavailable, Store

__all__ = ["Store", "StorageUnavailable", "open_store"]


def open_store(url: str) -> Store:
    """A store for ``sqlite:///relative/path``, ``sqlite:////absolute/path``."""
    scheme, _, rest = url.partition("://")
    if scheme == "sqlite":
        from .sqlite import SqliteStore

        return SqliteStore(rest[1:] if rest.startswith("/") else rest)
    raise ValueError(f"unsupported DATABASE_URL scheme: {scheme!r}")
