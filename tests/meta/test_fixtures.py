"""The shared fixtures: each test's database starts as a new database would (its
own secret key and buckets, the admin's login as a login at the test's time would
make it); on SQLite it is a copy of a seeded one."""

from __future__ import annotations

import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest

from refapi.handlers.payments import new_payment_id
from refapi.storage import open_store
from refapi.storage.base import iso
from refapi.storage.sqlite import SqliteStore
from refapi.web.auth import secret_hash
from tests.conftest import ADMIN

ROOT = Path(__file__).resolve().parents[2]


def test_sqlite_each_copy_makes_its_own_secret_key_and_buckets(
    seeded_databases, tmp_path
):
    keys = []
    for name in ("one", "two"):
        path = tmp_path / name / "refapi.db"
        seeded_databases["plain"].copy_to(path)
        assert sorted(p.name for p in path.parent.iterdir()) == ["refapi.db"]
        store = SqliteStore(str(path))
        try:
            keys.append(store.secret_key())
            assert store.get_todo(1) is not None  # seeded
        finally:
            store.close()
        assert (path.stat().st_mode & 0o777) == 0o600
    assert keys[0] != keys[1] and all(len(key) == 32 for key in keys)
    assert seeded_databases["plain"].image.startswith(b"SQLite format 3\x00")


def test_a_store_alone_starts_without_an_admin(store):
    assert not store.has_admin()


def test_the_first_app_uses_the_seeded_login(make_app, seeded_copy):
    app = make_app()
    assert app.extra_environ == {"HTTP_AUTHORIZATION": seeded_copy.authorization}
    assert app.get("/api/users/1").json["email"] == ADMIN["email"]


def _live_at(store, app, now: float) -> bool:
    token = app.extra_environ["HTTP_AUTHORIZATION"].removeprefix("Bearer ")
    return store.find_token("bearer", secret_hash(token), now) is not None


def test_an_app_made_later_logs_in_then(make_app, clock, store):
    clock.advance(100)
    app = make_app(token_ttl=60)
    assert _live_at(store, app, clock() + 59)
    assert not _live_at(store, app, clock() + 60)


def test_a_second_app_logs_in_with_a_token_of_its_own(make_app):
    first, second = make_app(), make_app()
    assert first.extra_environ != second.extra_environ
    first.post("/api/logout", status=204)
    first.get("/api/users", status=401)
    second.get("/api/users", status=200)


# -- PostgreSQL's seeded schemas (tests/seeded_schemas.py) ----------------------------


def _use(url: str, now: float) -> bytes:
    """Write what a test could (an article, a user, a payment key, a bucket's token,
    a reset); the secret key the schema had."""
    store = open_store(url)
    try:
        store.reset()  # first: a reset puts the ids of articles back to 1
        store.create_article("a", ["t"], now)
        store.create_user("u@example.com", "!", "", "", "admin", now)
        payment = {"id": new_payment_id(now), "amount": Decimal(1), "currency": "EUR",
                   "createdAt": iso(now)}  # fmt: skip
        store.create_payment("user:1", "k", "f", payment, b"{}", now)
        store.buckets.take([("b", 1, 1e-6)], now)
        assert store.reset_epoch() == 1 and store.has_admin()
        return store.secret_key()
    finally:
        store.close()


def _as_seeded(url: str, now: float) -> bytes:
    """Check the schema is as the seed leaves it; the secret key it makes."""
    store = open_store(url)
    try:
        assert store.reset_epoch() == 0 and not store.has_admin()
        assert store.list_articles(0, 10) == [] and store.list_notes(0, 10) == []
        assert len(store.list_items(0, 2000)) == 1000  # every seeded item
        assert store.get_todo(200) is not None
        payment = {"id": new_payment_id(now), "amount": Decimal(2), "currency": "EUR",
                   "createdAt": iso(now)}  # fmt: skip
        assert not store.create_payment("user:1", "k", "g", payment, b"", now).replayed
        assert store.buckets.take([("b", 1, 1e-6)], now)[0]  # full again
        assert store.create_article("b", [], now)["id"] == 1  # ids start again
        return store.secret_key()
    finally:
        store.close()


@pytest.mark.postgres
def test_a_used_schema_is_handed_out_again_as_seeded_with_a_new_secret_key(clock):
    from tests.seeded_schemas import SeededSchemas  # psycopg: PostgreSQL tests only

    schemas = SeededSchemas()
    try:
        with schemas.schema() as first:
            _as_seeded(first, clock())
            used_key = _use(first, clock())
        with schemas.schema() as again:
            assert again == first  # the same schema, reused
            assert _as_seeded(again, clock()) != used_key
    finally:
        schemas.close()


