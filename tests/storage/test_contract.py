"""The storage interface's contract: each behaviour through ``Store`` alone (no
private attributes, no SQL), run over every backend in ``BACKENDS``."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest

from refapi.handlers.payments import new_payment_id
from refapi.storage import Store
from refapi.storage.base import KEY_TTL_S, EmailTaken, LastAdmin, UnknownUser, iso

NOW = 1_795_000_000.0


@pytest.fixture
def store(open_data) -> Store:
    """A store over fresh, seeded data, on each backend in turn. Here alone: the
    SQLite fault tests beside this file use the app's store of tests/conftest.py."""
    return open_data("main")


def pay(store, key: str, fingerprint: str, amount: int, now: float, owner="user:1"):
    """Store a payment the way the handler does: its id and body made above."""
    payment = {
        "id": new_payment_id(now),
        "amount": Decimal(amount),
        "currency": "EUR",
        "createdAt": iso(now),
    }
    return store.create_payment(owner, key, fingerprint, payment, b"{}", now)


def never(current):
    raise AssertionError("no check expected")


def allow(current) -> None:
    return None


def refuse(current):
    raise RuntimeError("precondition failed")


# -- meta ----------------------------------------------------------------------


def test_the_seed_is_deterministic(open_data):
    one, two = open_data("one"), open_data("two")
    assert one.get_todo(37) == two.get_todo(37)
    assert one.list_items(0, 1000) == two.list_items(0, 1000)
    assert [one.get_todo(n)["userId"] for n in (1, 20, 21, 200)] == [
        math.ceil(n / 20) for n in (1, 20, 21, 200)
    ]
    assert one.get_todo(201) is None and one.get_todo(0) is None


def test_the_secret_key_is_generated_once_and_kept(open_data):
    first = open_data("main").secret_key()
    assert len(first) == 32
    assert open_data("main").secret_key() == first  # another worker, the same key
    assert open_data("other").secret_key() != first


def test_ping_passes_on_fresh_data(store):
    store.ping()
    store.ping_buckets()


def test_reset_puts_every_resource_back_to_the_seed(store):
    store.create_article("gone soon", [], NOW)
    store.create_note("gone too", NOW, keep=10)
    paid = pay(store, "k", "f", 1, NOW)
    store.reset()
    assert store.list_articles(0, 10) == []
    assert store.list_notes(0, 10) == []
    assert store.get_payment(paid.resource_id, "user:1") is None
    assert store.create_article("first again", [], NOW)["id"] == 1
    assert store.get_todo(1)["title"] == "review the cursor #1"


def test_reset_keeps_accounts(store):
    user = store.create_user("a@example.com", "!", "A", "B", "admin", NOW)
    store.reset()
    assert store.get_user(user["id"]) == user


def test_reset_moves_the_reset_epoch_on_for_every_worker(open_data):
    store = open_data("main")
    assert store.reset_epoch() == 0
    store.reset()
    store.reset()
    assert store.reset_epoch() == 2
    assert open_data("main").reset_epoch() == 2


# -- articles --------------------------------------------------------------------


def test_an_article_is_stored_as_the_api_shows_it(store):
    made = store.create_article("Título", ["a", "ß"], NOW, {"type": "user", "id": 3})
    assert made == {
        "id": 1,
        "title": "Título",
        "tags": ["a", "ß"],
        "author": {"type": "user", "id": 3},
        "createdAt": iso(NOW),
        "updatedAt": iso(NOW),
    }
    assert store.get_article(1) == made
    assert store.get_article(2) is None


def test_an_update_that_changes_nothing_keeps_updated_at(store):
    made = store.create_article("one", ["a"], NOW)
    same = store.update_article(1, {"title": "one"}, NOW + 60, allow)
    assert same == made
    changed = store.update_article(1, {"title": "two"}, NOW + 60, allow)
    assert changed == {**made, "title": "two", "updatedAt": iso(NOW + 60)}
    assert store.get_article(1) == changed


def test_a_refused_update_or_delete_changes_nothing(store):
    made = store.create_article("one", ["a"], NOW)
    with pytest.raises(RuntimeError):
        store.update_article(1, {"tags": ["z"]}, NOW, refuse)
    with pytest.raises(RuntimeError):
        store.delete_article(1, refuse)
    assert store.get_article(1) == made
    assert store.list_articles(0, 10, "a") == [made]
    assert store.list_articles(0, 10, "z") == []


def test_the_check_sees_the_current_article(store):
    made = store.create_article("one", [], NOW)
    seen = []
    store.update_article(1, {"title": "two"}, NOW, seen.append)
    store.delete_article(1, seen.append)
    assert seen == [made, {**made, "title": "two"}]


