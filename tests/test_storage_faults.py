"""Faults of the SQLite backend, in process: what the store and the API do when the
database file is deleted or replaced, the disk is full, a lock is held, a file's
mode would leak the secret key. Each scenario names the SQLite backend, since it
reaches the backend's files. Several workers against one file: tests/e2e/test_faults.
"""

from __future__ import annotations

import os
import runpy
import sqlite3
import stat
from pathlib import Path

import pytest
import webtest

from refapi import create_app
from refapi.config import Config
from refapi.storage import StorageUnavailable
from refapi.storage.sqlite import BUSY_TIMEOUT_S, SqliteStore
from tests import faults
from tests.conftest import TEST_AUTH, as_admin
from tests.faults import backup, fill, integrity, restore
from tests.helpers import assert_error

NOW = "2026-11-21T00:00:00Z"


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
        store.take_tokens([("k", 1, 1.0)], 0.0)
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


def test_sqlite_schema_error_stays_a_500(make_app, store):
    # A genuine programming or schema error is not an outage: it must not hide as 503.
    app = make_app()
    app.get("/v1/todos/1", status=200)
    with sqlite3.connect(store.path) as conn:
        conn.execute("DROP TABLE todos")
    conn.close()
    assert_error(app.get("/v1/todos/1", status=500), 500, "INTERNAL_ERROR")


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


def test_sqlite_busy_wait_is_well_under_the_worker_timeout():
    # A worker parked on a lock for the whole worker timeout is killed mid-request.
    settings = runpy.run_path(str(Path(__file__).parents[1] / "gunicorn.conf.py"))
    assert BUSY_TIMEOUT_S <= settings["timeout"] / 5
