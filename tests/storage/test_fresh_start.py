"""A fresh start, ``reset(everything=True)`` (``refapi reset --all``), through
``Store`` alone, over every backend: the records back to the seed as a reset puts
them, every account but the first admin gone, every credential and login counter
gone, every rate-limit bucket full again, and no worker trusting what it remembers.
"""

from __future__ import annotations

import pytest

from refapi.storage import Store
from refapi.storage.base import UnknownClient, UnknownUser
from tests.storage.race import race

NOW = 1_795_000_000.0
LATER = NOW + 3600
DRAINED = ("register:addr:192.0.2.1", 2, 2 / 3600)  # two an hour, as register's


@pytest.fixture
def store(open_data) -> Store:
    """A store over fresh, seeded data with no account, on each backend in turn."""
    return open_data("main")


def account(store: Store, email: str, role: str = "user") -> dict:
    """A user with a password hash of its own, and a login (bearer and session),
    an API key and a failed login counted against its email."""
    user = store.create_user(email, f"hash of {email}", "", "", role, NOW)
    hashes = {"bearer": f"bearer {email}", "session": f"session {email}"}
    store.create_tokens(f"login {email}", hashes, LATER, user_id=user["id"])
    store.create_api_key("ci", user["id"], f"key {email}", NOW)
    assert store.reserve_login_attempt([(email, 1)], NOW, 60) == 0
    return user


def credentials_of(store: Store, email: str) -> list:
    """What each of ``account``'s credentials finds now (None: refused)."""
    return [
        store.find_token("bearer", f"bearer {email}", NOW),
        store.find_token("session", f"session {email}", NOW),
        store.find_api_key(f"key {email}"),
    ]


def test_a_fresh_start_keeps_the_first_admin_alone_with_its_password(store):
    ann = account(store, "ann@example.com")
    first = account(store, "first@example.com", "admin")
    account(store, "second@example.com", "admin")
    client = store.create_oauth_client("ci", "client-id", "secret hash", NOW)
    store.create_tokens("by client", {"bearer": "client"}, LATER, client_id=1)
    store.create_article("gone", [], NOW)

    store.reset(everything=True)

    assert store.list_users(0, 10) == [first]  # the admin with the lowest id
    assert store.user_login("FIRST@example.com") == (first, "hash of first@example.com")
    for email in ("ann@example.com", "first@example.com", "second@example.com"):
        assert credentials_of(store, email) == [None, None, None]
    assert store.find_token("bearer", "client", NOW) is None
    assert store.find_oauth_client(client["clientId"]) is None
    assert store.list_api_keys(0, 10) == store.list_oauth_clients(0, 10) == []
    assert store.get_user(ann["id"]) is None
    # As a reset: the records back to the seed, and the reset epoch moved on.
    assert store.list_articles(0, 10) == []
    assert store.get_todo(200) is not None and store.reset_epoch() == 1


def test_the_first_admin_is_the_admin_with_the_lowest_id_not_the_first_user(store):
    store.create_user("user@example.com", "!", "", "", "user", NOW)
    admin = store.create_user("admin@example.com", "!", "", "", "admin", NOW)
    store.create_user("later@example.com", "!", "", "", "user", NOW)
    store.reset(everything=True)
    assert store.list_users(0, 10) == [admin]


def test_a_fresh_start_with_no_admin_removes_every_account(store):
    store.create_user("user@example.com", "!", "", "", "user", NOW)
    store.reset(everything=True)
    assert store.list_users(0, 10) == []
    assert not store.has_admin()  # the next start makes the first admin


def test_ids_start_again_after_the_first_admins(store):
    users = [account(store, f"{n}@example.com") for n in range(3)]
    admin = account(store, "admin@example.com", "admin")
    store.create_oauth_client("ci", "client-id", "secret hash", NOW)
    store.reset(everything=True)
    again = store.create_user("again@example.com", "!", "", "", "user", NOW)
    assert (admin["id"], again["id"]) == (users[-1]["id"] + 1, admin["id"] + 1)
    assert store.create_api_key("ci", again["id"], "k", NOW)["id"] == 1
    assert store.create_oauth_client("ci", "c", "s", NOW)["id"] == 1


def test_a_fresh_start_ends_the_login_failure_counters(store):
    account(store, "ann@example.com")  # one failure counted, the limit is one
    assert store.reserve_login_attempt([("ann@example.com", 1)], NOW, 60) > 0
    store.reset(everything=True)
    assert store.reserve_login_attempt([("ann@example.com", 1)], NOW, 60) == 0


@pytest.mark.parametrize("everything", [False, True], ids=["reset", "fresh-start"])
def test_only_a_fresh_start_ends_what_another_worker_remembers(open_data, everything):
    worker, resetting = open_data("main"), open_data("main")
    account(worker, "admin@example.com", "admin")
    found = credentials_of(worker, "admin@example.com")  # remembered there now
    assert None not in found
    resetting.reset(everything=everything)
    kept = credentials_of(worker, "admin@example.com")
    assert kept == (found if not everything else [None, None, None])


@pytest.mark.parametrize("everything", [False, True], ids=["reset", "fresh-start"])
def test_only_a_fresh_start_fills_every_bucket_again_for_every_worker(
    open_data, everything
):
    worker, resetting = open_data("main"), open_data("main")
    for allowed in (True, True, False):
        assert worker.buckets.take([DRAINED], NOW)[0] is allowed
    resetting.reset(everything=everything)
    assert worker.buckets.take([DRAINED], NOW)[0] is everything


def test_a_fresh_start_among_registrations_and_logins_waits_for_none_in_a_circle(
    open_data,
):
    # Creates that hold a credential's table and then the user it points at
    # (a login's tokens, a key) meet a reset that locks them all: neither may
    # wait for the other, and no id drawn meanwhile may come round again.
    workers = [open_data("main"), open_data("main")]
    admin = workers[0].create_user("admin@example.com", "!", "", "", "admin", NOW)

    def work(store, n):
        if n == 0:
            return store.reset(everything=True)
        for m in range(5):
            store.create_user(f"{n}.{m}@example.com", "!", "", "", "user", NOW)
            hashes = {"bearer": f"b{n}.{m}", "session": f"s{n}.{m}"}
            store.create_tokens(f"{n}.{m}", hashes, LATER, user_id=admin["id"])
            store.create_api_key("ci", admin["id"], f"k{n}.{m}", NOW)
        return None

    outcomes = race(workers, 8, work)
    assert [o for o in outcomes if isinstance(o, Exception)] == [], outcomes
    for n in range(20):
        workers[0].create_user(f"after.{n}@example.com", "!", "", "", "user", NOW)
    ids = [user["id"] for user in workers[1].list_users(0, 1000)]
    assert len(ids) == len(set(ids)) and admin["id"] == ids[0]


def test_no_token_is_stored_for_a_principal_deleted_since_it_was_read(store):
    # A login or a token request reads its principal, then stores its token; a
    # fresh start between the two leaves the insert's foreign key to refuse it.
    user = store.create_user("ann@example.com", "!", "", "", "user", NOW)
    client = store.create_oauth_client("ci", "client-id", "secret hash", NOW)
    store.reset(everything=True)
    with pytest.raises(UnknownUser):
        store.create_tokens("l1", {"bearer": "b1"}, LATER, user_id=user["id"])
    with pytest.raises(UnknownClient):
        store.create_tokens("l2", {"bearer": "b2"}, LATER, client_id=client["id"])
    assert store.find_token("bearer", "b1", NOW) is None
    assert store.find_token("bearer", "b2", NOW) is None
