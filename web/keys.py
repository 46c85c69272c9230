"""The keys the service signs with: one function for each thing it signs.

Both come from one secret: ``REFAPI_SECRET_KEY`` when it is set, else the key made
on first start and kept in the database (docs/configuration.md, "Where the data
lives"), so every worker and host on the same data signs alike, and a cursor or a
session's CSRF token outlives a restart. What one signs cannot pass for the other:
a cursor signs ``scope:last id:epoch``, a CSRF token ``csrf:<login id>``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import Config
    from ..storage.base import MetaStore


def cursor_key(config: Config, store: MetaStore) -> bytes:
    """The key that signs pagination cursors (``web/pagination.py``)."""
    return _secret(config, store)


def csrf_key(config: Config, store: MetaStore) -> bytes:
    """The key of a session's CSRF token (``web/auth.py``)."""
    return _secret(config, store)


def _secret(config: Config, store: MetaStore) -> bytes:
    # The store keeps the generated key once read; a configured one wins.
    return config.secret_key or store.secret_key()