def test_a_missing_article_is_none_without_a_check(store):
    assert store.update_article(9, {"title": "x"}, NOW, never) is None
    assert store.delete_article(9, never) is False


def test_a_tag_page_follows_every_write(store):
    store.create_article("one", ["a", "b"], NOW)
    store.create_article("two", ["b"], NOW)

    def tagged(tag: str) -> list[int]:
        return [article["id"] for article in store.list_articles(0, 10, tag)]

    assert (tagged("a"), tagged("b")) == ([1], [1, 2])
    store.update_article(1, {"tags": ["c", "a"]}, NOW, allow)
    assert (tagged("a"), tagged("b"), tagged("c")) == ([1], [2], [1])
    store.update_article(2, {"tags": []}, NOW, allow)
    assert tagged("b") == []
    store.delete_article(1, allow)
    assert (tagged("a"), tagged("c")) == ([], [])


def test_a_page_fetches_one_row_past_the_limit(store):
    for n in range(4):
        store.create_article(f"a{n}", ["t"], NOW)
    assert [a["id"] for a in store.list_articles(0, 2)] == [1, 2, 3]
    assert [a["id"] for a in store.list_articles(2, 2)] == [3, 4]
    assert [a["id"] for a in store.list_articles(1, 2, "t")] == [2, 3, 4]
    assert [i["id"] for i in store.list_items(998, 5)] == [999, 1000]


# -- notes -----------------------------------------------------------------------


def test_notes_keep_the_newest(store):
    for n in range(5):
        store.create_note(str(n), NOW, keep=3)
    assert [note["text"] for note in store.list_notes(0, 10)] == ["2", "3", "4"]
    assert store.update_note(5, "five") == {
        "id": 5, "text": "five", "createdAt": iso(NOW),
    }  # fmt: skip
    assert store.delete_note(5) is True
    assert store.delete_note(5) is False
    assert store.get_note(5) is None and store.update_note(5, "x") is None


# -- payments --------------------------------------------------------------------


def test_a_key_makes_one_payment_and_replays_its_outcome(store):
    first = pay(store, "k", "f1", 1, NOW)
    again = pay(store, "k", "f2", 2, NOW + 1)
    assert not first.replayed and again.replayed
    assert again.resource_id == first.resource_id
    assert again.fingerprint == "f1" and again.status == 201 and again.body == b"{}"
    assert store.get_payment(first.resource_id, "user:1")["amount"] == 1


def test_keys_and_payments_belong_to_their_owner(store):
    mine = pay(store, "k", "f", 1, NOW, owner="user:1")
    theirs = pay(store, "k", "f", 1, NOW, owner="user:2")
    assert not theirs.replayed and theirs.resource_id != mine.resource_id
    assert store.get_payment(mine.resource_id, "user:2") is None


def test_an_expired_key_is_claimed_afresh_and_the_payment_stays(store):
    first = pay(store, "k", "f1", 1, NOW)
    again = pay(store, "k", "f2", 2, NOW + KEY_TTL_S + 1)
    assert not again.replayed and again.resource_id != first.resource_id
    assert store.get_payment(first.resource_id, "user:1")["amount"] == 1


# -- users -----------------------------------------------------------------------


def test_an_email_is_taken_whatever_its_case(store):
    user = store.create_user("Ana@Example.com", "hash", "Ana", "B", "user", NOW)
    with pytest.raises(EmailTaken):
        store.create_user("ana@example.COM", "!", "", "", "user", NOW)
    assert store.user_login("ANA@example.com") == (user, "hash")
    assert store.user_login("bob@example.com") is None


def test_the_last_admin_can_be_neither_demoted_nor_deleted(store):
    admin = store.create_user("a@example.com", "!", "", "", "admin", NOW)
    demoted = {**admin, "role": "user"}
    with pytest.raises(LastAdmin):
        store.replace_user(admin["id"], demoted, None, NOW)
    with pytest.raises(LastAdmin):
        store.delete_user(admin["id"])
    other = store.create_user("b@example.com", "!", "", "", "admin", NOW)
    assert store.replace_user(admin["id"], demoted, None, NOW)["role"] == "user"
    with pytest.raises(LastAdmin):
        store.delete_user(other["id"])
    assert store.has_admin()


def test_a_new_password_ends_the_other_logins(store):
    user = store.create_user("a@example.com", "!", "", "", "user", NOW)
    store.create_tokens("kept", {"bearer": "h1"}, NOW + 60, user_id=user["id"])
    store.create_tokens("ended", {"bearer": "h2"}, NOW + 60, user_id=user["id"])
    store.replace_user(user["id"], user, "new hash", NOW, keep_login="kept")
    assert store.find_token("bearer", "h1", NOW)["login"] == "kept"
    assert store.find_token("bearer", "h2", NOW) is None
    assert store.user_login("a@example.com")[1] == "new hash"