@pytest.mark.postgres
def test_a_schema_whose_structure_changed_is_not_handed_out_again():
    from tests.seeded_schemas import SeededSchemas  # psycopg: PostgreSQL tests only

    schemas = SeededSchemas()
    try:
        with schemas.schema() as first:
            open_store(first).close()  # migrated and seeded
            with psycopg.connect(first, autocommit=True) as conn:
                conn.execute("DROP TABLE notes CASCADE")  # the keys' foreign key too
        with schemas.schema() as other:
            assert other != first
        assert len(schemas.made) == 2  # the template and the other; the first dropped
    finally:
        schemas.close()


# -- which backends a test runs on (docs/development.md) -----------------------------

SAMPLE = """
import pytest
def test_on_the_database(database_url): pass
def test_through_the_app(app): pass
@pytest.mark.every_backend
def test_where_the_backend_matters(database_url, backend):
    assert database_url.startswith(backend)
@pytest.mark.every_backend
@pytest.mark.sqlite_only
def test_about_sqlite(app): pass
def test_without_a_database(clock): pass
"""
MARKERS = ["every_backend: x", "postgres: x", "sqlite_only: x"]


def ran(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """Run SAMPLE with this suite's conftest, as ``make test`` runs it."""
    (tmp_path / "conftest.py").write_text("from tests.conftest import *  # noqa\n")
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    environ.pop("REFAPI_REQUIRE_SERVICES", None)  # the sample's verdict is read here
    markers = [arg for marker in MARKERS for arg in ("-o", f"markers={marker}")]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider",
         "-p", "no:xdist", *markers, "--rootdir", str(tmp_path), *args,
         str(tmp_path)],
        # A hang's guard: a pytest of its own took over 60 s with two suites at
        # once on two slow cores (stop 44's first loaded round).
        cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=180,
    )  # fmt: skip


def passed(done: subprocess.CompletedProcess) -> list[str]:
    assert done.returncode == 0, done.stdout + done.stderr
    prefix = "test_sample.py::test_"
    return [
        line.split()[0].removeprefix(prefix)
        for line in done.stdout.splitlines()
        if line.startswith(prefix) and line.split()[1] == "PASSED"
    ]


def collected(done: subprocess.CompletedProcess) -> list[str]:
    """The tests a ``--collect-only`` run of SAMPLE lists (cheaper than a run:
    what a selection holds needs no database)."""
    assert done.returncode == 0, done.stdout + done.stderr
    prefix = "test_sample.py::test_"
    return [
        line.removeprefix(prefix)
        for line in done.stdout.splitlines()
        if line.startswith(prefix)
    ]


@pytest.mark.slow  # runs pytest on a sample
def test_a_test_runs_on_sqlite_and_on_postgresql_only_where_it_is_marked(tmp_path):
    # Run, not only collected: each case's database is on its backend.
    assert passed(ran(tmp_path)) == [
        "on_the_database", "through_the_app", "where_the_backend_matters[sqlite]",
        "where_the_backend_matters[postgres]", "about_sqlite", "without_a_database",
    ]  # fmt: skip


@pytest.mark.slow  # runs pytest on a sample
def test_the_postgresql_cases_are_marked_postgres(tmp_path):
    assert collected(ran(tmp_path, "-m", "postgres", "--collect-only", "-qq")) == [
        "where_the_backend_matters[postgres]"
    ]


@pytest.mark.slow  # runs pytest on a sample
def test_every_test_on_the_database_runs_on_postgresql_too_when_asked(tmp_path):
    done = ran(tmp_path, "--collect-only", "-qq", REFAPI_TEST_ALL_ON_POSTGRES="1")
    assert collected(done) == [
        "on_the_database[sqlite]", "on_the_database[postgres]",
        "through_the_app[sqlite]", "through_the_app[postgres]",
        "where_the_backend_matters[sqlite]", "where_the_backend_matters[postgres]",
        "about_sqlite", "without_a_database",
    ]  # fmt: skip


@pytest.mark.slow  # runs pytest on a sample
def test_the_old_backend_variable_is_a_usage_error_that_says_what_took_its_place(
    tmp_path,
):
    done = ran(tmp_path, REFAPI_TEST_BACKEND="postgres")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "REFAPI_TEST_BACKEND is gone" in done.stderr
    assert "`-m postgres`" in done.stderr


def test_the_contract_tests_are_sorted_as_costly_as_their_mark_says():
    # tests/conftest.py sorts the costliest first by their marks; the contract
    # tests' mark is added by their own conftest, which must run before the sort
    # (else they were handed out last and made the run's tail: issue 34).
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p",
         "no:cacheprovider", "tests/test_routes.py", "tests/contract"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    first = done.stdout.splitlines()[0]
    assert first.startswith("tests/contract/"), done.stdout[-2000:]
