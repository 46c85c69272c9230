"""The SQLite file's cheap look before a write: one ``stat`` of its folder, while
the folder's stamp has settled (storage/sqlite/locks.py, ``folder_stamp``;
docs/operating.md, "When storage fails"). What the look must still notice at the
next write, once the stamp is the one the fast path compares: the database
renamed over, deleted, its -wal deleted, the file made read-only.

``SETTLED_NS`` is shortened to 50 ms here, and each test waits past it, so the
stamp a write keeps is a settled one: the scenarios of test_sqlite_faults.py,
which run within a second of the file's making, take the full look instead."""

from __future__ import annotations

import os
import sqlite3
import time
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from refapi.storage import StorageUnavailable
from refapi.storage.sqlite import SqliteStore, locks
from refapi.storage.sqlite import file as sqlite_file
from tests.faults import backup, integrity, restore

pytestmark = pytest.mark.sqlite_only  # SQLite's own files

NOW = 1_795_000_000.0
SETTLE_S = 0.05


@pytest.fixture
def db_path(tmp_path) -> Path:
    return tmp_path / "refapi.db"


@pytest.fixture
def store(db_path, monkeypatch):
    monkeypatch.setattr(locks, "SETTLED_NS", int(SETTLE_S * 1e9))
    made = SqliteStore(str(db_path))
    yield made
    made.close()


@pytest.fixture
def looks(monkeypatch) -> list[str]:
    """Each path the file's full look stats by name, in order."""
    seen: list[str] = []
    real = locks.identity_of

    def counted(path: str):  # type: ignore[no-untyped-def]
        seen.append(path)
        return real(path)

    monkeypatch.setattr(sqlite_file, "identity_of", counted)
    monkeypatch.setattr(locks, "identity_of", counted)
    return seen


def settle(store: SqliteStore) -> None:
    """A write once the folder's last change is older than ``SETTLED_NS``: its
    look keeps the folder's stamp (the first write makes the -wal and -shm: a
    change to the folder)."""
    store.create_article("opens the log", [], NOW)
    time.sleep(SETTLE_S * 2)
    store.create_article("settles the stamp", [], NOW)


def test_a_settled_folder_is_one_stat_and_no_file_looked_at(store, db_path, looks):
    settle(store)
    looks.clear()
    store.create_article("on the fast path", [], NOW)
    store.create_article("and again", [], NOW)
    assert looks == []


def test_a_young_stamp_is_not_kept_and_every_write_looks(store, db_path, looks):
    store.create_article("first", [], NOW)
    looks.clear()
    store.create_article("second", [], NOW)  # the folder changed under 50 ms ago
    assert str(db_path) in looks


@pytest.fixture
def clock(tmp_path) -> Iterator[int]:
    """A descriptor of a file in ``tmp_path`` whose time ``settled`` sets to the
    file system's now, as it does ``<db>.lock``'s."""
    fd = os.open(tmp_path / "refapi.db.lock", os.O_RDWR | os.O_CREAT, 0o600)
    yield fd
    os.close(fd)


@pytest.fixture
def aged(tmp_path, clock, monkeypatch) -> tuple[str, locks.Stamp | None]:
    """``tmp_path`` and its stamp, once ``SETTLED_NS`` (shortened) has passed since
    its last change (the clock's file made)."""
    monkeypatch.setattr(locks, "SETTLED_NS", int(SETTLE_S * 1e9))
    stamp = locks.folder_stamp(str(tmp_path))
    time.sleep(SETTLE_S * 2)
    return str(tmp_path), stamp


def test_settled_keeps_a_stamp_only_once_the_file_system_s_clock_is_past_it(
    tmp_path, clock, monkeypatch
):
    monkeypatch.setattr(locks, "SETTLED_NS", int(SETTLE_S * 1e9))
    folder = str(tmp_path)
    young = locks.folder_stamp(folder)
    assert locks.settled(young, folder, clock) is None
    time.sleep(SETTLE_S * 2)
    assert locks.settled(young, folder, clock) == young
    assert locks.settled(None, folder, clock) is None
    assert locks.settled(young, folder, -1) is None  # no clock: nothing kept
    assert young is not None and young[:2] == (
        tmp_path.stat().st_dev,
        tmp_path.stat().st_ino,
    )
    (tmp_path / "new").touch()  # a name added: the folder's change time moves
    assert locks.folder_stamp(folder) != young
    assert locks.folder_stamp(str(tmp_path / "gone")) is None


def test_a_process_clock_ahead_of_the_file_system_s_settles_nothing_young(
    tmp_path, clock, monkeypatch
):
    # A network file system's times are its server's: a client whose clock is
    # ahead must not take a change just made for an old one.
    monkeypatch.setattr(time, "time_ns", lambda: 2**62)
    folder = str(tmp_path)
    (tmp_path / "just made").touch()
    assert locks.settled(locks.folder_stamp(folder), folder, clock) is None


