"""PostgreSQL's own: migrations under several hosts, bounded waits, outages told
from bugs (503, not 500), recovery without a restart.

Each test has a schema of its own (tests/postgres.py). Where a test must find the
store's connections on the server, its URL names them by ``application_name``.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import psycopg
import pytest

from refapi.config import Config
from refapi.storage import open_store
from refapi.storage.base import StorageUnavailable
from refapi.storage.migrations import numbered
from refapi.storage.postgres.schema import _LOCK, MIGRATIONS
from tests.postgres import fresh_schema, server_url

pytestmark = pytest.mark.postgres  # PostgreSQL's own

NOW = 1_795_000_000.0
VERSIONS = [number for number, _ in numbered(MIGRATIONS)]


@pytest.fixture
def url() -> Iterator[str]:
    with fresh_schema() as url:
        yield url


def named(url: str) -> tuple[str, str]:
    """``url`` with its connections named on the server, and the name."""
    name = f"refapi_test_{secrets.token_hex(4)}"
    return f"{url}&application_name={name}", name


def server_sees(sql: str, *args: Any) -> Any:
    """One row of a query on the tests' server, on a connection of its own."""
    with psycopg.connect(server_url(), autocommit=True) as conn:
        return conn.execute(sql, args).fetchone()


def connections(name: str) -> int:
    return server_sees(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", name
    )[0]


def poll(condition: Callable[[], Any], seconds: float, what: str) -> Any:
    """Wait for ``condition()`` to be true, at most ``seconds``; its value."""
    deadline = time.monotonic() + seconds
    while not (value := condition()):
        assert time.monotonic() < deadline, f"not within {seconds} s: {what}"
        time.sleep(0.02)
    return value


def waiting_on(name: str, event: str) -> bool:
    """Is a connection named ``name`` waiting for a lock of kind ``event``?"""
    return bool(
        server_sees(
            "SELECT 1 FROM pg_stat_activity WHERE application_name = %s"
            " AND wait_event_type = 'Lock' AND wait_event = %s",
            name,
            event,
        )
    )


@contextlib.contextmanager
def table_locked(url: str, table: str) -> Iterator[psycopg.Connection]:
    """``table`` locked against every access by another connection until the end."""
    with psycopg.connect(url) as holder:  # a transaction, open until the end
        holder.execute(f"LOCK TABLE {table}")
        try:
            yield holder
        finally:
            holder.rollback()


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (just freed by the kernel)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# -- migrations ------------------------------------------------------------------


def test_stores_opened_at_once_migrate_the_schema_once(url):
    start = threading.Barrier(6)

    def open_one(_):
        start.wait()
        return open_store(url)

    with ThreadPoolExecutor(6) as pool:
        stores = list(pool.map(open_one, range(6)))  # raises what any one raised
    try:
        with psycopg.connect(url) as conn:
            found = conn.execute("SELECT version FROM schema_version ORDER BY 1")
            assert [version for (version,) in found] == VERSIONS
            counts = conn.execute(
                "SELECT (SELECT count(*) FROM items), (SELECT count(*) FROM todos),"
                " (SELECT count(*) FROM meta WHERE key = 'secret_key')"
            ).fetchone()
        assert counts == (1000, 200, 1)  # seeded once
        assert len({store.secret_key() for store in stores}) == 1
    finally:
        for store in stores:
            store.close()


def test_each_schema_migrates_under_a_lock_of_its_own(url):
    # Another host migrating schema A holds A's lock: a store opening on A waits
    # for it, one opening on B does not.
    url_a, name_a = named(url)
    with fresh_schema() as url_b, psycopg.connect(url_a) as host:
        host.execute(_LOCK)  # held until the rollback below
        with ThreadPoolExecutor(2) as pool:
            opening_a = pool.submit(open_store, url_a)
            try:
                poll(lambda: waiting_on(name_a, "advisory"), 5, "A waits for A's lock")
                # Bounded: were the lock one for every schema, B would wait too.
                store_b = pool.submit(open_store, url_b).result(timeout=10)
                assert not opening_a.done()
            finally:
                host.rollback()
            store_a = opening_a.result(timeout=10)
        try:
            for store in (store_a, store_b):
                assert store.list_items(998, 5)[-1]["id"] == 1000
        finally:
            store_a.close()
            store_b.close()


