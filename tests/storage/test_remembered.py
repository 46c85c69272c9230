"""Credentials a worker remembers (docs/authentication.md, "Remembered credentials").

Two apps over one database stand for two workers of a host: each has its own
store, so each remembers on its own, as two processes do. Every change that
affects a credential, made through one, takes effect at once through the other,
which had just used (and so remembered) that credential. On SQLite, a valid
credential costs no SQL while nothing has changed.
"""

from __future__ import annotations

import base64
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import webtest

from refapi import create_app

# On both backends: what another worker changed is seen through the database.
pytestmark = pytest.mark.every_backend

PASSWORD = "a long enough password"
ADMIN_ONLY = "/api/keys"  # a route for admins
USER_ONLY = "/api/users"  # a route for any user


@pytest.fixture
def pair(make_app, config, clock) -> Iterator[tuple[webtest.TestApp, webtest.TestApp]]:
    """Two workers: the admin's (every request sends the admin's token) and another
    over the same database with a store of its own, sending nothing by default."""
    first = make_app()
    store = config.open_store()
    second = webtest.TestApp(create_app(config, store=store, clock=clock))
    yield first, second
    store.close()


def register(admin: webtest.TestApp, email: str, role: str = "user") -> int:
    body = {"email": email, "password": PASSWORD, "role": role}
    return admin.post_json("/api/users", body, status=201).json["id"]


def log_in(app: webtest.TestApp, email: str, password: str = PASSWORD) -> dict:
    body = {"email": email, "password": password}
    answer = webtest.TestApp(app.app).post_json("/api/login", body, status=200)
    return {"Authorization": f"Bearer {answer.json['token']}"}


def used(worker: webtest.TestApp, headers: dict, path: str = USER_ONLY) -> None:
    """The credential works on ``worker``, twice: it is remembered there now."""
    for _ in range(2):
        worker.get(path, headers=headers, status=200)


def test_logout_ends_a_remembered_token_at_once(pair):
    admin, worker = pair
    register(admin, "ann@example.com")
    token = log_in(admin, "ann@example.com")
    used(worker, token)
    admin.post("/api/logout", headers=token, status=204)
    assert worker.get(USER_ONLY, headers=token, status=401).json["code"]


def test_a_revoked_api_key_is_refused_at_once(pair):
    admin, worker = pair
    made = admin.post_json("/api/keys", {"name": "ci"}, status=201).json
    key = {"X-API-Key": made["key"]}
    used(worker, key)
    admin.delete(f"/api/keys/{made['id']}", status=204)
    worker.get(USER_ONLY, headers=key, status=401)


def test_a_deleted_oauth_clients_token_is_refused_at_once(pair):
    admin, worker = pair
    client = admin.post_json("/api/oauth-clients", {"name": "ci"}, status=201).json
    pair_ = f"{client['clientId']}:{client['clientSecret']}".encode()
    issued = webtest.TestApp(admin.app).post(
        "/oauth/token", {"grant_type": "client_credentials"},
        headers={"Authorization": "Basic " + base64.b64encode(pair_).decode()},
        status=200,
    )  # fmt: skip
    token = {"Authorization": f"Bearer {issued.json['access_token']}"}
    used(worker, token, "/v1/todos/1")
    worker.post_json("/v1/articles", {"title": "by a client"}, headers=token)
    admin.delete(f"/api/oauth-clients/{client['id']}", status=204)
    worker.get("/v1/todos/1", headers=token, status=401)


def test_a_password_change_ends_the_other_logins_at_once(pair):
    admin, worker = pair
    user_id = register(admin, "bea@example.com")
    token = log_in(admin, "bea@example.com")
    used(worker, token)
    body = {"email": "bea@example.com", "firstName": "", "lastName": "",
            "password": "another long password"}  # fmt: skip
    admin.put_json(f"/api/users/{user_id}", body, status=200)
    worker.get(USER_ONLY, headers=token, status=401)
    again = log_in(admin, "bea@example.com", "another long password")
    worker.get(USER_ONLY, headers=again, status=200)


def test_a_deleted_users_token_and_key_are_refused_at_once(pair):
    admin, worker = pair
    user_id = register(admin, "cy@example.com")
    token = log_in(admin, "cy@example.com")
    made = admin.post_json("/api/keys", {"name": "cy's", "userId": user_id})
    key = {"X-API-Key": made.json["key"]}
    used(worker, token)
    used(worker, key)
    admin.delete(f"/api/users/{user_id}", status=204)
    worker.get(USER_ONLY, headers=token, status=401)
    worker.get(USER_ONLY, headers=key, status=401)


@pytest.mark.parametrize("credential", ["token", "key"])
def test_a_role_change_takes_effect_at_once_both_ways(pair, credential):
    admin, worker = pair
    user_id = register(admin, "di@example.com")
    token = log_in(admin, "di@example.com")
    if credential == "key":
        made = admin.post_json("/api/keys", {"name": "di's", "userId": user_id})
        token = {"X-API-Key": made.json["key"]}
    worker.get(ADMIN_ONLY, headers=token, status=403)
    worker.get(ADMIN_ONLY, headers=token, status=403)  # remembered as a user
    body = {"email": "di@example.com", "firstName": "Di", "lastName": ""}
    admin.put_json(f"/api/users/{user_id}", {**body, "role": "admin"}, status=200)
    used(worker, token, ADMIN_ONLY)  # an admin now, and remembered as one
    admin.put_json(f"/api/users/{user_id}", {**body, "role": "user"}, status=200)
    worker.get(ADMIN_ONLY, headers=token, status=403)


