"""The storage interface: what the handlers may ask of a backend.

Backends return resources as plain dicts already in their API shape (camelCase
fields, ISO 8601 timestamps), so handlers do no mapping. Lists are keyset pages:
``after`` is the last id the client saw and ``limit`` the page size; a backend
returns up to ``limit + 1`` rows (``rows.page_size``) so the caller can tell
whether a next page exists without a second query.

Every ``now`` is epoch seconds, a float (the clock's type); a backend formats a
stored time for the API with ``iso`` alone.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .grade_runs import GradeStore

Record = dict[str, Any]
Bucket = tuple[str, int, float]  # a token bucket's key, capacity, refill per second
Taken = tuple[bool, list[float]]  # a take: allowed, each bucket's tokens left
Check = Callable[[Record], None]
KEY_TTL_S = 24 * 3600  # how long an idempotency key is remembered
MAX_ID = 2**63 - 1  # the largest id a 64-bit integer column holds


def iso(timestamp: float) -> str:
    """Epoch seconds as RFC 3339 UTC with the ``Z`` offset."""
    return _second(int(timestamp // 1))


@functools.lru_cache(maxsize=1)  # a busy second's writes share its text
def _second(second: int) -> str:
    # PERF: about 3,500 instructions a created article, make bench-instructions
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))


@dataclass(frozen=True)
class Idempotent:
    """The stored outcome of the first request made under an idempotency key."""

    fingerprint: str
    status: int
    body: bytes
    resource_id: str
    replayed: bool


@dataclass(frozen=True)
class Claim:
    """An idempotency key as a create claims it: whose it is and on which route
    (one key names one request of one caller on one route), and the fingerprint
    of the request that came with it."""

    owner: str  # the caller, as a payment's owner: user:7, else addr:<address>
    method: str
    route: str  # the route's template (the demo's with its action)
    key: str
    fingerprint: str


# A created record's answer body, stored for replay: the handler renders it inside
# the create's transaction (storage renders no JSON), so a failure stores nothing.
Render = Callable[[Record], bytes]


class EmailTaken(Exception):
    """Another user has this email (compared without regard to case)."""


class LastAdmin(Exception):
    """The change would leave no admin: the user is the only one."""


class PasswordChanged(Exception):
    """The password is no longer the one the change was allowed by."""


class UnknownUser(Exception):
    """The user a record was to belong to does not exist (or was just deleted)."""


class UnknownClient(Exception):
    """The OAuth client a token was to speak for does not exist, or was just deleted."""


class KeyInUse(Exception):
    """Another request holding this idempotency key is still storing what it
    made, past the short wait: ask again in ``retry_after`` seconds."""

    def __init__(self, retry_after: int = 1) -> None:
        self.retry_after = retry_after


class StorageUnavailable(Exception):
    """The backend cannot serve now: unreachable, missing, unwritable, or locked
    past a short wait. A fault of the environment, not a bug; the API answers 503
    until it is gone, and the backend recovers by itself when it is."""


class StorageMisconfigured(ValueError):
    """``DATABASE_URL`` names what no wait will make usable: no backend by that
    scheme, a PostgreSQL database that does not exist, a login the server refuses.
    The message says what and how to fix it. At start it stops the start; once
    serving, a database dropped or a password changed is an outage instead."""


class MetaStore(Protocol):
    """Health, the secret key, the reset epoch, reset; migrations run at start."""

    def ping(self) -> None:
        """Raise ``StorageUnavailable`` unless a write can be made now.

        Health calls it, so it proves what a write needs (the data in place, a
        write lock within the short wait, room to write) at little cost.
        """

    def secret_key(self) -> bytes:
        """The key generated on first start and kept with the data."""

    def reset_epoch(self) -> int:
        """How many times ``reset`` has run on this data: 0 until the first.

        Cursors carry it, so one issued before a reset is refused, read afresh on
        each call so every worker sees a reset made by another process at once.
        """

    def reset(self, everything: bool = False) -> None:
        """Put every resource back to the seed, and move the reset epoch on.

        Transaction: the records, the seed and the new epoch in one, so no worker sees
        the new ids with the old epoch. Accounts and credentials stay, unless
        ``everything``: then every account but the first admin (the admin with the
        lowest id, its password unchanged), every credential (the first admin's too) and
        every login counter go in the same transaction, which moves the credential
        generation; then every rate-limit bucket is forgotten (each starts full again).
        """

    # Whether ``hold`` and ``let_go`` do anything: True for a pool, whose
    # connection a request holds; the app calls neither on a store without one.
    pooled: bool

    def hold(self) -> None:
        """From now until ``let_go``, this thread's calls share what they use (one
        connection from a pool: one checkout a request, not one a call). A backend
        with nothing to share does nothing, and says so (``pooled``)."""

    def let_go(self) -> None:
        """End ``hold``: what was held goes back (its pool's connection)."""

    def close(self) -> None: ...


class ArticleStore(Protocol):
    def list_articles(
        self, after: int, limit: int, tag: str | None = None
    ) -> list[Record]:
        """A keyset page of articles; with ``tag``, only those carrying it (exactly),
        found through an index of tags, not by reading every article."""

    def get_article(self, article_id: int) -> Record | None: ...

    def create_article(
        self, title: str, tags: list[str], now: float, author: Record | None = None
    ) -> Record:
        """``author`` is ``{"type": "user"|"client", "id"}``, or None (as the
        articles stored before authors were kept)."""

    def update_article(
        self, article_id: int, changes: Record, now: float, check: Check
    ) -> Record | None:
        """Apply ``changes`` after ``check(current)`` passed; ``check`` raises to
        refuse (not the author, a stale ``If-Match``).

        Transaction: read, check and write in one, holding the row from the read
        to the write (SQLite: ``BEGIN IMMEDIATE``; elsewhere ``SELECT ... FOR
        UPDATE``), so two conditional PATCHes with one ETag never both pass.
        """

    def delete_article(self, article_id: int, check: Check) -> bool:
        """Delete after ``check(current)`` passed; the same read-check-write
        transaction as ``update_article``."""

    def create_article_once(
        self,
        claim: Claim,
        title: str,
        tags: list[str],
        now: float,
        author: Record | None,
        render: Render,
    ) -> Idempotent:
        """``create_article`` at most once per claimed key in 24 hours; else the
        stored outcome of the first. A deleted article's key stays its 24 hours.
        Transaction (claim-then-store): the key is claimed by an insert unique per
        (owner, method, route, key), then the article is written and its answer
        (``render``) stored with the claim, all in one transaction, so there is
        never a claim without its outcome; concurrent requests with one key wait
        on the claim, then find the outcome: exactly one article is made however
        many workers receive the key. A key older than ``KEY_TTL_S`` is freed and
        claimed afresh. A wait on another's claim past the short wait raises
        ``KeyInUse``, not an outage."""


class TodoStore(Protocol):
    def get_todo(self, todo_id: int) -> Record | None: ...


class ItemStore(Protocol):
    def list_items(self, after: int, limit: int) -> list[Record]: ...


class NoteStore(Protocol):
    """The demo endpoint's notes, at most ``keep`` of them."""

    def list_notes(self, after: int, limit: int) -> list[Record]:
        """A keyset page of the demo endpoint's notes."""

    def get_note(self, note_id: int) -> Record | None: ...

    def create_note(self, text: str, now: float, keep: int) -> Record:
        """Add a note and remove the oldest beyond the newest ``keep``.

        Transaction: the insert and the removal in one, so concurrent creates
        never leave more than ``keep``.
        """

    def create_note_once(
        self, claim: Claim, text: str, now: float, keep: int, render: Render
    ) -> Idempotent:
        """``create_note`` at most once per claimed key, as ``create_article_once``;
        the key is the note's and goes with it (deleted, or pushed out by newer
        notes), so the keys never outnumber the notes kept."""

    def update_note(self, note_id: int, text: str) -> Record | None: ...

    def delete_note(self, note_id: int) -> bool: ...


class PaymentStore(Protocol):
    """Payments, each made once per idempotency key of its owner.

    ``owner`` is the caller a payment and its keys belong to (the principal,
    e.g. ``user:7``), kept in the table's ``scope`` column (named before the
    word was given to cursors alone: docs/development.md, "Words").
    """

    def create_payment(
        self,
        owner: str,
        key: str,
        fingerprint: str,
        payment: Record,
        body: bytes,
        now: float,
    ) -> Idempotent:
        """Store ``payment`` once per (owner, key) in 24 hours; else the stored outcome.

        Transaction (claim-then-store): the key is claimed by the same write that
        stores the payment and the key's record (status 201 and ``body``, the
        rendered answer), and the claim is unique per (owner, key), so concurrent
        requests with one key serialize on it: exactly one payment is created
        however many workers receive the key. A key older than ``KEY_TTL_S`` is
        freed and claimed afresh. A request that waits for another's claim longer
        than a short wait raises ``KeyInUse``, not an outage.
        """

    def get_payment(self, payment_id: str, owner: str) -> Record | None:
        """The payment, if it was made by ``owner``."""


class UserStore(Protocol):
    """User accounts; passwords arrive slow-hashed."""

    def create_user(
        self,
        email: str,
        password_hash: str,
        first: str,
        last: str,
        role: str,
        now: float,
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
        now: float,
        keep_login: str | None = None,
        current_hash: str | None = None,
    ) -> Record | None:
        """Set ``email``, ``firstName``, ``lastName``, ``role``; with a password
        hash, set it and end every token and session of the user but those of
        ``keep_login`` (API keys stay), and with ``current_hash`` only while the
        stored hash is that one (else ``PasswordChanged``). Raises ``EmailTaken``.
        Transaction: a demotion raises ``LastAdmin`` when the user is the only
        admin, and the hash is compared, in the transaction that writes, with
        every other change of the row held off until it commits, so two admins
        demoting each other leave one, and of two changes from one password one."""

    def delete_user(self, user_id: int) -> bool:
        """Delete the user and every token and key that speaks for it; raises
        ``LastAdmin`` for the only admin, under the same rule as ``replace_user``."""

    def has_admin(self) -> bool: ...

    def set_password(self, email: str, password_hash: str, now: float) -> Record | None:
        """Set the password hash of the account of ``email`` (any case) and end
        every token and session of it (API keys stay); the user, or None when no
        account has the email."""


class RecordStore(
    ArticleStore,
    TodoStore,
    ItemStore,
    NoteStore,
    PaymentStore,
    UserStore,
    Protocol,
):
    """The resources the API serves."""


class LoginStore(Protocol):
    """Login tokens (a bearer token and a session per login); secrets arrive
    hashed. A login token is a credential, not a rate-limit bucket's token."""

    def create_tokens(
        self,
        login: str,
        hashes: dict[str, str],
        expires: float,
        user_id: int | None = None,
        client_id: int | None = None,
    ) -> None:
        """Store one token per kind (``bearer``, ``session``) for one login. Raises
        ``UnknownUser`` (or ``UnknownClient``) when its principal was deleted since
        it was read, by a ``DELETE`` or a fresh start: the insert's foreign key
        refuses it, so no token outlives its principal."""

    def find_token(self, kind: str, token_hash: str, now: float) -> Record | None:
        """``{"login", "user", "clientId"}`` of a live token; None if unknown,
        expired or revoked."""

    def end_login(self, login: str) -> None:
        """Revoke every token of a login (its bearer and its session)."""


class ApiKeyStore(Protocol):
    def create_api_key(
        self, name: str, user_id: int, key_hash: str, now: float
    ) -> Record:
        """Raises ``UnknownUser`` when ``user_id`` names no user, checked in the
        insert itself (a foreign key), so a user deleted meanwhile gets no key."""

    def list_api_keys(self, after: int, limit: int) -> list[Record]: ...

    def delete_api_key(self, key_id: int) -> bool: ...

    def find_api_key(self, key_hash: str) -> Record | None:
        """The user an API key speaks for."""


class OAuthClientStore(Protocol):
    def create_oauth_client(
        self, name: str, client_id: str, secret_hash: str, now: float
    ) -> Record: ...

    def list_oauth_clients(self, after: int, limit: int) -> list[Record]: ...

    def delete_oauth_client(self, record_id: int) -> bool: ...

    def find_oauth_client(self, client_id: str) -> tuple[Record, str] | None:
        """An OAuth client and its secret's hash."""


class LoginAttemptStore(Protocol):
    """Counters of failed logins, shared by every worker and host."""

    def reserve_login_attempt(
        self, limits: Sequence[tuple[str, int]], now: float, window: float
    ) -> float:
        """Count an attempt against each ``(key, limit)``, unless that would take
        a key past its limit: then count none, and answer the seconds until its
        counter ends. 0 when counted. A counter starts with its first attempt and
        ends ``window`` seconds later; ended ones are purged, whatever their key.

        Transaction (the reserve): every count is incremented and read in one
        statement, all of them in one transaction rolled back when one passes
        its limit, so concurrent attempts never pass a limit."""

    def release_login_attempt(self, keys: Sequence[str]) -> None:
        """Take back an attempt counted against each key (the password was right)."""


class CredentialStore(
    LoginStore, ApiKeyStore, OAuthClientStore, LoginAttemptStore, Protocol
):
    """What authentication asks of storage."""


class Buckets(Protocol):
    """The rate limiter's token buckets, shared by every worker (not login tokens),
    kept beside the data (SQLite: a memory-mapped file; PostgreSQL: rows); not a
    part of ``Store``: ``RateLimit`` is handed them alone."""

    def ping(self) -> None:
        """Raise ``StorageUnavailable`` unless ``take`` can work now."""

    def take(
        self, buckets: Sequence[Bucket], now: float, refund: Bucket | None = None
    ) -> Taken:
        """Take a token from each ``(key, capacity, refill)`` bucket, or from none
        if any is empty: (allowed, each one's tokens left); refused, ``refund`` gets
        back one token. Atomic: the take and the refund are one step every worker
        sees whole. Refill follows ``now`` on one host's backend (SQLite); one shared
        by hosts refills on its own clock (PostgreSQL's), so hosts whose clocks
        differ agree. Raises ``StorageUnavailable`` when the buckets cannot be used."""

    def take_one(
        self, key: str, capacity: int, refill: float, now: float
    ) -> tuple[bool, float]:
        """``take`` of the one bucket most requests pass: (allowed, tokens left).
        PERF: no lists packed and unpacked, 2,800 instructions, make bench-layers"""

    def empty(self) -> None:
        """Forget every bucket, so each starts full again (``refapi reset --all``).
        Raises ``StorageUnavailable`` when the buckets cannot be used."""


class Store(MetaStore, RecordStore, CredentialStore, GradeStore, Protocol):
    """Everything a backend provides: the union of the parts above, and the rate
    limiter's buckets kept beside the data (handed to ``RateLimit`` alone)."""

    buckets: Buckets