# -- bounded waits ---------------------------------------------------------------


def test_a_statement_past_the_statement_timeout_is_an_outage(url):
    store = open_store(url, statement_timeout=0.2)
    try:
        with table_locked(url, "articles") as holder:
            # Were the timeout not applied, the lock goes after 5 s and the
            # create passes: then the test fails, instead of hanging.
            release = threading.Timer(5, holder.rollback)
            release.start()
            try:
                with pytest.raises(StorageUnavailable) as raised:
                    store.create_article("t", [], NOW)
            finally:
                release.cancel()
        assert isinstance(
            raised.value.__cause__,
            psycopg.errors.QueryCanceled | psycopg.errors.LockNotAvailable,
        )
        assert store.create_article("t", [], NOW)["id"] >= 1  # the lock is gone
    finally:
        store.close()


def test_an_exhausted_pool_is_an_outage_after_the_pool_timeout(url):
    url, name = named(url)
    store = open_store(url, pool_max=1, pool_timeout=0.5, statement_timeout=10)
    try:
        store.ping()  # the pool's one connection made
        with table_locked(url, "articles"), ThreadPoolExecutor(1) as pool:
            # The pool's one connection waits on the lock (up to the store's
            # lock wait); meanwhile another call finds no connection.
            blocked = pool.submit(store.create_article, "t", [], NOW)
            poll(lambda: waiting_on(name, "relation"), 5, "the create waits")
            started = time.monotonic()
            with pytest.raises(StorageUnavailable, match="no database connection"):
                store.get_article(1)
            assert time.monotonic() - started < 0.5 + 1
        # The lock released, the blocked create finishes (or gave up: an outage).
        with contextlib.suppress(StorageUnavailable):
            blocked.result(timeout=10)
        assert store.list_items(0, 1)[0]["id"] == 1
    finally:
        store.close()


def test_the_pool_holds_a_connection_a_thread_whatever_pool_max_says(url):
    # A Granian worker runs two threads or more (REFAPI_THREADS): the configuration
    # sizes the pool to them, so no thread waits on another's connection
    # (docs/configuration.md, REFAPI_DB_POOL_MAX). With the pool at 1, the second
    # thread would wait out the pool timeout and answer 503.
    config = Config(database_url=url, db_pool_max=1, db_pool_timeout=0.5, threads=3)
    store = config.open_store()
    together = threading.Barrier(3)

    def held() -> int:
        store.hold()
        try:
            store.ping()  # the thread's connection, held until let_go
            together.wait(5)  # all three hold one at once
            return store.list_items(0, 1)[0]["id"]
        finally:
            store.let_go()

    try:
        with ThreadPoolExecutor(3) as pool:
            found = [pool.submit(held) for _ in range(3)]
            assert [future.result(10) for future in found] == [1, 1, 1]
    finally:
        store.close()


# -- outages and bugs ------------------------------------------------------------


def test_an_unreachable_server_is_an_outage_and_the_store_opens(caplog):
    url = f"postgresql://postgres@127.0.0.1:{closed_port()}/postgres"
    with caplog.at_level(logging.WARNING, logger="refapi"):
        store = open_store(url, pool_timeout=0.5)  # logs, and migrates later
    try:
        assert "will migrate later" in caplog.text
        with pytest.raises(StorageUnavailable):
            store.ping()
        with pytest.raises(StorageUnavailable):
            store.get_article(1)
        with pytest.raises(StorageUnavailable):
            store.buckets.take([("b", 1, 1.0)], NOW)
    finally:
        store.close()


