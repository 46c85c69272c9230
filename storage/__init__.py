"""Pluggable storage: ``open_store(url)`` picks the backend from ``DATABASE_URL``."""

from __future__ import annotations

from .base import StorageUnavailable, Store

__all__ = ["Store", "StorageUnavailable", "open_store"]


def open_store(
    url: str,
    *,
    pool_max: int = 2,
    pool_timeout: float = 5.0,
    statement_timeout: float = 5.0,
) -> Store:
    """A store for ``sqlite:///relative/path``, ``sqlite:////absolute/path``, or
    ``postgresql://...`` (any libpq URL; ``postgres://`` too). The pool settings
    are PostgreSQL's (docs/configuration.md, "PostgreSQL"); SQLite has no pool."""
    scheme, _, rest = url.partition("://")
    if scheme == "sqlite":
        from .sqlite import SqliteStore

        return SqliteStore(rest[1:] if rest.startswith("/") else rest)
    if scheme in ("postgresql", "postgres"):
        try:
            from .postgres import PostgresStore
        except ImportError as exc:  # the optional extra is not installed
            raise ValueError(
                "DATABASE_URL names PostgreSQL, whose driver is not installed:"
                " pip install '.[postgres]' in refapi's checkout (or the wheel"
                " with [postgres] after it; docs/several-hosts.md)"
            ) from exc
        return PostgresStore(
            url,
            pool_max=pool_max,
            pool_timeout=pool_timeout,
            statement_timeout=statement_timeout,
        )
    raise ValueError(f"unsupported DATABASE_URL scheme: {scheme!r}")
