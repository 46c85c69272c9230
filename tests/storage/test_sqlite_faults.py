"""Faults of the SQLite backend, in process: what the store and the API do when the
database file is deleted or replaced, the disk is full, a lock is held, a file's
mode would leak the secret key. Each scenario names the SQLite backend, since it
reaches the backend's files. Several workers against one file: tests/e2e/test_faults.
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import webtest

from refapi import create_app
from refapi.config import Config
from refapi.storage import StorageUnavailable
from refapi.storage.migrations import numbered
from refapi.storage.sqlite import SqliteStore
from refapi.storage.sqlite.file import BUSY_TIMEOUT_S
from refapi.storage.sqlite.locks import Turn
from refapi.storage.sqlite.schema import MIGRATIONS
from tests import faults
from tests.conftest import TEST_AUTH, as_admin
from tests.faults import backup, fill, integrity, restore
from tests.helpers import assert_error, gunicorn_settings

pytestmark = pytest.mark.sqlite_only  # SQLite's own: not run on PostgreSQL

NOW = 1_795_000_000.0


@pytest.fixture
def db_path(tmp_path) -> Path:
    return tmp_path / "refapi.db"


@pytest.fixture
def sqlite_store(db_path):
    store = SqliteStore(str(db_path))
    yield store
    store.close()


def titles(store) -> list[str]:
    return [article["title"] for article in store.list_articles(0, 100)]


def test_sqlite_deleted_database_is_unavailable_and_never_recreated(
    sqlite_store, db_path
):
    sqlite_store.create_article("kept", [], NOW)
    db_path.unlink()  # the WAL and shared-memory files stay, as after `rm refapi.db`
    with pytest.raises(StorageUnavailable):
        sqlite_store.create_article("lost", [], NOW)
    with pytest.raises(StorageUnavailable):
        sqlite_store.ping()
    with pytest.raises(StorageUnavailable):  # reads too, once the check has failed
        sqlite_store.get_todo(1)
    assert not db_path.exists()


def test_sqlite_a_worker_starting_while_others_serve_creates_nothing(
    sqlite_store, db_path
):
    sqlite_store.create_article("kept", [], NOW)
    db_path.unlink()
    late = SqliteStore(str(db_path))  # a worker booted late, or respawned
    try:
        with pytest.raises(StorageUnavailable):
            late.ping()
        assert not db_path.exists()
    finally:
        late.close()
    sqlite_store.close()  # now no one serves: the next start makes a fresh file
    fresh = SqliteStore(str(db_path))
    try:
        assert fresh.list_articles(0, 10) == []
    finally:
        fresh.close()


def test_sqlite_restored_backup_is_opened_without_the_deleted_files_wal(
    sqlite_store, db_path, tmp_path
):
    sqlite_store.create_article("in the backup", [], NOW)
    backup(db_path, tmp_path / "backup.db")
    sqlite_store.create_article("after the backup", [], NOW)
    db_path.unlink()
    with pytest.raises(StorageUnavailable):
        sqlite_store.ping()
    restore(tmp_path / "backup.db", db_path)

    sqlite_store.ping()
    # The deleted file's -wal, still beside it, must not be replayed onto the backup.
    assert titles(sqlite_store) == ["in the backup"]
    assert sqlite_store.create_article("next", [], NOW)["id"] == 2
    assert integrity(db_path) == "ok"


def test_sqlite_restored_backup_first_opened_by_a_worker_that_never_served(
    sqlite_store, db_path, tmp_path
):
    idle = SqliteStore(str(db_path))  # another worker, which has not served yet
    try:
        sqlite_store.create_article("in the backup", [], NOW)
        backup(db_path, tmp_path / "backup.db")
        sqlite_store.create_article("after the backup", [], NOW)
        os.replace(tmp_path / "backup.db", db_path)  # restored in one rename
        # The idle worker knows nothing of the old file's -wal, which the serving
        # one still holds open at the path; it must not replay it either.
        assert titles(idle) == ["in the backup"]
        sqlite_store.ping()  # a check, as every write makes: it opens the backup
        assert titles(sqlite_store) == ["in the backup"]
    finally:
        idle.close()
    assert integrity(db_path) == "ok"


def test_sqlite_file_replaced_by_a_foreign_database_is_unavailable(
    sqlite_store, db_path, tmp_path
):
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    os.replace(foreign, db_path)
    with pytest.raises(StorageUnavailable):
        sqlite_store.ping()
    with pytest.raises(StorageUnavailable):
        sqlite_store.create_article("nowhere", [], NOW)


def test_sqlite_data_files_are_private(tmp_path):
    previous = os.umask(0o022)  # the usual umask, which would leave them 0644
    try:
        store = SqliteStore(str(tmp_path / "data" / "refapi.db"))
        store.buckets.take([("k", 1, 1.0)], 0.0)
        store.get_todo(1)  # a connection is open, so -wal and -shm exist
        modes = {
            path.name: stat.S_IMODE(path.stat().st_mode)
            for path in (tmp_path / "data").iterdir()
        }
        store.close()
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "data").stat().st_mode) == 0o700
    assert modes == {
        name: 0o600
        for name in (
            "refapi.db",
            "refapi.db-wal",
            "refapi.db-shm",
            "refapi.db.lock",
            "refapi.db.buckets",
        )
    }


def test_sqlite_schema_error_stays_a_500(make_app, store, caplog):
    # A genuine programming or schema error is not an outage: it must not hide as 503.
    app = make_app()
    app.get("/v1/todos/1", status=200)
    with sqlite3.connect(store.path) as conn:
        conn.execute("DROP TABLE todos")
    conn.close()
    with caplog.at_level(logging.ERROR, logger="refapi"):
        failed = app.get("/v1/todos/1", status=500)
    assert_error(failed, 500, "INTERNAL_ERROR")
    assert_traceback_logged(caplog, failed.headers["X-Request-Id"], "no such table")


def assert_traceback_logged(caplog, request_id: str, cause: str) -> None:
    """One error line for the request, with the traceback of ``cause``."""
    [record] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert request_id in record.getMessage()
    assert record.exc_info is not None and cause in str(record.exc_info[1])


def broken_migrations(tmp_path: Path) -> Path:
    """The project's migrations and one more, whose SQL does not parse."""
    folder = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS, folder)
    (folder / "999_broken.sql").write_text("ALTER TABLE articles ADD COLUMN;\n")
    return folder