class Forwarder:
    """A TCP port on 127.0.0.1 that forwards to the tests' server while it is
    ``up()``, refuses connections while it is not, and ``down()`` cuts the
    connections it carries: a server that goes away and comes back."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._listener: socket.socket | None = None
        self._carried: list[socket.socket] = []
        self._lock = threading.Lock()

    def up(self) -> None:
        listener = socket.create_server(("127.0.0.1", self.port))
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        if self._listener is not None:
            # shutdown, not close alone: it wakes the thread blocked in accept().
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        with self._lock:
            for sock in self._carried:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._carried.clear()

    def _accept(self, listener: socket.socket) -> None:
        with contextlib.suppress(OSError):  # closed by down()
            while True:
                client, _ = listener.accept()
                server = socket.create_connection(("127.0.0.1", 5432))
                with self._lock:
                    self._carried += [client, server]
                for one, other in ((client, server), (server, client)):
                    threading.Thread(
                        target=self._pipe, args=(one, other), daemon=True
                    ).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def test_a_server_back_after_an_outage_is_migrated_and_served_without_a_restart(url):
    # Down at start: the store opens (and logs); up: the first call migrates and
    # is served; down again: outages, not hangs; back: served by the same store.
    forwarder = Forwarder(closed_port())
    via = url.replace("127.0.0.1:5432", f"127.0.0.1:{forwarder.port}")
    assert via != url
    store = open_store(via, pool_timeout=1)
    try:
        with pytest.raises(StorageUnavailable):
            store.list_items(0, 1)
        forwarder.up()
        assert store.list_items(0, 1)[0]["id"] == 1  # migrated and seeded now
        store.create_article("kept", [], NOW)
        forwarder.down()
        with pytest.raises(StorageUnavailable):
            store.get_article(1)
        forwarder.up()

        def served():
            with contextlib.suppress(StorageUnavailable):
                return store.get_article(1)
            return None

        assert poll(served, 5, "served again")["title"] == "kept"
    finally:
        forwarder.down()
        store.close()


def read_only(url: str) -> str:
    """``url`` as a standby after a failover serves it: reads, and no writes."""
    options = parse_qs(urlsplit(url).query)["options"][0]
    open_store(url).close()  # migrated and seeded while writable
    both = f"-c default_transaction_read_only=on {options}"
    return f"{server_url()}?options={quote(both)}"


def test_a_read_only_server_is_an_outage_for_writes_alone(url):
    # Writes are refused with 25006 (ReadOnlySqlTransaction): outages.
    store = open_store(read_only(url))
    try:
        assert store.list_items(0, 1)[0]["id"] == 1
        writes = [
            store.ping,
            lambda: store.create_article("t", [], NOW),
            lambda: store.create_note("n", NOW, keep=5),
            lambda: store.reserve_login_attempt([("k", 5)], NOW, 60),
            lambda: store.buckets.take([("b", 5, 1.0)], NOW),
            lambda: store.buckets.take([("b", 5, 1.0), ("c", 5, 1.0)], NOW),
        ]
        for write in writes:
            with pytest.raises(StorageUnavailable) as raised:
                write()
            cause = raised.value.__cause__
            assert isinstance(cause, psycopg.errors.ReadOnlySqlTransaction)
    finally:
        store.close()


def test_a_read_only_server_fails_the_buckets_ping(url):
    # buckets.ping promises buckets.take can work now, and a take writes.
    store = open_store(read_only(url))
    try:
        with pytest.raises(StorageUnavailable):
            store.buckets.take([("b", 5, 1.0)], NOW)
        with pytest.raises(StorageUnavailable):
            store.buckets.ping()
    finally:
        store.close()


def test_a_missing_table_is_a_bug_not_an_outage(url):
    store = open_store(url)
    try:
        store.create_note("n", NOW, keep=5)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DROP TABLE notes CASCADE")  # and the keys' foreign key
        with pytest.raises(psycopg.errors.UndefinedTable):
            store.list_notes(0, 10)
        with pytest.raises(psycopg.errors.UndefinedTable):
            store.create_note("n", NOW, keep=5)
        store.ping()  # the store serves what is still there
        assert store.list_items(0, 1)[0]["id"] == 1
    finally:
        store.close()


def test_connections_ended_by_the_server_are_replaced_without_a_restart(url):
    url, name = named(url)
    store = open_store(url, pool_max=2, pool_timeout=1)
    try:
        store.create_article("before", [], NOW)
        assert connections(name) >= 1
        ended = server_sees(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE application_name = %s",
            name,
        )[0]
        assert ended >= 1

        def served():
            # The first calls may meet an ended connection: an outage, not a bug.
            with contextlib.suppress(StorageUnavailable):
                return store.get_article(1)
            return None

        assert poll(served, 5, "served again")["title"] == "before"
        assert store.create_article("after", [], NOW)["id"] == 2
    finally:
        store.close()


def test_first_calls_from_many_threads_share_one_pool(url):
    # A store's pool is made at its first call: calls from several threads at
    # once must not each make one, which would leave pool_max behind.
    url, name = named(url)
    store = open_store(url, pool_max=2)
    start = threading.Barrier(8)

    def first_call(_):
        start.wait()
        return store.get_article(1)

    try:
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(first_call, range(8)))
        assert connections(name) <= 2
    finally:
        store.close()
        gc.collect()  # pools made and dropped go now, not in a later test


def backends(name: str) -> set[int]:
    """The server's process ids of the connections named ``name``."""
    with psycopg.connect(server_url(), autocommit=True) as conn:
        found = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s", (name,)
        )
        return {pid for (pid,) in found}


