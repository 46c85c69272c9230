"""PostgreSQL's connections: a pool a process, bounded waits, faults as outages.

- **A pool a process.** psycopg_pool's pool is made with ``open=False`` and opened
  by the first query of each process, so a pool is never shared across a
  ``fork`` (a gunicorn worker opens its own; one inherited from a parent is left
  untouched, as its connections are the parent's). ``REFAPI_DB_POOL_MAX``
  connections at most; a request waits ``REFAPI_DB_POOL_TIMEOUT`` for one.
- **One connection a request.** Between ``hold`` and ``let_go`` (``App`` holds
  around each request) a thread's calls share the connection the first of them
  took from the pool (docs/several-hosts.md).
- **Bounded waits.** Every statement is bounded by ``REFAPI_DB_STATEMENT_TIMEOUT``
  (the server's ``statement_timeout``). A statement timeout never fires against a
  server that does not answer, so connections also have ``connect_timeout``, TCP
  keepalives and ``tcp_user_timeout``, and each is checked as it leaves the pool.
  None of these fires against a server whose kernel still answers for it while it
  does not (stopped, swapping, hung): a watchdog thread cuts a connection whose
  round trips outlive the statement timeout by ``CUT_AFTER_S`` (``watchdog.py``).
- **Autocommit.** A single statement is its own transaction (one round trip).
- **Faults are outages, bugs are bugs** (docs/several-hosts.md, "Outages"): a lost
  or refused connection, an exhausted pool, a statement timeout, a read-only
  standby are ``StorageUnavailable`` (503); anything else, such as a missing
  table, is an error (500). The pool replaces a broken connection by itself, so
  the service recovers when the server is back, with no restart.
- **Migrations at start**, on a connection of their own (``schema``); when the
  server cannot be reached then, the first query that can reach it migrates.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import psycopg_pool
from psycopg import errors as pgerrors
from psycopg.conninfo import conninfo_to_dict

from ..base import StorageMisconfigured, StorageUnavailable
from .schema import migrate
from .watchdog import WATCHDOG, Connection

log = logging.getLogger("refapi")


# How long a statement waits for a lock (a row another request is writing, such as
# the claim of an idempotency key) before it gives up: shorter than the statement
# timeout, so a payment waiting on its key's first request answers 409, not 503.
LOCK_WAIT_MS = 2000
# A connection used this recently is handed out unchecked: it answered a moment
# ago, and keepalives watch it. HikariCP skips its check the same way (500 ms).
CHECK_AFTER_IDLE_S = 1.0
# In an outage, how long a request waits for a connection after one has waited the
# whole pool timeout in vain (connection).
FAIL_FAST_S = 0.25
# A connection's use (a checkout's statements, or the check as it leaves the pool)
# is cut this long past the statement timeout, which the server itself enforces
# unless it has stopped answering.
CUT_AFTER_S = 0.25


def _outage(exc: psycopg.Error) -> StorageUnavailable | None:
    """The fault of the environment ``exc`` reports, or None for a bug."""
    if isinstance(exc, psycopg_pool.PoolTimeout):
        return StorageUnavailable(f"no database connection in time: {exc}")
    # Connection lost or refused, statement timeout (57014), the server shutting
    # down (57P01), too many connections (53300), disk full (53100), a lock or a
    # deadlock given up: psycopg's OperationalError. A standby after a failover
    # refuses writes with 25006, an InternalError.
    if isinstance(exc, psycopg.OperationalError | pgerrors.ReadOnlySqlTransaction):
        # One line: libpq puts its hint on a line of its own ("\n\tIs the server
        # running..."), and an outage is said in one line, in a log or by a command.
        return StorageUnavailable("PostgreSQL: " + " ".join(str(exc).split()))
    if isinstance(exc, psycopg.InterfaceError) and "closed" in str(exc):
        return StorageUnavailable(f"PostgreSQL connection closed: {exc}")
    return None


# What a server says refusing a connection for a setting: libpq gives no SQLSTATE
# for a connection that failed, so its (English) message is read.
_NO_DATABASE = re.compile(r'database "[^"]*" does not exist')
_LOGIN_REFUSED = re.compile(
    r'authentication failed|role "[^"]*" does not exist|no pg_hba\.conf entry'
    r"|no password supplied"
)


def check_login(url: str, timeout: float) -> None:
    """Raise ``StorageMisconfigured`` if the server ``url`` names refuses it: the
    database does not exist, or the login is refused. An unreachable server, or
    one that answers late, passes (an outage, not a setting)."""
    try:
        settings = conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        said = str(exc).strip()
        raise StorageMisconfigured(f"DATABASE_URL cannot be read: {said}") from None
    try:
        psycopg.connect(url, connect_timeout=max(2, math.ceil(timeout))).close()
    except psycopg.OperationalError as exc:
        # The server's own words: the line after "FATAL:", without libpq's frame.
        said = str(exc).rpartition("FATAL:")[2].strip().splitlines()[0]
        name, user = settings.get("dbname", "?"), settings.get("user", "?")
        if _NO_DATABASE.search(said):
            raise StorageMisconfigured(
                f"PostgreSQL says: {said}; create it (createdb {name}), or name"
                " another database in DATABASE_URL"
            ) from None
        if _LOGIN_REFUSED.search(said):
            raise StorageMisconfigured(
                f"PostgreSQL refused the login of {user!r} ({said}); correct the"
                " user or password in DATABASE_URL, or the server's pg_hba.conf"
            ) from None


def _fault(exc: psycopg.Error) -> None:
    """Raise the outage ``exc`` reports as ``StorageUnavailable``; return for a bug."""
    outage = _outage(exc)
    if outage is not None:
        raise outage from exc


class Connections:
    """The pooled connections of one database (or a schema of one, by the URL's
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
        self._cut_after = statement_timeout + CUT_AFTER_S
        try:
            self._migrate()
        except StorageUnavailable as exc:
            log.warning(
                "PostgreSQL not reachable at start, will migrate later: %s", exc
            )

    def _migrate(self) -> None:
        try:
            with psycopg.connect(self.url, **self._connect_args) as conn:
                migrate(conn)
        except psycopg.Error as exc:
            _fault(exc)
            raise
        self._migrated = True

    def _configure(self, conn: Connection) -> None:
        with WATCHDOG.watching(conn, self._cut_after):
            conn.execute(
                "SELECT set_config('statement_timeout', %s, false),"
                " set_config('lock_timeout', %s, false)",
                (str(self._statement_ms), str(min(LOCK_WAIT_MS, self._statement_ms))),
            )

    def _check(self, conn: Connection) -> None:
        """Check a connection leaving the pool (one round trip) unless it was in
        use within ``CHECK_AFTER_IDLE_S``; a failed check gets the next one."""
        if time.monotonic() - self._used.get(id(conn), -math.inf) >= CHECK_AFTER_IDLE_S:
            # In an outage, a check gets no longer than a wait for a connection.
            cut = FAIL_FAST_S if self._failing else self._cut_after
            with WATCHDOG.watching(conn, cut):
                psycopg_pool.ConnectionPool.check_connection(conn)

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
    def connection(self) -> Iterator[Connection]:
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
        self._migrated_once()
        pool = self._opened_pool()
        held = self._held.__dict__
        # A call made while the held connection is in use (inside another's
        # transaction) takes one of its own: it must not share that transaction.
        shared = held.get("holding", False) and not held.get("busy", False)
        conn: Connection | None = held.get("conn") if shared else None
        try:
            if conn is None:
                conn = self._checkout(pool, held if shared else None)
            if shared:
                held["busy"] = True
            try:
                with WATCHDOG.watching(conn, self._cut_after):
                    yield conn
            finally:
                if shared:
                    held["busy"] = False
        except psycopg.Error as exc:
            self._met_error(pool, conn, exc)  # an outage: StorageUnavailable
            raise  # a bug, not an outage: a 500
        except BaseException:
            # Not the database's (a 412 from a write's check, rolled back): the
            # connection is as good as it was, held on or given back as usual.
            if conn is not None and not shared:
                self._give_back(pool, conn)
            raise
        if not shared:
            self._give_back(pool, conn)

    def _migrated_once(self) -> None:
        """Migrate the database unless done: once, however many threads start."""
        if not self._migrated:
            with self._opening:
                if not self._migrated:
                    self._migrate()

    def _checkout(
        self, pool: psycopg_pool.ConnectionPool, held: dict[str, Any] | None
    ) -> Connection:
        """A connection from the pool, waited for as long as an outage allows;
        kept in ``held`` (the thread's, between ``hold`` and ``let_go``) if given."""
        timeout = FAIL_FAST_S if self._failing else self._pool_timeout
        conn: Connection = pool.getconn(timeout=timeout)
        self._failing = False
        if held is not None:
            held["conn"] = conn
        return conn

    def _met_error(
        self,
        pool: psycopg_pool.ConnectionPool,
        conn: Connection | None,
        exc: psycopg.Error,
    ) -> None:
        """After ``exc`` from the database: ``conn`` given back, not to be used again
        by the request, and the outage ``exc`` reports raised; return for a bug."""
        if conn is not None:  # it may be broken: the pool and a check will see
            self._give_back(pool, conn, used=False)
        if _outage(exc) is not None:  # until a connection is had again
            self._failing = True
        _fault(exc)

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

    def close(self) -> None:
        if self._pool is not None and self._pid == os.getpid():
            self._pool.close()
        self._pool = None