def test_sqlite_a_migration_that_fails_stops_the_store_from_opening(tmp_path):
    with pytest.raises(sqlite3.OperationalError, match="syntax error") as raised:
        SqliteStore(str(tmp_path / "refapi.db"), migrations=broken_migrations(tmp_path))
    assert "999_broken.sql" in "".join(raised.value.__notes__)
    # Nothing of the failed migration was kept: the file stays at the last good one.
    with sqlite3.connect(tmp_path / "refapi.db") as conn:
        assert (
            conn.execute("PRAGMA user_version").fetchone()[0]
            == (
                numbered(MIGRATIONS)[-1][0]  # the shared ones counted too
            )
        )
    conn.close()


def test_a_migration_that_fails_stops_create_app(db_path, clock):
    # An older database on which the next migration fails (here: its table is
    # there already) is a bug to fix, not an outage to wait out.
    SqliteStore(str(db_path)).close()
    with sqlite3.connect(db_path) as conn:
        conn.execute("PRAGMA user_version = 1")
    conn.close()
    config = Config(**TEST_AUTH, database_url=f"sqlite:///{db_path}", secret_key=b"k")
    with pytest.raises(sqlite3.OperationalError, match="already exists"):
        create_app(config, clock=clock)


def test_a_restored_file_whose_migration_fails_is_500_not_503(
    make_app, store, tmp_path, caplog
):
    app = make_app()
    app.get("/v1/todos/1", status=200)
    backup(Path(store.path), tmp_path / "old.db")
    with sqlite3.connect(tmp_path / "old.db") as conn:
        conn.execute("PRAGMA user_version = 1")  # migration 002 will fail on it
    conn.close()
    restore(tmp_path / "old.db", Path(store.path))
    with caplog.at_level(logging.ERROR, logger="refapi"):
        failed = app.post_json("/v1/articles", {"title": "x"}, status=500)
    assert_error(failed, 500, "INTERNAL_ERROR")
    assert_traceback_logged(caplog, failed.headers["X-Request-Id"], "already exists")


def test_sqlite_a_missing_database_file_is_503_through_the_api(make_app, store):
    app = make_app()
    app.get("/v1/todos/1", status=200)
    Path(store.path).unlink()
    refused = app.post_json("/v1/articles", {"title": "x"}, status=503)
    assert_error(refused, 503, "UNAVAILABLE")
    assert app.get("/healthz", status=503).json["checks"]["storage"] == "unavailable"


# -- a full disk ------------------------------------------------------------------

small_disk = faults.small_disk  # the fixture: a 2 MiB tmpfs