def test_a_forked_worker_opens_its_own_pool_and_leaves_the_parents(url):
    # As gunicorn forks workers from a store opened in the master: the child's
    # first call opens a pool of its own; its exit ends none of the parent's.
    url, name = named(url)
    store = open_store(url)
    try:
        store.create_article("parent", [], NOW)
        before = backends(name)
        child = os.fork()
        if child == 0:  # the child: its outcome is its exit code
            code = 1
            try:
                made = store.create_article("child", [], NOW)
                own = backends(name) - before
                store.close()
                gc.collect()
                code = 0 if made["id"] == 2 and own else 3
            finally:
                os._exit(code)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert before <= backends(name)  # the parent's connections are still open
        assert store.get_article(2)["title"] == "child"
    finally:
        store.close()


# -- text PostgreSQL cannot hold ------------------------------------------------


@pytest.mark.parametrize(
    "write",
    [
        lambda store: store.create_article("a\x00b", [], NOW),
        lambda store: store.create_article("t", ["a\x00b"], NOW),
        lambda store: store.create_note("a\x00b", NOW, keep=5),
        lambda store: store.update_note(1, "a\x00b"),
    ],
    ids=["title", "tag", "note", "note-update"],
)
def test_text_holding_nul_is_an_error_not_an_outage_and_stores_nothing(url, write):
    # The API refuses such bodies before storage (docs/api.md): here a caller
    # that did not is a bug (500), never a 503, and nothing is stored.
    store = open_store(url)
    try:
        note = store.create_note("kept", NOW, keep=5)
        with pytest.raises(psycopg.DataError):
            write(store)
        assert store.list_articles(0, 10) == []
        assert store.list_notes(0, 10) == [note]
    finally:
        store.close()