def test_a_changed_name_shows_in_the_session_at_once(pair):
    admin, worker = pair
    user_id = register(admin, "ed@example.com")
    login = webtest.TestApp(worker.app)
    login.post_json("/api/login", {"email": "ed@example.com", "password": PASSWORD})
    assert login.get("/api/session").json["user"]["firstName"] == ""
    body = {"email": "ed@example.com", "firstName": "Edith", "lastName": "Piaf"}
    admin.put_json(f"/api/users/{user_id}", body, status=200)
    assert login.get("/api/session").json["user"]["firstName"] == "Edith"


def test_a_remembered_token_expires_on_time(pair, clock, config):
    admin, worker = pair
    register(admin, "flo@example.com")
    token = log_in(admin, "flo@example.com")
    used(worker, token)
    clock.advance(config.token_ttl - 1)
    worker.get(USER_ONLY, headers=token, status=200)
    clock.advance(1)
    worker.get(USER_ONLY, headers=token, status=401)


@pytest.mark.sqlite_only
def test_a_valid_token_costs_no_sql_while_nothing_changes(pair, store):
    admin, _ = pair
    statements: list[str] = []
    store.file.connection().set_trace_callback(statements.append)
    admin.get("/v1/todos/1", status=200)  # the store has remembered the token
    statements.clear()
    admin.get("/v1/todos/1", status=200)
    assert (
        statements == [s for s in statements if "FROM todos" in s]
        and len(statements) == 1
    ), statements
    # A change to any credential: the next request reads the token again.
    admin.post_json("/api/keys", {"name": "x"}, status=201)
    admin.delete("/api/keys/1", status=204)
    statements.clear()
    admin.get("/v1/todos/1", status=200)
    assert any("FROM tokens" in s for s in statements), statements


@pytest.mark.sqlite_only
def test_a_rebuilt_bucket_file_forgets_what_was_remembered(pair, config):
    """The generation lives in the bucket file: an operator deleting it must not
    let a revoked credential through (the new file starts at a random number)."""
    admin, worker = pair
    made = admin.post_json("/api/keys", {"name": "ci"}, status=201).json
    admin.delete(f"/api/keys/{made['id']}", status=204)  # the number moved once
    made = admin.post_json("/api/keys", {"name": "ci"}, status=201).json
    key = {"X-API-Key": made["key"]}
    used(worker, key)
    os.unlink(Path(config.database_url.removeprefix("sqlite:///") + ".buckets"))
    admin.delete(f"/api/keys/{made['id']}", status=204)
    worker.get(USER_ONLY, headers=key, status=401)


@pytest.mark.sqlite_only
def test_a_bucket_file_put_back_from_a_copy_brings_no_key_back(pair, config):
    """A copy brings back an older number; what a worker remembered at that
    number was forgotten when the worker saw the number move."""
    admin, worker = pair
    made = admin.post_json("/api/keys", {"name": "ci"}, status=201).json
    key = {"X-API-Key": made["key"]}
    used(worker, key)
    path = Path(config.database_url.removeprefix("sqlite:///") + ".buckets")
    copy = path.read_bytes()
    admin.delete(f"/api/keys/{made['id']}", status=204)
    worker.get("/v1/todos/1", headers=key, status=401)  # seen moved
    with path.open("r+b") as file:  # put back in place, as `cp` over it does
        file.write(copy)
    worker.get(USER_ONLY, headers=key, status=401)


@pytest.mark.sqlite_only
def test_a_bucket_file_renamed_back_from_a_copy_brings_no_key_back(pair, config):
    """The worker never saw the number move, and the copy holds the number it
    remembered the key at: another file, so nothing remembered counts."""
    admin, worker = pair
    made = admin.post_json("/api/keys", {"name": "ci"}, status=201).json
    key = {"X-API-Key": made["key"]}
    used(worker, key)
    path = Path(config.database_url.removeprefix("sqlite:///") + ".buckets")
    shutil.copyfile(path, path.with_suffix(".copy"))
    admin.delete(f"/api/keys/{made['id']}", status=204)
    os.replace(path.with_suffix(".copy"), path)  # `cp` then `mv`, in one rename
    worker.get(USER_ONLY, headers=key, status=401)


@pytest.mark.sqlite_only
def test_a_bucket_file_moved_aside_is_not_read_for_the_one_at_the_path(pair, config):
    """Renamed, not deleted: the file the worker maps is still there under another
    name, and the number moves in a new one at the path (docs/authentication.md,
    "Remembered credentials"); the worker reads the path's."""
    admin, worker = pair
    made = admin.post_json("/api/keys", {"name": "ci"}, status=201).json
    key = {"X-API-Key": made["key"]}
    used(worker, key)
    path = Path(config.database_url.removeprefix("sqlite:///") + ".buckets")
    os.rename(path, path.with_suffix(".aside"))  # kept: its number never moves
    admin.delete(f"/api/keys/{made['id']}", status=204)
    assert path.exists()  # the admin's worker made a new one, and moved it on
    worker.get(USER_ONLY, headers=key, status=401)