def test_sqlite_full_disk_is_503_for_writes_and_health_then_recovers(small_disk, clock):
    config = Config(
        **TEST_AUTH, database_url=f"sqlite:///{small_disk}/refapi.db", secret_key=b"k"
    )
    service = create_app(config, clock=clock)
    try:
        app = as_admin(webtest.TestApp(service))
        app.post_json("/v1/articles", {"title": "before"}, status=201)
        fill(small_disk / "filler")

        refused = app.post_json("/v1/articles", {"title": "no room"}, status=503)
        assert_error(refused, 503, "UNAVAILABLE")
        assert refused.headers["Retry-After"].isdigit()
        health = app.get("/healthz", status=503)
        assert health.json["status"] == "unavailable"
        assert health.json["checks"]["storage"] == "unavailable"
        app.get("/v1/articles/1", status=200)  # reads need no room

        (small_disk / "filler").unlink()
        app.post_json("/v1/articles", {"title": "after"}, status=201)
        assert app.get("/healthz", status=200).json["status"] == "ok"
        listed = app.get("/v1/articles").json["data"]
        assert [article["title"] for article in listed] == ["before", "after"]
    finally:
        service.close()


# -- a held lock ------------------------------------------------------------------


@pytest.fixture
def held_lock(db_path):
    """Another process's write transaction, as a backup or `make reset` holds one."""
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    yield holder
    holder.execute("ROLLBACK")
    holder.close()


@pytest.fixture
def impatient_app(db_path, clock):
    """The app over a store that waits 0.2 s for a lock instead of its 5 s."""
    store = SqliteStore(str(db_path), busy_timeout_s=0.2)
    config = Config(**TEST_AUTH, database_url=f"sqlite:///{db_path}", secret_key=b"k")
    yield as_admin(webtest.TestApp(create_app(config, store=store, clock=clock)))
    store.close()


def test_sqlite_held_write_lock_is_503_with_retry_after_on_every_path(
    impatient_app, held_lock
):
    impatient_app.get("/v1/todos/1", status=200)  # WAL: readers never wait
    for refused in (
        impatient_app.post_json("/v1/articles", {"title": "x"}, status=503),
        impatient_app.patch_json("/v1/articles/1", {"title": "y"}, status=503),
        impatient_app.post_json(
            "/v1/payments",
            {"amount": 1, "currency": "EUR"},
            headers={"Idempotency-Key": "k1"},
            status=503,
        ),
    ):
        assert_error(refused, 503, "UNAVAILABLE")
        assert refused.headers["Retry-After"].isdigit()
    health = impatient_app.get("/healthz", status=503)
    assert health.json["checks"]["storage"] == "unavailable"
    assert health.headers["Retry-After"].isdigit()


@pytest.fixture
def held_turn(db_path):
    """Another writer of the host holding its turn to write (docs/operating.md,
    "When storage fails"), as a worker stopped mid-write would: a ``Turn`` of
    its own, so a descriptor of its own. Yields what lets it go."""
    turn = Turn(str(db_path), 1.0)
    turn.__enter__()
    held = [True]

    def let_go() -> None:
        if held.pop():
            turn.__exit__(None, None, None)
        held.append(False)

    yield let_go
    let_go()
    turn.close()


def test_sqlite_a_turn_to_write_kept_past_the_wait_is_503_until_let_go(
    impatient_app, held_turn
):
    impatient_app.get("/v1/todos/1", status=200)  # reads take no turn
    refused = impatient_app.post_json("/v1/articles", {"title": "x"}, status=503)
    assert_error(refused, 503, "UNAVAILABLE")
    assert refused.headers["Retry-After"].isdigit()
    health = impatient_app.get("/healthz", status=503)  # its probe is a write
    assert health.json["checks"]["storage"] == "unavailable"

    held_turn()
    impatient_app.post_json("/v1/articles", {"title": "x"}, status=201)
    assert impatient_app.get("/healthz", status=200).json["status"] == "ok"


def test_sqlite_a_write_waits_for_the_turn_and_goes_on_once_it_is_let_go(
    sqlite_store, held_turn
):
    order: list[str] = []
    writer = threading.Thread(
        target=lambda: order.append(sqlite_store.create_article("x", [], NOW)["title"])
    )
    writer.start()
    writer.join(0.3)
    assert writer.is_alive() and order == []  # waiting, not refused
    order.append("let go")
    held_turn()
    writer.join(5)
    assert order == ["let go", "x"]


