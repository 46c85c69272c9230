"""SQLite's own: its migrations and ``PRAGMA user_version``, its query plans, the
tag index its triggers keep, its key clean-up and connections. Each reaches the
backend's file or private parts, so each names SQLite; what every backend must do
is in test_contract.py."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from decimal import Decimal

import pytest

from refapi.handlers.payments import new_payment_id
from refapi.storage import StorageUnavailable
from refapi.storage.base import iso
from refapi.storage.migrations import numbered
from refapi.storage.records import TAGGED_PAGE
from refapi.storage.sqlite.schema import MIGRATIONS

pytestmark = pytest.mark.sqlite_only  # SQLite's own: not run on PostgreSQL

# The newest migration's number, SQLite's or a shared one: where a fresh database
# ends up.
LATEST = numbered(MIGRATIONS)[-1][0]


def test_sqlite_migrations_are_numbered_and_applied_once(tmp_path, sqlite_store):
    path = tmp_path / "refapi.db"
    sqlite_store(path).ping()
    sqlite_store(path).ping()  # a second process start migrates nothing
    with contextlib.closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == LATEST
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT count(*) FROM items").fetchone()[0] == 1000


def test_sqlite_unreachable_file_is_storage_unavailable(tmp_path, sqlite_store):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(StorageUnavailable):
        sqlite_store(blocker / "refapi.db").ping()


def test_sqlite_keyset_queries_use_the_primary_key(tmp_path, sqlite_store):
    store = sqlite_store(tmp_path / "refapi.db")
    conn = store.file.connection()
    for table in ("articles", "items", "notes"):
        plan = " ".join(
            row[3]
            for row in conn.execute(
                f"EXPLAIN QUERY PLAN SELECT * FROM {table} WHERE id > ? ORDER BY id "
                "LIMIT ?",
                (0, 21),
            )
        )
        assert "USING INTEGER PRIMARY KEY (rowid>?)" in plan, plan
        assert "TEMP B-TREE" not in plan


def plan(conn, sql: str, args: tuple) -> str:
    return " ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", args))


def test_sqlite_tag_filter_seeks_the_tag_index_in_id_order(tmp_path, sqlite_store):
    store = sqlite_store(tmp_path / "refapi.db")
    conn = store.file.connection()
    query = plan(conn, TAGGED_PAGE, ("a", 0, 21))
    # One seek in (tag, article_id) and one rowid lookup per row: no scan of the
    # articles' JSON, and the index's order is the page's order (no sort).
    assert "SEARCH t USING PRIMARY KEY (tag=? AND article_id>?)" in query, query
    assert "SEARCH a USING INTEGER PRIMARY KEY (rowid=?)" in query, query
    assert "SCAN" not in query and "TEMP B-TREE" not in query, query
    # What the delete trigger runs: an index on article_id, not a scan of the tags.
    cleanup = plan(conn, "DELETE FROM article_tags WHERE article_id = ?", (1,))
    assert "USING COVERING INDEX article_tags_by_article" in cleanup, cleanup


def tag_index(store) -> list[tuple[str, int]]:
    conn = store.file.connection()
    return conn.execute(
        "SELECT tag, article_id FROM article_tags ORDER BY tag, article_id"
    ).fetchall()


def test_sqlite_tag_index_follows_every_write(tmp_path, sqlite_store):
    store = sqlite_store(tmp_path / "refapi.db")
    store.create_article("one", ["a", "b"], 0.0)
    store.create_article("two", ["b"], 0.0)
    assert tag_index(store) == [("a", 1), ("b", 1), ("b", 2)]
    store.update_article(1, {"tags": ["c", "a"]}, 0.0, lambda current: None)
    assert tag_index(store) == [("a", 1), ("b", 2), ("c", 1)]
    store.update_article(1, {"title": "renamed"}, 0.0, lambda current: None)
    assert tag_index(store) == [("a", 1), ("b", 2), ("c", 1)]
    store.update_article(2, {"tags": []}, 0.0, lambda current: None)
    assert tag_index(store) == [("a", 1), ("c", 1)]
    store.delete_article(1, lambda current: None)
    assert tag_index(store) == []
    assert store.list_articles(0, 10, "a") == []


def test_sqlite_refused_write_leaves_the_tag_index_as_it_was(tmp_path, sqlite_store):
    store = sqlite_store(tmp_path / "refapi.db")
    store.create_article("one", ["a"], 0.0)

    def refuse(current):
        raise RuntimeError("precondition failed")

    with pytest.raises(RuntimeError):
        store.update_article(1, {"tags": ["z"]}, 0.0, refuse)
    with pytest.raises(RuntimeError):
        store.delete_article(1, refuse)
    assert tag_index(store) == [("a", 1)]


def test_sqlite_migration_indexes_the_tags_already_stored(tmp_path, sqlite_store):
    path = tmp_path / "refapi.db"
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
        for script in sorted(MIGRATIONS.glob("00[123]_*.sql")):
            conn.executescript(script.read_text())
        conn.execute("PRAGMA user_version = 3")  # a database from before the index
        conn.executemany(
            "INSERT INTO articles (title, tags, created_at, updated_at)"
            " VALUES (?, ?, 't', 't')",
            [("one", '["x", "y"]'), ("two", "[]"), ("three", '["y"]')],
        )
    store = sqlite_store(path)
    assert tag_index(store) == [("x", 1), ("y", 1), ("y", 3)]
    assert [a["id"] for a in store.list_articles(0, 10, "y")] == [1, 3]


def test_sqlite_database_from_before_the_notes_gets_them(tmp_path, sqlite_store):
    # 006 came after 005 was released: a database at 5 must still get the notes.
    path = tmp_path / "refapi.db"
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
        for script in sorted(MIGRATIONS.glob("00[1235]_*.sql")):
            conn.executescript(script.read_text())
        conn.execute("PRAGMA user_version = 5")
    store = sqlite_store(path)
    note = store.create_note("kept", 1_795_000_000.0, keep=10)
    assert store.get_note(note["id"]) == note
    assert store.list_notes(0, 10) == [note]


def test_sqlite_articles_stored_before_authors_have_none(tmp_path, sqlite_store):
    path = tmp_path / "refapi.db"
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
        for script in sorted(MIGRATIONS.glob("00[1-7]_*.sql")):
            conn.executescript(script.read_text())
        conn.execute("PRAGMA user_version = 7")  # a database from before 008
        conn.execute(
            "INSERT INTO articles (title, tags, created_at, updated_at)"
            " VALUES ('old', '[\"x\"]', 't', 't')"
        )
    store = sqlite_store(path)
    assert store.get_article(1)["author"] is None
    assert store.list_articles(0, 10, "x")[0]["author"] is None
    made = store.create_article("new", [], 0.0, {"type": "client", "id": 2})
    assert store.get_article(made["id"])["author"] == {"type": "client", "id": 2}


def pay(store, key: str, fingerprint: str, amount: int, now: float):
    """Store a payment the way the handler does: its id and body made above."""
    payment = {
        "id": new_payment_id(now),
        "amount": Decimal(amount),
        "currency": "EUR",
        "createdAt": iso(now),
    }
    return store.create_payment("s", key, fingerprint, payment, b"{}", now)


def test_sqlite_expired_key_not_yet_cleaned_up_is_freed_on_use(tmp_path, sqlite_store):
    store = sqlite_store(tmp_path / "refapi.db")
    first = pay(store, "k", "f1", 1, 1000.0)
    store._next_key_sweep = float("inf")  # the periodic clean-up has not come round
    again = pay(store, "k", "f2", 2, 1000.0 + 86401)
    assert not again.replayed and again.resource_id != first.resource_id
    assert store.get_payment(first.resource_id, "s")["amount"] == 1  # the payment stays


def test_sqlite_periodic_clean_up_frees_expired_keys_and_keeps_payments(
    tmp_path, sqlite_store
):
    store = sqlite_store(tmp_path / "refapi.db")
    old = pay(store, "old", "f", 1, 1000.0)
    pay(store, "new", "f", 1, 1000.0 + 86_000)
    pay(store, "later", "f", 1, 1000.0 + 86_500)
    conn = store.file.connection()
    keys = dict(conn.execute("SELECT id, idempotency_key FROM payments").fetchall())
    assert keys[old.resource_id] is None
    assert sorted(k for k in keys.values() if k) == ["later", "new"]


def test_sqlite_close_releases_the_connections_of_every_thread(tmp_path, sqlite_store):
    # A threaded host (gthread workers, a test runner) opens one connection per
    # thread; App.close() runs on one thread and must release them all.
    store = sqlite_store(tmp_path / "refapi.db")
    opened = []
    worker = threading.Thread(target=lambda: opened.append(store.file.connection()))
    worker.start()
    worker.join()
    store.close()
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        opened[0].execute("SELECT 1")


def test_sqlite_purges_old_login_counters_whatever_their_key(tmp_path, sqlite_store):
    """Reads the SQLite backend's own table: a test of that backend alone."""
    store = sqlite_store(tmp_path / "refapi.db")
    now = 1_795_000_000.0
    assert store.reserve_login_attempt([("email:old@example.com", 5)], now, 60) == 0
    assert store.reserve_login_attempt([("addr:192.0.2.1", 5)], now + 30, 60) == 0
    # A minute after the first, another key's attempt purges the old counter.
    assert (
        store.reserve_login_attempt([("email:new@example.com", 5)], now + 61, 60) == 0
    )
    rows = store.file.connection().execute(
        "SELECT key FROM login_attempts ORDER BY key"
    )
    assert [key for (key,) in rows] == ["addr:192.0.2.1", "email:new@example.com"]
