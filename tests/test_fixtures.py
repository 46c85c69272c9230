"""The shared fixtures: each test's database starts as a new database would (its
own secret key and buckets, the admin's login as a login at the test's time would
make it); on SQLite it is a copy of a seeded one."""

from __future__ import annotations

import pytest

from refapi.storage.sqlite import SqliteStore
from refapi.web.auth import secret_hash
from tests.conftest import ADMIN


@pytest.mark.sqlite_only
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


@pytest.mark.sqlite_only
def test_sqlite_the_first_app_uses_the_seeded_login(make_app, seeded_databases):
    app = make_app()
    seeded = seeded_databases["admin"].authorization
    assert app.extra_environ == {"HTTP_AUTHORIZATION": seeded}
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