def test_sqlite_a_writer_killed_while_it_holds_the_turn_lets_go_of_it(
    sqlite_store, db_path
):
    # A worker killed mid-write (kill -9, the OOM killer): its process's
    # descriptor, and with it the turn, is gone with it.
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from refapi.storage.sqlite.locks import Turn
            Turn({str(db_path)!r}, 1.0).__enter__()
            print("held", flush=True)
            time.sleep(60)
        """)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(StorageUnavailable):  # held: waited for, then 503
            impatient = SqliteStore(str(db_path), busy_timeout_s=0.2)
            try:
                impatient.create_article("while held", [], NOW)
            finally:
                impatient.close()
        holder.kill()
        holder.wait(5)
        assert sqlite_store.create_article("after", [], NOW)["title"] == "after"
    finally:
        holder.kill()
        holder.wait(5)
        holder.stdout.close()


def test_sqlite_a_child_forked_while_a_thread_holds_the_turn_writes_once_it_is_free(
    db_path,
):
    # A child forked while another thread of its parent held the turn: that
    # thread is not in the child, and must not keep the child's turn held.
    script = textwrap.dedent(f"""
        import os, threading, warnings
        warnings.simplefilter("ignore")  # fork() with threads, said on 3.12+
        from refapi.storage.sqlite import SqliteStore
        store = SqliteStore({str(db_path)!r}, busy_timeout_s=2.0)
        store.create_article("parent", [], 1.0)
        held, done = threading.Event(), threading.Event()
        def hold():
            with store.file.turn:
                held.set()
                done.wait()
        holder = threading.Thread(target=hold)
        holder.start()
        held.wait()
        child = os.fork()
        if child == 0:
            try:
                store.create_article("child", [], 1.0)
            except Exception:
                os._exit(1)
            os._exit(0)
        done.set()  # the parent lets go: the child's turn is free then
        holder.join()
        print(os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]))
        store.close()
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == "0", done.stderr


def test_sqlite_writers_of_two_processes_and_their_threads_take_turns(db_path):
    # Two stores are two workers (each its own descriptor of <db>.lock); each
    # writes from four threads at once. Every write lands, once.
    stores = [SqliteStore(str(db_path)) for _ in range(2)]
    try:
        with ThreadPoolExecutor(8) as pool:
            made = list(pool.map(
                lambda n: stores[n % 2].create_article(f"a{n}", [], NOW)["id"],
                range(80),
            ))  # fmt: skip
        assert sorted(made) == list(range(1, 81))
        assert sorted(titles(stores[0])) == sorted(f"a{n}" for n in range(80))
    finally:
        for store in stores:
            store.close()


def test_sqlite_busy_wait_is_well_under_the_worker_timeout():
    # A worker parked on a lock for the whole worker timeout is killed mid-request.
    settings = gunicorn_settings()
    assert BUSY_TIMEOUT_S <= settings["timeout"] / 5


def test_sqlite_the_last_connection_closing_leaves_no_one_waiting_for_a_fold(db_path):
    serving = SqliteStore(str(db_path))
    idle = SqliteStore(str(db_path))  # another worker, which has not served yet
    try:
        serving.create_article("kept", [], NOW)
        serving.close()  # its last connection: SQLite removes the -wal and -shm
        assert not Path(f"{db_path}-wal").exists()
        # Not a log deleted under a worker: nothing to wait for.
        assert idle.create_article("next", [], NOW)["id"] == 2
    finally:
        idle.close()


def test_sqlite_a_deleted_folder_is_waited_for_then_served_once_put_back(
    sqlite_store, db_path, tmp_path
):
    folder = tmp_path / "data"
    folder.mkdir()
    store = SqliteStore(str(folder / "refapi.db"))
    try:
        store.create_article("kept", [], NOW)
        folder.rename(tmp_path / "moved")  # as `mv data elsewhere`, or `rm -r data`
        for check in (store.ping, lambda: store.get_todo(1)):
            with pytest.raises(StorageUnavailable):
                check()
        assert not folder.exists(), "the folder was made again while serving"
        (tmp_path / "moved").rename(folder)  # put back
        store.ping()
        assert titles(store) == ["kept"]
    finally:
        store.close()


def test_sqlite_a_database_deleted_with_its_lock_file_is_never_made_again(
    sqlite_store, db_path
):
    # `rm refapi.db*` while serving: the record of what was made there goes too,
    # but this process held the lock file, so it knows one was made.
    sqlite_store.create_article("kept", [], NOW)
    for path in db_path.parent.glob("refapi.db*"):
        path.unlink()
    with pytest.raises(StorageUnavailable):
        sqlite_store.ping()
    assert not db_path.exists()