def test_a_folder_changed_since_its_stamp_was_read_is_not_settled(
    tmp_path, aged, clock
):
    # Read before the look; a change during the look (or while the process stood
    # still) must be looked at, even where the file system's times are so coarse
    # that the change leaves the folder's time as the stamp has it.
    folder, before = aged
    (tmp_path / "renamed in meanwhile").touch()
    assert locks.settled(before, folder, clock) is None


def test_on_a_file_system_of_whole_seconds_no_stamp_is_kept(aged, clock, monkeypatch):
    # There a clock stepped back could give a later change the stamp's very second.
    folder, stamp = aged
    real = os.fstat

    def whole_seconds(fd: int) -> types.SimpleNamespace:  # what settled reads
        return types.SimpleNamespace(st_ctime_ns=real(fd).st_ctime_ns // 10**9 * 10**9)

    with monkeypatch.context() as patched:  # os's own: only for this call
        patched.setattr(locks.os, "fstat", whole_seconds)
        kept = locks.settled(stamp, folder, clock)
    assert kept is None
    assert locks.settled(stamp, folder, clock) == stamp  # with the times as they are


def test_a_clock_that_cannot_be_set_keeps_nothing(tmp_path, aged, clock):
    folder, stamp = aged
    assert locks.settled(stamp, folder, clock) == stamp  # with a clock, kept
    fd = os.open(tmp_path / "refapi.db.lock", os.O_RDWR)
    os.close(fd)  # a descriptor no longer open: setting its time fails
    assert locks.settled(stamp, folder, fd) is None


def test_a_backup_renamed_over_a_settled_folder_is_written_to(store, db_path, tmp_path):
    settle(store)  # two articles, in the backup
    elsewhere = tmp_path / "backups"  # not the database's folder: its stamp stays
    elsewhere.mkdir()
    backup(db_path, elsewhere / "backup.db")
    time.sleep(SETTLE_S * 2)
    store.create_article("after the backup", [], NOW)  # on the fast path
    restore(elsewhere / "backup.db", db_path)
    made = store.create_article("after the restore", [], NOW)
    assert made["id"] == 3  # the backup's next id, not the old file's 4
    titles = [a["title"] for a in store.list_articles(0, 10)]
    assert "after the backup" not in titles and titles[-1] == "after the restore"
    assert integrity(db_path) == "ok"


def test_a_database_deleted_from_a_settled_folder_is_not_written(store, db_path):
    settle(store)
    db_path.unlink()
    with pytest.raises(StorageUnavailable):
        store.create_article("lost", [], NOW)
    assert not db_path.exists()


def test_a_wal_deleted_from_a_settled_folder_is_folded_in(store, db_path):
    settle(store)
    store.create_article("in the log", [], NOW)
    os.unlink(f"{db_path}-wal")
    store.create_article("after the fold", [], NOW)
    titles = [a["title"] for a in store.list_articles(0, 10)]
    assert titles[-2:] == ["in the log", "after the fold"]
    assert integrity(db_path) == "ok"


def test_a_database_made_read_only_in_a_settled_folder_is_not_written(
    store, db_path, monkeypatch
):
    settle(store)
    # The file's mode as a process without root's override reads it (root writes
    # whatever the mode says; tests/e2e/test_faults.py drops that override for a
    # server): a chmod changes the file, not its folder's stamp.
    db_path.chmod(0o400)
    real = os.access
    monkeypatch.setattr(
        sqlite_file.os,
        "access",
        lambda path, mode: (
            real(path, mode)
            and not (mode & os.W_OK and not os.stat(path).st_mode & 0o200)
        ),
    )
    with pytest.raises(StorageUnavailable, match="not writable"):
        store.create_article("refused", [], NOW)
    db_path.chmod(0o600)
    store.create_article("written again", [], NOW)


def test_a_fold_refused_on_a_settled_folder_is_tried_again_at_the_next_write(
    db_path, monkeypatch
):
    # The look that finds the -wal gone keeps no stamp until its fold is done:
    # a fold refused (a reader still on the old log) must be tried again, not
    # skipped by the next write's one look at the folder.
    monkeypatch.setattr(locks, "SETTLED_NS", int(SETTLE_S * 1e9))
    store = SqliteStore(str(db_path), busy_timeout_s=0.1)
    try:
        settle(store)
        store.create_article("in the log", [], NOW)
        reader = sqlite3.connect(db_path)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM articles").fetchone()  # holds the log
        os.unlink(f"{db_path}-wal")
        time.sleep(SETTLE_S * 2)  # the folder's change settles meanwhile
        with pytest.raises(StorageUnavailable):
            store.create_article("refused while the log is read", [], NOW)
        reader.rollback()
        reader.close()
        store.create_article("after the fold", [], NOW)
        # What a worker opening now reads, while this one still serves.
        with sqlite3.connect(db_path) as fresh:
            found = [row[0] for row in fresh.execute("SELECT title FROM articles")]
        fresh.close()
    finally:
        store.close()
    assert found[-2:] == ["in the log", "after the fold"]
    assert integrity(db_path) == "ok"
