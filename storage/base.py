"""The storage interface: what the handlers may ask of a backend.

Backends return resources as plain dicts already in their API shape (camelCase
fields, ISO 8601 timestamps), so handlers do no mapping. Lists are keyset pages:
``after`` is the last id the client saw and ``limit`` the page size; a backend
returns up to ``limit + 1`` rows so the caller can tell whether a next page exists
without a second query.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

Record = dict[str, Any]
Bucket = tuple[str, int, float]  # a token bucket's key, capacity, refill per second
Check = Callable[[Record], None]
KEY_TTL_S = 24 * 3600  # how long an idempotency key is remembered
MAX_ID = 2**63 - 1  # the largest id a 64-bit integer column holds


def iso(timestamp: float) -> str:
    """Epoch seconds as RFC 3339 UTC with the ``Z`` offset."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(timestamp))


@dataclass(frozen=True)
class Idempotent:
    """The stored outcome of the first request made under an idempotency key."""

    fingerprint: str
    status: int
    body: bytes
    resource_id: str
    replayed: bool


class EmailTaken(Exception):
    """Another user has this email (compared without regard to case)."""


class LastAdmin(Exception):
    """The change would leave no admin: the user is the only one."""


class UnknownUser(Exception):
    """The user a record was to belong to does not exist (or was just deleted)."""


class StorageUnavailable(Exception):
    """The backend cannot serve now: unreachable, missing, unwritable, or locked
    past a short wait. A fault of the environment, not a bug; the API answers 503
    until it is gone, and the backend recovers by itself when it is."""


