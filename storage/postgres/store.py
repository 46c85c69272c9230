"""PostgreSQL backend: one database shared by every worker of several hosts.

- **A pool a process.** psycopg_pool's pool is made with ``open=False`` and opened
  by the first query of each process, so a pool is never shared across a
  ``fork`` (a gunicorn worker opens its own; one inherited from a parent is left
  untouched, as its connections are the parent's). ``REFAPI_DB_POOL_MAX``
  connections at most; a request waits ``REFAPI_DB_POOL_TIMEOUT`` for one.
- **Bounded waits.** Every statement is bounded by ``REFAPI_DB_STATEMENT_TIMEOUT``
  (the server's ``statement_timeout``). A statement timeout never fires against a
  server that does not answer, so connections also have ``connect_timeout``, TCP
  keepalives and ``tcp_user_timeout``, and each is checked as it leaves the pool.
  None of these fires against a server whose kernel still answers for it while it
  does not (stopped, swapping, hung): a watchdog thread cuts a connection whose
  round trips outlive the statement timeout by ``CUT_AFTER_S`` (``_Watchdog``).
- **Autocommit.** A single statement is its own transaction (one round trip);
  what must be atomic takes ``conn.transaction()``: the read-check-write of a
  conditional PATCH or DELETE holds its row with ``SELECT ... FOR UPDATE``, the
  last-admin rule locks every admin row.
- **Faults are outages, bugs are bugs** (docs/several-hosts.md, "Outages"): a lost
  or refused connection, an exhausted pool, a statement timeout, a read-only
  standby are ``StorageUnavailable`` (503); anything else, such as a missing
  table, is an error (500). The pool replaces a broken connection by itself, so
  the service recovers when the server is back, with no restart.
- **Migrations at start**, on a connection of their own (``schema``); when the
  server cannot be reached then, the first query that can reach it migrates.
- **Credentials remembered** (docs/authentication.md, "Remembered credentials"):
  a credential found is remembered with the credential generation its lookup read
  (one row, moved in the transaction of every change to a credential). A request
  may be answered from memory; the bucket take that follows reads the generation
  in the same statement, and ``remembered_credentials_hold`` then says whether the
  answer still held, so a valid token costs no round trip of its own.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import psycopg
import psycopg_pool
from psycopg import errors as pgerrors

from .. import rows
from ..base import (
    KEY_TTL_S,
    Bucket,
    Check,
    EmailTaken,
    Idempotent,
    KeyInUse,
    LastAdmin,
    Record,
    StorageUnavailable,
    UnknownUser,
    iso,
)
from .schema import migrate, seed

log = logging.getLogger("refapi")

Connection = psycopg.Connection[tuple[Any, ...]]

_PROBE = (
    "INSERT INTO meta (key, value) VALUES ('probe', md5(random()::text))"
    " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)
_U_COLUMNS = rows.qualified("u", rows.USER_COLUMNS)
# The credential generation now (migration 011), as a column of another statement,
# and moved (PostgresStore._changing_credentials).
_GENERATION = "(SELECT value FROM credential_generation)"
_BUMP = "UPDATE credential_generation SET value = value + 1 RETURNING value"
REMEMBERED = 4096  # credentials remembered per process, as SQLite's per connection
TAGGED_PAGE = (
    f"SELECT {rows.qualified('a', rows.ARTICLE_COLUMNS)}"
    " FROM article_tags AS t JOIN articles AS a ON a.id = t.article_id"
    " WHERE t.tag = %s AND t.article_id > %s ORDER BY t.article_id LIMIT %s"
)
_INSERT_PAYMENT = (
    f"INSERT INTO payments ({rows.PAYMENT_ROW_COLUMNS})"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
    " ON CONFLICT DO NOTHING RETURNING 1"
)
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
RETURNING tokens, taken, {_GENERATION}
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
# How long a statement waits for a lock (a row another request is writing, such as
# the claim of an idempotency key) before it gives up: shorter than the statement
# timeout, so a payment waiting on its key's first request answers 409, not 503.
LOCK_WAIT_MS = 2000
# A connection used this recently is handed out unchecked: it answered a moment
# ago, and keepalives watch it. HikariCP skips its check the same way (500 ms).
CHECK_AFTER_IDLE_S = 1.0
# In an outage, how long a request waits for a connection after one has waited the
# whole pool timeout in vain (_connection).
FAIL_FAST_S = 0.25
SWEEP_S = 60  # how often a worker frees expired keys, and forgets full buckets
# A connection's use (a checkout's statements, or the check as it leaves the pool)
# is cut this long past the statement timeout, which the server itself enforces
# unless it has stopped answering; the watchdog looks this often.
CUT_AFTER_S = 0.25
WATCH_TICK_S = 0.05


class _Watchdog:
    """Cuts the connections whose use outlives its deadline: a thread of the
    process shuts their sockets down, which ends a wait for the server at once (an
    ``OperationalError``: a 503), and the pool drops them. One per process,
    started by its first use (a fork's is its own)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watched: dict[int, tuple[float, Connection]] = {}
        self._cut: set[int] = set()
        self._pid = 0

    # watch and release, not a context manager: this is twice or more a request, and
    # a generator's context manager costs about 250 bytecodes a use (``make bench``).
    def watch(self, conn: Connection, seconds: float) -> None:
        """Cut ``conn`` unless it is released within ``seconds``."""
        if self._pid != os.getpid():
            self._start()
        with self._lock:
            self._watched[id(conn)] = (time.monotonic() + seconds, conn)

    def release(self, conn: Connection) -> None:
        key = id(conn)
        with self._lock:
            del self._watched[key]
            cut = key in self._cut
            self._cut.discard(key)
        if cut:  # cut as it finished: the pool must not hand it out again
            conn.close()

    def _start(self) -> None:
        with self._lock:
            if self._pid == os.getpid():
                return
            self._watched, self._cut = {}, set()  # a parent's are not ours
            self._pid = os.getpid()
        threading.Thread(
            target=self._run, name="refapi-pg-watchdog", daemon=True
        ).start()

    def _run(self) -> None:
        while True:
            time.sleep(WATCH_TICK_S)
            now = time.monotonic()
            with self._lock:
                for key, (deadline, conn) in self._watched.items():
                    if deadline <= now and key not in self._cut:
                        self._cut.add(key)
                        _shut(conn)


_WATCHDOG = _Watchdog()  # one thread a process, for every store in it


def _shut(conn: Connection) -> None:
    """Shut the connection's socket down: a wait on it ends, as after a reset."""
    with contextlib.suppress(OSError, psycopg.Error):
        fd = os.dup(conn.pgconn.socket)
        with socket.socket(fileno=fd) as sock:
            sock.shutdown(socket.SHUT_RDWR)


class _Reliance(threading.local):
    """What one thread's request has answered from memory: the credential
    generation those answers rely on, and the one a bucket take has read since."""

    relied: int | None = None
    observed: int | None = None


class _OverLimit(Exception):
    """A login attempt would pass a limit: roll back, and wait ``wait`` seconds."""

    def __init__(self, wait: float) -> None:
        self.wait = wait


def _outage(exc: psycopg.Error) -> StorageUnavailable | None:
    """The fault of the environment ``exc`` reports, or None for a bug."""
    if isinstance(exc, psycopg_pool.PoolTimeout):
        return StorageUnavailable(f"no database connection in time: {exc}")
    # Connection lost or refused, statement timeout (57014), the server shutting
    # down (57P01), too many connections (53300), disk full (53100), a lock or a
    # deadlock given up: psycopg's OperationalError. A standby after a failover
    # refuses writes with 25006, an InternalError.
    if isinstance(exc, psycopg.OperationalError | pgerrors.ReadOnlySqlTransaction):
        return StorageUnavailable(f"PostgreSQL: {exc}".strip())
    if isinstance(exc, psycopg.InterfaceError) and "closed" in str(exc):
        return StorageUnavailable(f"PostgreSQL connection closed: {exc}")
    return None


def _fault(exc: psycopg.Error) -> None:
    """Raise the outage ``exc`` reports as ``StorageUnavailable``; return for a bug."""
    outage = _outage(exc)
    if outage is not None:
        raise outage from exc


def _holds_nul(text: str) -> bool:
    """PostgreSQL's text cannot hold U+0000, so no stored value does: a lookup by
    such a text (a query parameter, a path, a form field) finds nothing, as it
    does on SQLite, instead of failing. Bodies with it are refused before here."""
    return "\x00" in text


def _refuse_last_admin(conn: Connection, user_id: int) -> None:
    """Raise ``LastAdmin`` if the user is the only admin. Every admin row is locked
    first, in id order, so a concurrent demotion waits for this transaction and
    then sees its outcome: two admins demoting each other at once leave one."""
    admins = conn.execute(
        "SELECT id FROM users WHERE role = 'admin' ORDER BY id FOR UPDATE"
    ).fetchall()
    if admins == [(user_id,)]:
        raise LastAdmin()


class PostgresStore:
    """The store over one PostgreSQL database (or a schema of one, by the URL's
    ``search_path``); creating it migrates the database when it can."""

    def __init__(
        self,
        url: str,
        *,
        pool_max: int = 2,
        pool_timeout: float = 5.0,
        statement_timeout: float = 5.0,
    ) -> None:
        self.url = url
        self._pool_max = pool_max
        self._pool_timeout = pool_timeout
        self._statement_ms = int(statement_timeout * 1000)
        # libpq's connect_timeout is whole seconds, and at least 2.
        connect_timeout = max(2, math.ceil(pool_timeout))
        self._connect_args: dict[str, Any] = {
            "autocommit": True,
            "connect_timeout": connect_timeout,
            "keepalives": 1,
            "keepalives_idle": 10,
            "keepalives_interval": 5,
            "keepalives_count": 3,
            # Sent data unacknowledged this long: the server is gone.
            "tcp_user_timeout": connect_timeout * 1000,
        }
        self._pool: psycopg_pool.ConnectionPool[Connection] | None = None
        self._used: dict[int, float] = {}  # id of a connection: when last used
        self._pid = 0
        self._inherited: list[object] = []  # pools of a parent process: never used
        self._migrated = False
        self._failing = False  # the last use of the database met an outage
        self._opening = threading.Lock()
        # Per thread, between hold() and let_go(): ``holding``, and the connection
        # its calls share (``conn``) once the first of them took one.
        self._held = threading.local()
        self._secret: bytes | None = None
        # digest -> (generation, kind, record, expires); trusted at the latest
        # generation seen, and only until a later read says it has moved.
        self._remembered: dict[str, tuple[int, str, Any, float]] = {}
        self._latest = -1
        self._reliance = _Reliance()
        self._cut_after = statement_timeout + CUT_AFTER_S
        self._next_key_sweep = self._next_bucket_sweep = 0.0
        try:
            self._migrate()
        except StorageUnavailable as exc:
            log.warning(
                "PostgreSQL not reachable at start, will migrate later: %s", exc
            )

    # -- connections ----------------------------------------------------------

    def _migrate(self) -> None:
        try:
            with psycopg.connect(self.url, **self._connect_args) as conn:
                migrate(conn)
        except psycopg.Error as exc:
            _fault(exc)
            raise
        self._migrated = True

    def _configure(self, conn: Connection) -> None:
        _WATCHDOG.watch(conn, self._cut_after)
        try:
            conn.execute(
                "SELECT set_config('statement_timeout', %s, false),"
                " set_config('lock_timeout', %s, false)",
                (str(self._statement_ms), str(min(LOCK_WAIT_MS, self._statement_ms))),
            )
        finally:
            _WATCHDOG.release(conn)

    def _check(self, conn: Connection) -> None:
        """Check a connection leaving the pool (one round trip) unless it was in
        use within ``CHECK_AFTER_IDLE_S``; a failed check gets the next one."""
        if time.monotonic() - self._used.get(id(conn), -math.inf) >= CHECK_AFTER_IDLE_S:
            # In an outage, a check gets no longer than a wait for a connection.
            cut = FAIL_FAST_S if self._failing else self._cut_after
            _WATCHDOG.watch(conn, cut)
            try:
                psycopg_pool.ConnectionPool.check_connection(conn)
            finally:
                _WATCHDOG.release(conn)

    def _opened_pool(self) -> psycopg_pool.ConnectionPool[Connection]:
        if self._pool is not None and self._pid == os.getpid():
            return self._pool
        with self._opening:  # threads starting together make one pool
            if self._pool is not None and self._pid == os.getpid():
                return self._pool
            if self._pool is not None:  # made before a fork: the parent's to use
                self._inherited.append(self._pool)
            pool: psycopg_pool.ConnectionPool[Connection]
            pool = psycopg_pool.ConnectionPool(
                self.url,
                kwargs=self._connect_args,
                min_size=1,
                max_size=self._pool_max,
                timeout=self._pool_timeout,
                # Given up after this long, so the next request tries afresh at
                # once instead of after a back-off grown through a long outage.
                reconnect_timeout=self._pool_timeout,
                configure=self._configure,
                check=self._check,
                open=False,
                name="refapi",
            )
            pool.open(wait=False)
            self._pool, self._pid = pool, os.getpid()
            return pool

    @contextlib.contextmanager
    def _connection(self) -> Iterator[Connection]:
        """A pooled connection for one request's work; faults as outages.

        Between ``hold`` and ``let_go`` (a request: ``App``) the thread's calls
        share one connection, taken from the pool by the first and given back at
        the end, or at once when a call meets a database error: such a connection
        is never used again by the request (the pool discards it if it is broken).

        Once a request has met an outage (waited out ``REFAPI_DB_POOL_TIMEOUT``
        for a connection, lost one, had one cut), the next ones wait
        ``FAIL_FAST_S`` only for a connection, and for its check as it leaves the
        pool, until one gets a connection: so in an outage every request is a
        prompt 503 instead of holding its worker for the whole wait, and the first
        connection the pool makes again (it keeps trying) ends it.
        """
        if not self._migrated:
            with self._opening:
                if not self._migrated:
                    self._migrate()
        pool = self._opened_pool()
        held = self._held.__dict__
        # A call made while the held connection is in use (inside another's
        # transaction) takes one of its own: it must not share that transaction.
        shared = held.get("holding", False) and not held.get("busy", False)
        conn: Connection | None = held.get("conn") if shared else None
        try:
            if conn is None:
                timeout = FAIL_FAST_S if self._failing else self._pool_timeout
                conn = pool.getconn(timeout=timeout)
                self._failing = False
                if shared:
                    held["conn"] = conn
            if shared:
                held["busy"] = True
            _WATCHDOG.watch(conn, self._cut_after)
            try:
                yield conn
            finally:
                _WATCHDOG.release(conn)
                if shared:
                    held["busy"] = False
        except psycopg.Error as exc:
            if conn is not None:  # it may be broken: the pool and a check will see
                self._give_back(pool, conn, used=False)
            if _outage(exc) is not None:  # until a connection is had again
                self._failing = True
            _fault(exc)
            raise  # a bug, not an outage: a 500
        except BaseException:
            # Not the database's (a 412 from a write's check, rolled back): the
            # connection is as good as it was, held on or given back as usual.
            if conn is not None and not shared:
                self._give_back(pool, conn)
            raise
        if not shared:
            self._give_back(pool, conn)

    def _give_back(
        self, pool: psycopg_pool.ConnectionPool, conn: Connection, used: bool = True
    ) -> None:
        """Return ``conn`` to its pool (which resets or replaces it as it needs),
        no longer held. ``used``: it served well just now, so its next checkout
        skips the check; one that met an error is checked."""
        held = self._held.__dict__
        if held.get("conn") is conn:
            del held["conn"]
        if used:
            if len(self._used) > 64:  # connections the pool has replaced
                self._used.clear()
            self._used[id(conn)] = time.monotonic()
        else:
            self._used.pop(id(conn), None)
        pool.putconn(conn)

    def hold(self) -> None:
        self._held.holding = True

    def let_go(self) -> None:
        held = self._held.__dict__
        held["holding"] = False
        conn = held.get("conn")
        if conn is not None and self._pool is not None:
            self._give_back(self._pool, conn)

    @contextlib.contextmanager
    def _write(self) -> Iterator[Connection]:
        """A connection inside one transaction: committed whole, or rolled back."""
        with self._connection() as conn, conn.transaction():
            yield conn

    def _run(self, sql: str, args: Sequence[Any] = ()) -> None:
        with self._connection() as conn:
            conn.execute(sql, args)

    def _one(self, sql: str, args: Sequence[Any] | dict[str, Any] = ()) -> Any:
        with self._connection() as conn:
            return conn.execute(sql, args).fetchone()

    def _all(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        with self._connection() as conn:
            return conn.execute(sql, args).fetchall()

    def _page(
        self,
        table: str,
        columns: str,
        mapper: Callable[[Any], Record],
        after: int,
        limit: int,
    ) -> list[Record]:
        found = self._all(
            f"SELECT {columns} FROM {table} WHERE id > %s ORDER BY id LIMIT %s",
            (after, rows.page_size(limit)),
        )
        return [mapper(row) for row in found]

    def _delete(self, table: str, record_id: int, credential: bool = False) -> bool:
        """Delete one row by id; whether there was one. A ``credential`` moves
        the credential generation first, in the same transaction."""
        sql = f"DELETE FROM {table} WHERE id = %s RETURNING 1"
        if not credential:
            return bool(self._one(sql, (record_id,)))
        with self._changing_credentials() as conn:
            return bool(conn.execute(sql, (record_id,)).fetchone())

    @contextlib.contextmanager
    def _changing_credentials(self) -> Iterator[Connection]:
        """A transaction that changes a credential. The credential generation is
        moved first, so such transactions queue on its row before they lock any
        other (never in a circle), and noted once committed: what this process
        remembers is old."""
        with self._write() as conn:
            row = conn.execute(_BUMP).fetchone()
            yield conn
        self._saw(row[0] if row else None)

    # -- the interface ----------------------------------------------------------

    def ping(self) -> None:
        self._one(_PROBE + " RETURNING 1")

    def ping_buckets(self) -> None:
        # A write, as a take is one: a read-only server (a standby) fails it. The
        # row is full at once, so the next sweep forgets it.
        self._run(
            "INSERT INTO buckets (key, tokens, stamp, full_at, taken)"
            f" VALUES ('health probe', 1, {_NOW}, {_NOW}, false)"
            " ON CONFLICT (key) DO UPDATE SET stamp = excluded.stamp"
        )

    def secret_key(self) -> bytes:
        if self._secret is None:
            row = self._one("SELECT value FROM meta WHERE key = 'secret_key'")
            if row is None:
                raise StorageUnavailable("the database holds no secret key")
            self._secret = bytes.fromhex(row[0])
        return self._secret

    def reset_epoch(self) -> int:
        row = self._one("SELECT value FROM meta WHERE key = 'reset_epoch'")
        return int(row[0]) if row else 0

    def list_articles(
        self, after: int, limit: int, tag: str | None = None
    ) -> list[Record]:
        if tag is None:
            return self._page(
                "articles", rows.ARTICLE_COLUMNS, rows.article, after, limit
            )
        if _holds_nul(tag):
            return []
        found = self._all(TAGGED_PAGE, (tag, after, rows.page_size(limit)))
        return [rows.article(row) for row in found]

    def get_article(self, article_id: int) -> Record | None:
        row = self._one(
            f"SELECT {rows.ARTICLE_COLUMNS} FROM articles WHERE id = %s", (article_id,)
        )
        return rows.article(row) if row else None

    def create_article(
        self, title: str, tags: list[str], now: float, author: Record | None = None
    ) -> Record:
        kind, author_id = (author["type"], author["id"]) if author else (None, None)
        row = self._one(
            "INSERT INTO articles"
            " (title, tags, created_at, updated_at, author_type, author_id)"
            f" VALUES (%s, %s, %s, %s, %s, %s) RETURNING {rows.ARTICLE_COLUMNS}",
            (title, rows.tags_text(tags), iso(now), iso(now), kind, author_id),
        )
        return rows.article(row)

    def _article_for_update(self, conn: Connection, article_id: int) -> Record | None:
        row = conn.execute(
            f"SELECT {rows.ARTICLE_COLUMNS} FROM articles WHERE id = %s FOR UPDATE",
            (article_id,),
        ).fetchone()
        return rows.article(row) if row else None

    def update_article(
        self, article_id: int, changes: Record, now: float, check: Check
    ) -> Record | None:
        with self._write() as conn:
            current = self._article_for_update(conn, article_id)
            if current is None:
                return None
            check(current)
            updated = rows.changed_article(current, changes, now)
            if updated is None:
                return current
            conn.execute(
                "UPDATE articles SET title = %s, tags = %s, updated_at = %s"
                " WHERE id = %s",
                (
                    updated["title"],
                    rows.tags_text(updated["tags"]),
                    updated["updatedAt"],
                    article_id,
                ),
            )
            return updated

    def delete_article(self, article_id: int, check: Check) -> bool:
        with self._write() as conn:
            current = self._article_for_update(conn, article_id)
            if current is None:
                return False
            check(current)
            conn.execute("DELETE FROM articles WHERE id = %s", (article_id,))
            return True

    def get_todo(self, todo_id: int) -> Record | None:
        row = self._one(
            f"SELECT {rows.TODO_COLUMNS} FROM todos WHERE id = %s", (todo_id,)
        )
        return rows.todo(row) if row else None

    def list_items(self, after: int, limit: int) -> list[Record]:
        return self._page("items", rows.ITEM_COLUMNS, rows.item, after, limit)

    def create_payment(
        self,
        owner: str,
        key: str,
        fingerprint: str,
        payment: Record,
        body: bytes,
        now: float,
    ) -> Idempotent:
        row = rows.payment_row(owner, key, fingerprint, payment, body, now)
        first_time = Idempotent(fingerprint, 201, body, payment["id"], replayed=False)
        self._expire_keys(now)
        # The claim is the INSERT that stores the payment and its answer, one
        # statement committed at once: a concurrent request with the key waits on
        # the unique index only while that statement runs, then finds the outcome.
        for _ in range(5):  # a key freed by the expiry in between: claim again
            try:
                if self._one(_INSERT_PAYMENT, row):
                    return first_time
            except StorageUnavailable as exc:
                # Waited LOCK_WAIT_MS on the first request's uncommitted claim.
                if isinstance(exc.__cause__, pgerrors.LockNotAvailable):
                    raise KeyInUse(1) from exc
                raise
            with self._write() as conn:
                first = conn.execute(
                    "SELECT fingerprint, status, body, id, created FROM payments"
                    " WHERE scope = %s AND idempotency_key = %s FOR UPDATE",
                    (owner, key),
                ).fetchone()
                if first is None:
                    # The row that held the key let it go while this waited for
                    # it (a concurrent request freed the expired key and claimed
                    # it anew, in a row this statement cannot see): claim again.
                    continue
                if first[4] >= now - KEY_TTL_S:
                    return Idempotent(
                        first[0], first[1], bytes(first[2]), first[3], True
                    )
                # The key expired and was not yet swept: free it from that row
                # alone (locked above), and claim it afresh.
                conn.execute(
                    "UPDATE payments SET idempotency_key = NULL WHERE id = %s",
                    (first[3],),
                )
                if conn.execute(_INSERT_PAYMENT, row).fetchone():
                    return first_time
        raise StorageUnavailable("the idempotency key kept changing hands")

    def _expire_keys(self, now: float) -> None:
        """Free the keys of payments older than 24 hours, at most once a minute a
        worker (a range of the partial index on live keys, migration 003)."""
        if now < self._next_key_sweep:
            return
        self._next_key_sweep = now + SWEEP_S
        self._run(
            "UPDATE payments SET idempotency_key = NULL"
            " WHERE idempotency_key IS NOT NULL AND created < %s",
            (now - KEY_TTL_S,),
        )

    def get_payment(self, payment_id: str, owner: str) -> Record | None:
        if _holds_nul(payment_id):
            return None
        row = self._one(
            f"SELECT {rows.PAYMENT_COLUMNS} FROM payments WHERE id = %s AND scope = %s",
            (payment_id, owner),
        )
        return rows.payment(row) if row else None

    def list_notes(self, after: int, limit: int) -> list[Record]:
        return self._page("notes", rows.NOTE_COLUMNS, rows.note, after, limit)

    def get_note(self, note_id: int) -> Record | None:
        row = self._one(
            f"SELECT {rows.NOTE_COLUMNS} FROM notes WHERE id = %s", (note_id,)
        )
        return rows.note(row) if row else None

    def create_note(self, text: str, now: float, keep: int) -> Record:
        with self._write() as conn:
            # Creates queue here, so concurrent ones never leave more than `keep`.
            conn.execute("LOCK TABLE notes IN SHARE ROW EXCLUSIVE MODE")
            row: Any = conn.execute(
                "INSERT INTO notes (text, created_at) VALUES (%s, %s)"
                f" RETURNING {rows.NOTE_COLUMNS}",
                (text, iso(now)),
            ).fetchone()
            conn.execute(
                "DELETE FROM notes WHERE id <= (SELECT id FROM notes"
                " ORDER BY id DESC LIMIT 1 OFFSET %s)",
                (keep,),
            )
        return rows.note(row)

    def update_note(self, note_id: int, text: str) -> Record | None:
        row = self._one(
            f"UPDATE notes SET text = %s WHERE id = %s RETURNING {rows.NOTE_COLUMNS}",
            (text, note_id),
        )
        return rows.note(row) if row else None

    def delete_note(self, note_id: int) -> bool:
        return self._delete("notes", note_id)

    # -- users and credentials ------------------------------------------------

    def create_user(
        self,
        email: str,
        password_hash: str,
        first: str,
        last: str,
        role: str,
        now: float,
    ) -> Record:
        # WHERE NOT EXISTS, not ON CONFLICT: a refused insert then draws no id from
        # the sequence, so ids come out as SQLite's do for the same requests.
        try:
            row = self._one(
                "INSERT INTO users (email, email_key, password_hash, first_name,"
                " last_name, role, created_at, updated_at)"
                " SELECT %(email)s, %(key)s, %(hash)s, %(first)s, %(last)s, %(role)s,"
                " %(now)s, %(now)s"
                " WHERE NOT EXISTS (SELECT 1 FROM users WHERE email_key = %(key)s)"
                f" RETURNING {rows.USER_COLUMNS}",
                {
                    "email": email,
                    "key": rows.email_key(email),
                    "hash": password_hash,
                    "first": first,
                    "last": last,
                    "role": role,
                    "now": iso(now),
                },
            )
        except pgerrors.UniqueViolation:  # taken by a concurrent insert
            raise EmailTaken() from None
        if row is None:
            raise EmailTaken()
        return rows.user(row)

    def get_user(self, user_id: int) -> Record | None:
        row = self._one(
            f"SELECT {rows.USER_COLUMNS} FROM users WHERE id = %s", (user_id,)
        )
        return rows.user(row) if row else None

    def user_login(self, email: str) -> tuple[Record, str] | None:
        if _holds_nul(email):
            return None
        row = self._one(
            f"SELECT {rows.USER_COLUMNS}, password_hash FROM users"
            " WHERE email_key = %s",
            (rows.email_key(email),),
        )
        return (rows.user(row), row[7]) if row else None

    def list_users(self, after: int, limit: int) -> list[Record]:
        return self._page("users", rows.USER_COLUMNS, rows.user, after, limit)

    def replace_user(
        self,
        user_id: int,
        fields: Record,
        password_hash: str | None,
        now: float,
        keep_login: str | None = None,
    ) -> Record | None:
        email = fields["email"]
        try:
            # A role, a name, a password: all of it remembered with a token.
            with self._changing_credentials() as conn:
                if fields["role"] != "admin":
                    _refuse_last_admin(conn, user_id)
                row = conn.execute(
                    "UPDATE users SET email = %s, email_key = %s, first_name = %s,"
                    " last_name = %s, role = %s, updated_at = %s,"
                    " password_hash = coalesce(%s, password_hash)"
                    f" WHERE id = %s RETURNING {rows.USER_COLUMNS}",
                    (
                        email,
                        rows.email_key(email),
                        fields["firstName"],
                        fields["lastName"],
                        fields["role"],
                        iso(now),
                        password_hash,
                        user_id,
                    ),  # fmt: skip
                ).fetchone()
                if row is not None and password_hash is not None:
                    # A new password ends the other logins: a stolen token too.
                    conn.execute(
                        "DELETE FROM tokens WHERE user_id = %s"
                        " AND login IS DISTINCT FROM %s",
                        (user_id, keep_login),
                    )
        except pgerrors.UniqueViolation:
            raise EmailTaken() from None
        return rows.user(row) if row else None

    def delete_user(self, user_id: int) -> bool:
        with self._changing_credentials() as conn:
            _refuse_last_admin(conn, user_id)
            # Foreign keys cascade to the user's tokens and API keys.
            return bool(
                conn.execute(
                    "DELETE FROM users WHERE id = %s RETURNING 1", (user_id,)
                ).fetchone()
            )

    def has_admin(self) -> bool:
        return bool(self._one("SELECT 1 FROM users WHERE role = 'admin' LIMIT 1"))

    def create_tokens(
        self,
        login: str,
        hashes: dict[str, str],
        expires: float,
        user_id: int | None = None,
        client_id: int | None = None,
    ) -> None:
        with self._write() as conn, conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO tokens (hash, kind, login, user_id, client_id, expires)"
                " VALUES (%s, %s, %s, %s, %s, %s)",
                [
                    (digest, kind, login, user_id, client_id, expires)
                    for kind, digest in hashes.items()
                ],
            )
            # Expired tokens go as new ones come: a range of the expiry index.
            cursor.execute(
                "DELETE FROM tokens WHERE expires < %s", (expires - 86400 * 7,)
            )

    def find_token(self, kind: str, token_hash: str, now: float) -> Record | None:
        hit = self._recall(token_hash, kind)
        if hit is not None:
            return hit[2] if hit[3] > now else None
        row = self._one(
            f"SELECT t.login, t.client_id, t.expires, {_U_COLUMNS}, {_GENERATION}"
            " FROM tokens AS t LEFT JOIN users AS u ON u.id = t.user_id"
            " WHERE t.hash = %s AND t.kind = %s",
            (token_hash, kind),
        )
        if row is None or row[2] <= now:
            return None
        user = rows.user(row[3:-1]) if row[3] is not None else None
        found = {"login": row[0], "clientId": row[1], "user": user}
        self._remember(token_hash, (row[-1], kind, found, row[2]))
        return found

    def end_login(self, login: str) -> None:
        with self._changing_credentials() as conn:
            conn.execute("DELETE FROM tokens WHERE login = %s", (login,))

    def remembered_credentials_hold(self) -> bool:
        reliance = self._reliance
        relied, observed = reliance.relied, reliance.observed
        if relied is None:
            return True
        reliance.relied = None
        if observed is None:  # no bucket take since: ask
            (observed,) = self._one(f"SELECT {_GENERATION}")
            self._saw(observed)
        return observed == relied

    def _recall(self, digest: str, kind: str) -> tuple[int, str, Any, float] | None:
        """A credential remembered at the latest generation seen; the request now
        relies on that generation, until a bucket take reads the one after."""
        hit = self._remembered.get(digest)
        if hit is None or hit[0] != self._latest or hit[1] != kind:
            return None
        reliance = self._reliance
        reliance.relied, reliance.observed = hit[0], None
        return hit

    def _remember(self, digest: str, entry: tuple[int, str, Any, float]) -> None:
        if entry[0] is None:
            return  # no generation to check it against: looked up every time
        self._saw(entry[0])
        if len(self._remembered) >= REMEMBERED:
            self._remembered.clear()  # forgetting costs lookups, never a wrong answer
        self._remembered[digest] = entry

    def _saw(self, generation: int | None) -> None:
        """Note a credential generation read. One lower than the latest seen (a
        dump restored under running hosts) forgets everything remembered: no
        number may come back to match what was remembered before."""
        if generation is None:
            return  # the row is gone: nothing read now is remembered (_remember)
        if generation < self._latest:
            self._remembered.clear()
            self._latest = generation
        elif generation > self._latest:
            self._latest = generation

    def create_api_key(
        self, name: str, user_id: int, key_hash: str, now: float
    ) -> Record:
        try:
            # As for users: a key for no user draws no id (WHERE EXISTS); the
            # foreign key still refuses a user deleted meanwhile.
            row = self._one(
                "INSERT INTO api_keys (name, user_id, hash, created_at)"
                " SELECT %(name)s, %(user)s, %(hash)s, %(now)s"
                " WHERE EXISTS (SELECT 1 FROM users WHERE id = %(user)s)"
                f" RETURNING {rows.API_KEY_COLUMNS}",
                {"name": name, "user": user_id, "hash": key_hash, "now": iso(now)},
            )
        except pgerrors.ForeignKeyViolation:
            raise UnknownUser() from None
        if row is None:
            raise UnknownUser()
        return rows.api_key(row)

    def list_api_keys(self, after: int, limit: int) -> list[Record]:
        return self._page("api_keys", rows.API_KEY_COLUMNS, rows.api_key, after, limit)

    def delete_api_key(self, key_id: int) -> bool:
        return self._delete("api_keys", key_id, credential=True)

    def find_api_key(self, key_hash: str) -> Record | None:
        hit = self._recall(key_hash, "api_key")
        if hit is not None:
            return hit[2]
        row = self._one(
            f"SELECT {_U_COLUMNS}, {_GENERATION}"
            " FROM api_keys AS k JOIN users AS u ON u.id = k.user_id"
            " WHERE k.hash = %s",
            (key_hash,),
        )
        if row is None:
            return None
        user = rows.user(row[:-1])
        self._remember(key_hash, (row[-1], "api_key", user, math.inf))
        return user

    def create_oauth_client(
        self, name: str, client_id: str, secret_hash: str, now: float
    ) -> Record:
        row = self._one(
            "INSERT INTO oauth_clients (name, client_id, secret_hash, created_at)"
            f" VALUES (%s, %s, %s, %s) RETURNING {rows.OAUTH_CLIENT_COLUMNS}",
            (name, client_id, secret_hash, iso(now)),
        )
        return rows.oauth_client(row)

    def list_oauth_clients(self, after: int, limit: int) -> list[Record]:
        return self._page(
            "oauth_clients", rows.OAUTH_CLIENT_COLUMNS, rows.oauth_client, after, limit
        )

    def delete_oauth_client(self, record_id: int) -> bool:
        return self._delete("oauth_clients", record_id, credential=True)

    def find_oauth_client(self, client_id: str) -> tuple[Record, str] | None:
        if _holds_nul(client_id):
            return None
        row = self._one(
            f"SELECT {rows.OAUTH_CLIENT_COLUMNS}, secret_hash FROM oauth_clients"
            " WHERE client_id = %s",
            (client_id,),
        )
        return (rows.oauth_client(row), row[4]) if row else None

    def reserve_login_attempt(
        self, limits: Sequence[tuple[str, int]], now: float, window: float
    ) -> float:
        try:
            with self._write() as conn:
                conn.execute(
                    "DELETE FROM login_attempts WHERE started <= %s", (now - window,)
                )
                # In key order, as every reserve locks them: never in a circle.
                for key, limit in sorted(limits):
                    count, started = conn.execute(
                        "INSERT INTO login_attempts AS a (key, started, count)"
                        " VALUES (%s, %s, 1) ON CONFLICT (key)"
                        " DO UPDATE SET count = a.count + 1"
                        " RETURNING count, started",
                        (key, now),
                    ).fetchone() or (0, now)
                    if count > limit:  # the transaction counts none, then
                        raise _OverLimit(started + window - now)
        except _OverLimit as over:
            return max(over.wait, 1e-3)
        return 0.0

    def release_login_attempt(self, keys: Sequence[str]) -> None:
        with self._write() as conn, conn.cursor() as cursor:
            cursor.executemany(
                "UPDATE login_attempts SET count = count - 1"
                " WHERE key = %s AND count > 0",
                [(key,) for key in sorted(keys)],
            )

    def take_from_buckets(
        self,
        buckets: Sequence[Bucket],
        now: float,
        refund: Bucket | None = None,
    ) -> tuple[bool, list[float]]:
        # `now` is the host's clock: the buckets run on the database's instead, so
        # hosts whose clocks differ still share one refill rate. Once a minute a
        # worker forgets the buckets full again (a new row starts full anyway).
        if now >= self._next_bucket_sweep:
            self._next_bucket_sweep = now + SWEEP_S
            self._run(f"DELETE FROM buckets WHERE full_at < {_NOW}")
        if len(buckets) == 1 and refund is None:
            key, capacity, refill = buckets[0]
            level, taken, generation = self._one(
                _TAKE_ONE, {"key": key, "capacity": capacity, "refill": refill}
            )
            self._reliance.observed = generation
            self._saw(generation)
            return bool(taken), [float(level)]
        wanted = {key: (capacity, refill) for key, capacity, refill in buckets}
        if refund is not None:
            wanted.setdefault(refund[0], refund[1:])
        with self._write() as conn:
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

    def reset(self) -> None:
        # Accounts and credentials stay: a reset must not lock the operator out.
        with self._write() as conn:
            # Creates wait for the reset to commit: a sequence's restart is not
            # transactional, so an insert meanwhile could take an id twice.
            conn.execute("LOCK TABLE articles, notes IN EXCLUSIVE MODE")
            conn.execute("DELETE FROM payments")
            conn.execute("DELETE FROM articles")
            conn.execute("DELETE FROM notes")
            conn.execute("DELETE FROM todos")
            conn.execute("DELETE FROM items")
            for table in ("articles", "notes"):  # ids start again at 1, as SQLite's
                conn.execute(
                    "SELECT setval(pg_get_serial_sequence(%s, 'id'), 1, false)",
                    (table,),
                )
            seed(conn)
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('reset_epoch', '1')"
                " ON CONFLICT (key) DO UPDATE"
                " SET value = (meta.value::bigint + 1)::text"
            )

    def close(self) -> None:
        if self._pool is not None and self._pid == os.getpid():
            self._pool.close()
        self._pool = None
