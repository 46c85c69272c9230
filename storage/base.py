"""The storage interface: what the handlers may ask of a backend.

Backends return resources as plain dicts already in their API shape (camelCase
fields, ISO 8601 timestamps), so handlers do no mapping. Lists are keyset pages:
``after`` is the last id the client saw and ``limit`` the page size; a backend
returns up to ``limit + 1`` rows so the caller can tell whether a next page exists
without a second query.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

Record = dict[str, Any]
Check = Callable[[Record], None]


class StorageUnavailable(Exception):
    """The backend cannot be reached; the API answers 503."""


class Store(Protocol):
    def ping(self) -> None:
        """Raise ``StorageUnavailable`` unless a trivial query succeeds."""

    def secret_key(self) -> bytes:
        """The key generated on first start and kept with the data."""

    def list_articles(self, after: int, limit: int) -> list[Record]: ...

    def get_article(self, article_id: int) -> Record | None: ...

    def create_article(self, title: str, tags: list[str], now: str) -> Record: ...

    def update_article(
        self, article_id: int, changes: Record, now: str, check: Check
    ) -> Record | None:
        """Apply ``changes`` after ``check(current)`` passed, in one transaction."""

    def delete_article(self, article_id: int, check: Check) -> bool: ...

    def get_todo(self, todo_id: int) -> Record | None: ...

    def list_items(self, after: int, limit: int) -> list[Record]: ...

    def take_token(
        self, key: str, capacity: int, refill: float, now: float
    ) -> tuple[bool, float]:
        """Token bucket of ``key``, shared by every worker: (allowed, tokens left)."""

    def reset(self) -> None:
        """Put every resource back to the seed."""

    def close(self) -> None: ...