class Store(Protocol):
    def ping(self) -> None:
        """Raise ``StorageUnavailable`` unless a write can be made now.

        Health calls it, so it proves what a write needs (the data in place, a
        write lock within the short wait, room to write) at little cost.
        """

    def ping_rate_limit(self) -> None:
        """Raise ``StorageUnavailable`` unless ``take_tokens`` can work now."""

    def secret_key(self) -> bytes:
        """The key generated on first start and kept with the data."""

    def reset_epoch(self) -> int:
        """How many times ``reset`` has run on this data: 0 until the first.

        Cursors carry it, so one issued before a reset is refused, read afresh on
        each call so every worker sees a reset made by another process at once.
        """

    def list_articles(
        self, after: int, limit: int, tag: str | None = None
    ) -> list[Record]:
        """A keyset page of articles; with ``tag``, only those carrying it (exactly),
        found through an index of tags, not by reading every article."""

    def get_article(self, article_id: int) -> Record | None: ...

    def create_article(
        self, title: str, tags: list[str], now: str, author: Record | None = None
    ) -> Record:
        """``author`` is ``{"type": "user"|"client", "id"}``, or None (as the
        articles stored before authors were kept)."""

    def update_article(
        self, article_id: int, changes: Record, now: str, check: Check
    ) -> Record | None:
        """Apply ``changes`` after ``check(current)`` passed, in one transaction:
        ``check`` raises to refuse (not the author, a stale ``If-Match``)."""

    def delete_article(self, article_id: int, check: Check) -> bool:
        """Delete after ``check(current)`` passed, in one transaction."""

    def get_todo(self, todo_id: int) -> Record | None: ...

    def list_items(self, after: int, limit: int) -> list[Record]: ...

    def create_payment(
        self,
        scope: str,
        key: str,
        fingerprint: str,
        payment: Record,
        body: bytes,
        now: float,
    ) -> Idempotent:
        """Store ``payment`` once per (scope, key) in 24 hours; else the stored outcome.

        The payment and the key's record (status 201 and ``body``, the rendered
        answer) are written in one transaction, and concurrent requests with one key
        serialize on it, so exactly one payment is created however many workers
        receive the key.
        """

    def get_payment(self, payment_id: str, scope: str) -> Record | None:
        """The payment, if it was made in ``scope`` (by that caller)."""

    def take_tokens(
        self,
        buckets: Sequence[Bucket],
        now: float,
        refund: Bucket | None = None,
    ) -> tuple[bool, list[float]]:
        """Take a token from each ``(key, capacity, refill)`` token bucket, shared by
        every worker, or from none if any is empty: (allowed, each one's tokens
        left). Refused, ``refund`` gets back one token, in the same step.

        Raises ``StorageUnavailable`` when the buckets cannot be used.
        """

    def list_notes(self, after: int, limit: int) -> list[Record]:
        """A keyset page of the demo endpoint's notes."""

    def get_note(self, note_id: int) -> Record | None: ...

    def create_note(self, text: str, now: str, keep: int) -> Record:
        """Add a note and, in the same transaction, remove the oldest beyond the
        newest ``keep``, so concurrent creates never leave more than ``keep``."""

    def update_note(self, note_id: int, text: str) -> Record | None: ...

    def delete_note(self, note_id: int) -> bool: ...

    # -- users and credentials (secrets arrive hashed; passwords slow-hashed) --

    def create_user(
        self, email: str, password_hash: str, first: str, last: str, role: str, now: str
    ) -> Record:
        """Raises ``EmailTaken`` when the email is in use, whatever its case."""

    def get_user(self, user_id: int) -> Record | None: ...

    def user_login(self, email: str) -> tuple[Record, str] | None:
        """The user of ``email`` (any case) and its password hash."""

    def list_users(self, after: int, limit: int) -> list[Record]: ...

    def replace_user(
        self,
        user_id: int,
        fields: Record,
        password_hash: str | None,
        now: str,
        keep_login: str | None = None,
    ) -> Record | None:
        """Set ``email``, ``firstName``, ``lastName``, ``role``; with a password
        hash, set it and end every token and session of the user but those of
        ``keep_login`` (API keys stay). Raises ``EmailTaken``, and ``LastAdmin``
        when it would demote the only admin (decided in the same transaction)."""

    def delete_user(self, user_id: int) -> bool:
        """Delete the user and every token and key that speaks for it; raises
        ``LastAdmin`` for the only admin (decided in the same transaction)."""

    def has_admin(self) -> bool: ...

    def create_tokens(
        self,
        login: str,
        hashes: dict[str, str],
        expires: float,
        user_id: int | None = None,
        client_id: int | None = None,
    ) -> None:
        """Store one token per kind (``bearer``, ``session``) for one login."""

    def find_token(self, kind: str, token_hash: str, now: float) -> Record | None:
        """``{"login", "user", "clientId"}`` of a live token; None if unknown,
        expired or revoked."""

    def end_login(self, login: str) -> None:
        """Revoke every token of a login (its bearer and its session)."""

    def create_api_key(
        self, name: str, user_id: int, key_hash: str, now: str
    ) -> Record:
        """Raises ``UnknownUser`` when ``user_id`` names no user."""

    def list_api_keys(self, after: int, limit: int) -> list[Record]: ...

    def delete_api_key(self, key_id: int) -> bool: ...

    def find_api_key(self, key_hash: str) -> Record | None:
        """The user an API key speaks for."""

    def create_oauth_client(
        self, name: str, client_id: str, secret_hash: str, now: str
    ) -> Record: ...

    def list_oauth_clients(self, after: int, limit: int) -> list[Record]: ...

    def delete_oauth_client(self, record_id: int) -> bool: ...

    def find_oauth_client(self, client_id: str) -> tuple[Record, str] | None:
        """An OAuth client and its secret's hash."""

    def reserve_login_attempt(
        self, limits: Sequence[tuple[str, int]], now: float, window: float
    ) -> float:
        """Count an attempt against each ``(key, limit)``, unless that would take
        a key past its limit: then count none, and answer the seconds until its
        counter ends. 0 when counted. A counter starts with its first attempt and
        ends ``window`` seconds later; ended ones are purged, whatever their key.
        Each count is incremented and read in one statement, so concurrent
        attempts never pass a limit."""

    def release_login_attempt(self, keys: Sequence[str]) -> None:
        """Take back an attempt counted against each key (the password was right)."""

    def reset(self) -> None:
        """Put every resource back to the seed, and move the reset epoch on."""

    def close(self) -> None: ...