# -- credentials -----------------------------------------------------------------


def test_a_login_token_lives_until_it_expires_or_the_login_ends(store):
    user = store.create_user("a@example.com", "!", "", "", "user", NOW)
    hashes = {"bearer": "b", "session": "s"}
    store.create_tokens("login", hashes, NOW + 60, user_id=user["id"])
    assert store.find_token("bearer", "b", NOW) == {
        "login": "login", "clientId": None, "user": user,
    }  # fmt: skip
    assert store.find_token("session", "b", NOW) is None  # another kind
    assert store.find_token("bearer", "b", NOW + 60) is None  # expired
    store.end_login("login")
    assert store.find_token("session", "s", NOW) is None


def test_an_api_key_speaks_for_its_user_until_either_goes(store):
    user = store.create_user("a@example.com", "!", "", "", "user", NOW)
    with pytest.raises(UnknownUser):
        store.create_api_key("k", user["id"] + 1, "h", NOW)
    key = store.create_api_key("k", user["id"], "h", NOW)
    assert key == {"id": 1, "name": "k", "userId": user["id"], "createdAt": iso(NOW)}
    assert store.list_api_keys(0, 10) == [key]
    assert store.find_api_key("h") == user
    assert store.delete_user(user["id"]) is True
    assert store.find_api_key("h") is None and store.list_api_keys(0, 10) == []


def test_an_oauth_client_is_found_by_its_client_id(store):
    client = store.create_oauth_client("app", "cid", "secret hash", NOW)
    assert client == {"id": 1, "name": "app", "clientId": "cid", "createdAt": iso(NOW)}
    assert store.find_oauth_client("cid") == (client, "secret hash")
    assert store.list_oauth_clients(0, 10) == [client]
    assert store.delete_oauth_client(1) is True
    assert store.find_oauth_client("cid") is None


def test_a_login_attempt_is_counted_against_every_limit_or_none(store):
    limits = [("ip", 3), ("account", 2)]
    assert store.reserve_login_attempt(limits, NOW, 60) == 0
    assert store.reserve_login_attempt(limits, NOW + 1, 60) == 0
    # The account is full: nothing is counted, and the wait is until its end.
    assert store.reserve_login_attempt(limits, NOW + 2, 60) == pytest.approx(58)
    assert store.reserve_login_attempt([("ip", 3)], NOW + 2, 60) == 0
    store.release_login_attempt(["account"])
    assert store.reserve_login_attempt(limits, NOW + 3, 60) > 0  # ip is full now
    assert store.reserve_login_attempt([("account", 2)], NOW + 3, 60) == 0
    assert store.reserve_login_attempt(limits, NOW + 61, 60) == 0  # ended


# -- rate-limit buckets ----------------------------------------------------------


def test_a_take_takes_from_every_bucket_or_from_none(store):
    small, large = ("small", 1, 0.001), ("large", 5, 0.001)
    allowed, left = store.take_from_buckets([small, large], NOW)
    assert allowed and left == pytest.approx([0, 4], abs=0.01)
    allowed, left = store.take_from_buckets([small, large], NOW)
    assert not allowed
    allowed, left = store.take_from_buckets([large], NOW)
    assert allowed and left == pytest.approx([3], abs=0.01)  # none taken above


def test_buckets_are_shared_by_every_worker(open_data):
    one, two = open_data("main"), open_data("main")
    bucket = ("shared", 2, 0.001)
    assert one.take_from_buckets([bucket], NOW)[0]
    assert two.take_from_buckets([bucket], NOW)[0]
    assert not one.take_from_buckets([bucket], NOW)[0]


def test_a_refused_take_refunds_one_token_in_the_same_step(store):
    full, empty = ("full", 5, 0.001), ("empty", 1, 0.001)
    assert store.take_from_buckets([full, empty], NOW)[0]
    allowed, _ = store.take_from_buckets([empty], NOW, refund=full)
    assert not allowed
    # The refund gave back the token the first take cost: 5 - 1 + 1, then one taken.
    assert store.take_from_buckets([full], NOW)[1] == pytest.approx([4], abs=0.01)


def test_a_lookup_by_a_text_holding_nul_finds_nothing(store):
    # Bodies holding U+0000 are refused before storage (docs/api.md); a query
    # parameter, a path or a form field reaches a lookup, which finds nothing.
    store.create_article("t", ["a"], NOW)
    nul = "a\x00b"
    assert store.list_articles(0, 10, tag=nul) == []
    assert store.get_payment(nul, "user:1") is None
    assert store.user_login(nul) is None
    assert store.find_oauth_client(nul) is None