def test_a_remembered_credential_costs_one_small_statement_and_a_change_is_seen(
    url, monkeypatch
):
    """Two stores (two hosts) on one schema. The second remembers a token it
    found: its next use costs the read of the credential generation alone, not
    the lookup; a logout through the first is seen at once (docs/authentication.md,
    "Remembered credentials")."""
    first, second = open_store(url), open_store(url)
    try:
        user = first.create_user("a@example.com", "!", "", "", "user", NOW)
        first.create_tokens("login-1", {"bearer": "digest"}, NOW + 60, user["id"])
        sent: list[str] = []
        real = type(second.dialect).one

        def counted(self, sql, args=(), write=False):
            sent.append(sql)
            return real(self, sql, args, write)

        monkeypatch.setattr(type(second.dialect), "one", counted)
        assert second.find_token("bearer", "digest", NOW)["user"] == user
        assert len(sent) == 2  # the generation, then the lookup
        sent.clear()
        assert second.find_token("bearer", "digest", NOW)["user"] == user
        assert sent == ["SELECT value FROM credential_generation"]  # remembered
        first.end_login("login-1")
        assert second.find_token("bearer", "digest", NOW) is None  # seen at once
    finally:
        first.close()
        second.close()


def test_a_generation_set_back_by_a_restore_forgets_what_was_remembered(url):
    """A dump restored under a running host sets the number back; as it climbs
    again it must not come back to match what was remembered before."""
    store = open_store(url)
    try:
        user = store.create_user("a@example.com", "!", "", "", "user", NOW)
        store.create_tokens("login-1", {"bearer": "digest"}, NOW + 60, user["id"])
        assert store.find_token("bearer", "digest", NOW) is not None
        assert store.find_token("bearer", "digest", NOW) is not None  # remembered
        with psycopg.connect(url, autocommit=True) as conn:  # the restore
            (before,) = conn.execute(
                "SELECT value FROM credential_generation"
            ).fetchone() or (0,)
            conn.execute("DELETE FROM tokens")
            conn.execute("UPDATE credential_generation SET value = %s", (before - 3,))
        assert store.find_token("bearer", "digest", NOW) is None
        with psycopg.connect(url, autocommit=True) as conn:  # three changes later
            conn.execute("UPDATE credential_generation SET value = %s", (before,))
        assert store.find_token("bearer", "digest", NOW) is None
    finally:
        store.close()


# -- one connection a request ---------------------------------------------------


def test_between_hold_and_let_go_calls_share_one_connection(url):
    """A request's calls take one connection from the pool, not one each
    (docs/several-hosts.md); one made inside another's transaction takes its own,
    and a call that meets a database error gives the shared one back.

    Seen by what the test's own thread does: the server's process behind each
    call (``pg_backend_pid``), and how many connections it asked the pool for
    (``requests_num``, counted by ``getconn`` in the caller's thread as it asks).
    The pool's size is not read at a moment of the test's choosing: the pool makes
    connections in a thread of its own, and one still being made is counted in
    its size before it is available, so "all given back" is waited for."""
    store = open_store(url, pool_max=3)
    backend = "SELECT pg_backend_pid()"
    dialect, connections = store.dialect, store.dialect.connections
    try:
        store.ping()  # the pool is made
        pool = connections._pool

        def asked() -> int:
            return pool.get_stats()["requests_num"]

        before = asked()
        store.hold()
        first = dialect.one(backend)[0]
        assert dialect.one(backend)[0] == first
        store.get_article(1)
        assert asked() == before + 1  # three calls, one connection
        with dialect.transaction() as outer:
            assert outer.one(backend)[0] == first
            assert dialect.one(backend)[0] != first  # not inside that transaction
        assert asked() == before + 2
        assert dialect.one(backend)[0] == first
        with pytest.raises(ValueError), connections.connection():
            raise ValueError("not the database's: the connection is kept")
        assert dialect.one(backend)[0] == first
        assert asked() == before + 2
        with pytest.raises(psycopg.errors.DivisionByZero):
            dialect.one("SELECT 1 / 0")
        dialect.one(backend)  # a connection from the pool again
        assert asked() == before + 3
        store.let_go()

        def all_given_back() -> bool:
            stats = pool.get_stats()
            return stats["pool_available"] == stats["pool_size"]

        poll(all_given_back, 5, "every connection back in the pool")
        store.get_article(1)
        store.get_article(1)
        assert asked() == before + 5  # one a call, once let go
    finally:
        store.close()
