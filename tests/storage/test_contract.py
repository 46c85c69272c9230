"""The storage interface's contract: each behaviour through ``Store`` alone (no
private attributes, no SQL), run over every backend in ``BACKENDS``."""

from __future__ import annotations

import contextlib
import math
import threading
from decimal import Decimal

import pytest

from refapi.handlers.payments import new_payment_id
from refapi.storage import Store, open_store
from refapi.storage.base import (
    KEY_TTL_S,
    MAX_ID,
    Claim,
    EmailTaken,
    Idempotent,
    LastAdmin,
    PasswordChanged,
    Record,
    UnknownUser,
    iso,
)
from refapi.storage.grade_runs import GradeRun, GradeRunsFull
from tests.postgres import fresh_schema
from tests.storage.race import race

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


# -- the other creates' idempotency keys ------------------------------------------

ARTICLES = ("user:1", "POST", "/v1/articles")


def claim(key: str = "k", fingerprint: str = "f", scope=ARTICLES) -> Claim:
    return Claim(*scope, key, fingerprint)


def rendered(record: Record) -> bytes:
    """The answer body a handler renders, here the record's id and title."""
    return f'{{"id":{record["id"]},"title":"{record.get("title")}"}}'.encode()


def write_once(store, key="k", fingerprint="f", title="one", now=NOW, scope=ARTICLES):
    return store.create_article_once(
        claim(key, fingerprint, scope), title, [], now, None, rendered
    )


def note_once(store, key="k", fingerprint="f", text="n", keep=10, owner="addr:a"):
    scope = (owner, "POST", "/api/demo.php?action=create")
    return store.create_note_once(
        claim(key, fingerprint, scope), text, NOW, keep, rendered
    )


def test_a_claimed_key_makes_one_article_and_replays_its_answer(store):
    first = write_once(store, fingerprint="f1")
    assert first == Idempotent("f1", 201, b'{"id":1,"title":"one"}', "1", False)
    store.update_article(1, {"title": "changed"}, NOW, allow)
    again = write_once(store, fingerprint="f2", title="two", now=NOW + 1)
    # The first outcome, whatever was asked: the caller compares the fingerprints.
    assert again == Idempotent("f1", 201, first.body, "1", True)
    assert [a["id"] for a in store.list_articles(0, 10)] == [1]


def test_a_key_names_one_request_of_one_owner_on_one_route(store):
    write_once(store)
    others = [("user:2", "POST", "/v1/articles"), ("user:1", "PUT", "/v1/articles"),
              ("user:1", "POST", "/v2/articles")]  # fmt: skip
    outcomes = [write_once(store, scope=scope) for scope in others]
    assert [(o.replayed, o.resource_id) for o in outcomes] == [
        (False, "2"), (False, "3"), (False, "4"),
    ]  # fmt: skip
    assert write_once(store, scope=others[0]).replayed


def test_a_render_that_fails_stores_nothing_and_leaves_the_key_free(store):
    def broken(record):
        raise RuntimeError("cannot render")

    with pytest.raises(RuntimeError):
        store.create_article_once(claim(), "one", [], NOW, None, broken)
    assert store.list_articles(0, 10) == []
    made = write_once(store)
    assert not made.replayed and store.get_article(int(made.resource_id))


def test_an_expired_create_key_is_claimed_afresh(store):
    first = write_once(store, fingerprint="f1")
    again = write_once(store, fingerprint="f2", now=NOW + KEY_TTL_S + 1)
    assert (again.replayed, again.fingerprint) == (False, "f2")
    assert again.resource_id != first.resource_id
    assert write_once(store, now=NOW + KEY_TTL_S + 2).replayed


def test_a_notes_key_goes_with_the_note(store):
    first = note_once(store, keep=2, text="first")
    assert (first.replayed, note_once(store, keep=2).replayed) == (False, True)
    for n in range(2):  # push the first note out
        store.create_note(f"newer {n}", NOW, keep=2)
    assert store.get_note(int(first.resource_id)) is None
    made = note_once(store, keep=2, fingerprint="other")
    assert (made.replayed, made.fingerprint) == (False, "other")
    assert store.delete_note(int(made.resource_id))
    assert not note_once(store, keep=2, fingerprint="third").replayed


def test_a_reset_forgets_the_creates_keys(store):
    write_once(store)
    note_once(store)
    store.reset()
    # A replay would name ids given out again: the keys are gone with the records.
    assert not write_once(store).replayed
    assert not note_once(store).replayed


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


def test_a_lookup_by_a_text_holding_nul_finds_nothing(store):
    # Bodies holding U+0000 are refused before storage (docs/api.md); a query
    # parameter, a path or a form field reaches a lookup, which finds nothing.
    store.create_article("t", ["a"], NOW)
    nul = "a\x00b"
    assert store.list_articles(0, 10, tag=nul) == []
    assert store.get_payment(nul, "user:1") is None
    assert store.user_login(nul) is None
    assert store.find_oauth_client(nul) is None


# -- concurrency: two workers on the same data -------------------------------------
#
# Each test below starts its threads at one barrier and spreads them over two
# stores opened on the same data (two workers), so the calls meet in the backend.


def test_concurrent_payments_with_one_key_make_one_payment(open_data):
    workers = [open_data("main"), open_data("main")]
    ids = [new_payment_id(NOW) for _ in range(8)]

    def attempt(store, n):
        payment = {"id": ids[n], "amount": Decimal(n), "currency": "EUR",
                   "createdAt": iso(NOW)}  # fmt: skip
        body = f'{{"n": {n}}}'.encode()
        return store.create_payment("user:1", "k", f"f{n}", payment, body, NOW)

    outcomes = race(workers, len(ids), attempt)
    assert all(isinstance(outcome, Idempotent) for outcome in outcomes), outcomes
    firsts = [outcome for outcome in outcomes if not outcome.replayed]
    assert len(firsts) == 1
    (first,) = firsts
    n = ids.index(first.resource_id)
    assert (first.fingerprint, first.body) == (f"f{n}", f'{{"n": {n}}}'.encode())
    # Every other call replays the first's outcome, whichever worker it reached.
    assert {(o.resource_id, o.fingerprint, o.status, o.body) for o in outcomes} == {
        (first.resource_id, first.fingerprint, 201, first.body)
    }
    made = [i for i in ids if workers[0].get_payment(i, "user:1") is not None]
    assert made == [first.resource_id]


@pytest.mark.parametrize("create", [write_once, note_once], ids=["article", "note"])
def test_concurrent_creates_with_one_key_make_one_record(open_data, create):
    workers = [open_data("main"), open_data("main")]
    outcomes = race(workers, 8, lambda store, n: create(store, fingerprint=f"f{n}"))
    assert all(isinstance(outcome, Idempotent) for outcome in outcomes), outcomes
    firsts = [outcome for outcome in outcomes if not outcome.replayed]
    assert len(firsts) == 1
    # Every other call replays the first's outcome, whichever worker it reached.
    assert {(o.resource_id, o.fingerprint, o.body) for o in outcomes} == {
        (firsts[0].resource_id, firsts[0].fingerprint, firsts[0].body)
    }
    made = workers[1].list_articles(0, 10) or workers[1].list_notes(0, 10)
    assert [str(record["id"]) for record in made] == [firsts[0].resource_id]


def test_two_conditional_updates_with_one_check_never_both_pass(open_data):
    workers = [open_data("main"), open_data("main")]
    seen = workers[0].create_article("one", ["a"], NOW)["updatedAt"]
    # Each check waits (briefly) for the other at a barrier: when the backend lets
    # both read before either writes, both checks meet there and both would pass.
    # Held off as it should be, the second reads only after the first committed,
    # by then the barrier is broken and its check sees the new updatedAt.
    meet = threading.Barrier(2, timeout=0.5)

    def if_unchanged(current):
        with contextlib.suppress(threading.BrokenBarrierError):
            meet.wait()
        if current["updatedAt"] != seen:
            raise RuntimeError("precondition failed")

    def update(store, n):
        return store.update_article(1, {"title": f"by {n}"}, NOW + 60, if_unchanged)

    outcomes = race(workers, 2, update)
    passed = [outcome for outcome in outcomes if isinstance(outcome, dict)]
    refused = [outcome for outcome in outcomes if isinstance(outcome, RuntimeError)]
    assert (len(passed), len(refused)) == (1, 1), outcomes
    assert workers[1].get_article(1) == passed[0]


def test_of_two_password_changes_from_one_password_at_once_one_wins(open_data):
    """Each checked currentPassword against the same hash: the second to write
    finds another there and is refused, so the winner's login stays (both were
    written, each ending the other's login, on PostgreSQL)."""
    workers = [open_data("main"), open_data("main")]
    store = workers[0]
    for round_ in range(6):  # a race may go either way: several rounds
        user = store.create_user(f"p{round_}@example.com", "old", "", "", "user", NOW)
        for login in ("one", "two"):
            hashes = {"bearer": f"{login}{round_}"}
            store.create_tokens(
                f"{login}{round_}", hashes, NOW + 60, user_id=user["id"]
            )

        def change(worker, n, user=user, round_=round_):
            login = ("one", "two")[n]
            return worker.replace_user(
                user["id"], user, f"new {login}", NOW,
                keep_login=f"{login}{round_}", current_hash="old",
            )  # fmt: skip

        outcomes = race(workers, 2, change)
        won = [n for n, outcome in enumerate(outcomes) if isinstance(outcome, dict)]
        lost = [o for o in outcomes if isinstance(o, PasswordChanged)]
        assert (len(won), len(lost)) == (1, 1), outcomes
        winner = ("one", "two")[won[0]]
        assert store.user_login(f"p{round_}@example.com")[1] == f"new {winner}"
        assert store.find_token("bearer", f"{winner}{round_}", NOW) is not None
        assert (
            store.find_token("bearer", f"{('two', 'one')[won[0]]}{round_}", NOW) is None
        )


def test_two_admins_demoting_each_other_at_once_leave_one(open_data):
    workers = [open_data("main"), open_data("main")]
    store = workers[0]
    survivor = None
    for round_ in range(6):  # a race may go either way: several rounds
        pair = [
            store.create_user(f"{who}{round_}@example.com", "!", "", "", "admin", NOW)
            for who in "ab"
        ]
        if survivor is not None:  # the two of this round are then the only admins
            store.replace_user(survivor["id"], {**survivor, "role": "user"}, None, NOW)

        def demote(worker, n, pair=pair):
            other = pair[1 - n]
            return worker.replace_user(
                other["id"], {**other, "role": "user"}, None, NOW
            )

        outcomes = race(workers, 2, demote)
        demoted = [outcome for outcome in outcomes if isinstance(outcome, dict)]
        refused = [outcome for outcome in outcomes if isinstance(outcome, LastAdmin)]
        assert (len(demoted), len(refused)) == (1, 1), outcomes
        admins = [u for u in store.list_users(0, 100) if u["role"] == "admin"]
        assert len(admins) == 1 and admins[0]["id"] != demoted[0]["id"]
        survivor = admins[0]


def test_concurrent_login_attempts_never_pass_the_limit(open_data):
    workers = [open_data("main"), open_data("main")]

    def attempt(store, n):
        return store.reserve_login_attempt([("account", 5)], NOW, 60)

    waits = race(workers, 16, attempt)
    assert all(isinstance(wait, float) for wait in waits), waits
    assert waits.count(0.0) == 5
    assert all(wait == pytest.approx(60) for wait in waits if wait)
    assert workers[0].reserve_login_attempt([("account", 5)], NOW + 1, 60) > 0


def test_concurrent_attempts_naming_keys_in_either_order_all_count(open_data):
    # The interface asks no order of the keys (as Buckets.take asks none of
    # its buckets): a backend that locks them must not deadlock on the order.
    workers = [open_data("main"), open_data("main")]
    limits = [("addr:a", 1000), ("email:b", 1000)]

    def attempt(store, n):
        return store.reserve_login_attempt(limits[:: -1 if n % 2 else 1], NOW, 60)

    waits = race(workers, 8, attempt) + race(workers, 8, attempt)
    assert waits == [0.0] * 16


def test_concurrent_notes_never_leave_more_than_keep(open_data):
    workers = [open_data("main"), open_data("main"), open_data("main")]
    keep, writers = 3, 10
    over: list[list[Record]] = []
    done = threading.Event()

    def work(store, n):
        if n == 0:  # a reader, watching every state committed meanwhile
            while not done.is_set():
                if len(notes := store.list_notes(0, 100)) > keep:
                    over.append(notes)
            return []
        made = [store.create_note(f"{n}.{i}", NOW, keep) for i in range(3)]
        return made

    def run(store, n):
        try:
            return work(store, n)
        finally:
            if n != 0 and finished.wait() == 0:  # the last writer ends the reader
                done.set()

    finished = threading.Barrier(writers)
    outcomes = race(workers, writers + 1, run)
    assert all(isinstance(outcome, list) for outcome in outcomes), outcomes
    made = sorted(note["id"] for outcome in outcomes for note in outcome)
    assert len(made) == 3 * writers and over == []
    assert [note["id"] for note in workers[1].list_notes(0, 100)] == made[-keep:]


# -- one API whatever the backend --------------------------------------------------


def every_operation(store: Store) -> list[str]:
    """The same operations on any store, each outcome as ``repr`` shows it (types,
    key order, a Decimal's digits, bytes)."""
    seen: list[object] = []
    at = NOW + 0.75  # a fraction of a second the stored times drop
    tags = ["ß", "日本語", "e\u0301", "🙂", "Ω", "a b"]
    for n, tag in enumerate(tags):
        author = {"type": "client" if n % 2 else "user", "id": n}
        seen.append(
            store.create_article(f"Título {n} «{tag}»", [tag, "all"], at, author)
        )
    seen.append(store.create_article("no author", [], at + 1))
    seen.append(store.update_article(2, {"tags": ["🙂", "new"]}, at + 60, allow))
    seen.append(store.update_article(3, {"title": "Título 2 «e\u0301»"}, at, allow))
    seen.append(store.delete_article(4, allow))
    seen.append(store.create_article("after a delete", ["all"], at + 2))
    for tag in [None, "all", "🙂", "ß", "SS", "e\u0301", "\u00e9", "new"]:
        seen.append(store.list_articles(0, 3, tag))
        seen.append(store.list_articles(3, 100, tag))
    for n, amount in enumerate(["12.50", "0.10", "1E+3", "-0", "99999999.999"]):
        payment = {"id": f"pay_{n:024x}", "amount": Decimal(amount),
                   "currency": "EUR", "createdAt": iso(at + n)}  # fmt: skip
        body = f'{{"amount": "{amount}", "é": "\\u00e9"}}'.encode() + b"\xff\x00"
        seen.append(store.create_payment("user:1", f"k{n}", "f", payment, body, at))
        seen.append(store.create_payment("user:1", f"k{n}", "g", payment, b"", at))
        seen.append(store.get_payment(payment["id"], "user:1"))
    seen.append(store.create_user("Ana@Example.com", "h1", "Ána", "B", "admin", at))
    with contextlib.suppress(EmailTaken):
        seen.append(store.create_user("ana@example.COM", "h", "", "", "user", at))
    seen.append(store.create_user("STRASSE@x.de", "h2", "", "", "user", at))
    with contextlib.suppress(EmailTaken):
        seen.append(store.create_user("straße@x.de", "h", "", "", "user", at))
    seen.append(store.create_user("bo@example.com", "h3", "Bo", "", "user", at + 9))
    with contextlib.suppress(UnknownUser):
        seen.append(store.create_api_key("none", 99, "kh0", at))
    seen.append(store.create_api_key("key ü", 1, "kh1", at))
    seen.append(store.create_api_key("key 2", 3, "kh2", at))
    with contextlib.suppress(LastAdmin):
        seen.append(store.replace_user(1, {**seen[-5], "role": "user"}, None, at))
    bo = store.get_user(3)
    seen.append(store.replace_user(3, {**bo, "lastName": "Ž"}, "h4", at + 30))
    seen.append(store.delete_user(2))
    seen.append(store.list_users(0, 1))
    seen.append(store.list_users(1, 10))
    seen.append(store.user_login("BO@example.com"))
    seen.append(store.list_api_keys(0, 10))
    seen.append(store.find_api_key("kh2"))
    seen.append(store.create_oauth_client("app ✓", "cid-1", "sh1", at))
    seen.append(store.create_oauth_client("app 2", "cid-2", "sh2", at + 1))
    seen.append(store.delete_oauth_client(1))
    seen.append(store.list_oauth_clients(0, 10))
    seen.append(store.find_oauth_client("cid-2"))
    store.create_tokens("login", {"bearer": "b", "session": "s"}, at + 60, 3)
    seen.append(store.find_token("session", "s", at))
    for n in range(6):
        seen.append(store.create_note(f"note {n} ✎", at + n, keep=4))
    for _ in range(2):  # the second a replay
        seen.append(store.create_note_once(
            Claim("addr:a", "POST", "/api/demo.php?action=create", "k", "f"),
            "ключ ✎", at, 4, rendered,
        ))  # fmt: skip
        seen.append(store.create_article_once(
            claim(fingerprint="é"), "Título", ["ß"], at, {"type": "user", "id": 1},
            rendered,
        ))  # fmt: skip
    seen.append(store.update_note(5, "five ✓"))
    seen.append(store.delete_note(6))
    seen.append(store.list_notes(0, 2))
    seen.append(store.list_notes(3, 10))
    seen.append(store.get_note(3))
    seen.append(store.reserve_login_attempt([("ip", 2)], at, 60))
    seen.append(store.reserve_login_attempt([("ip", 2)], at + 1, 60))
    seen.append(store.reserve_login_attempt([("ip", 2)], at + 2.5, 60))
    seen.append([store.get_todo(n) for n in (1, 100, 200)])
    seen.append(store.list_items(0, 2))
    store.reset()
    seen.append(store.reset_epoch())
    seen.append(store.list_articles(0, 10))
    seen.append(store.create_article("first again", ["ß"], at))
    seen.append(store.create_note("first note again", at, keep=4))
    seen.append(store.get_payment("pay_" + "0" * 24, "user:1"))
    seen.append(store.list_users(0, 10))
    return [repr(outcome) for outcome in seen]


@pytest.mark.postgres
def test_both_backends_give_the_same_records(tmp_path):
    with fresh_schema() as url:
        sqlite, postgres = open_store(f"sqlite:///{tmp_path}/same.db"), open_store(url)
        try:
            assert every_operation(postgres) == every_operation(sqlite)
        finally:
            sqlite.close()
            postgres.close()


def test_concurrent_claims_of_an_expired_key_make_one_new_payment(open_data):
    workers = [open_data("main"), open_data("main")]
    old = pay(workers[0], "k", "f0", 1, NOW)
    later = NOW + KEY_TTL_S + 1

    def attempt(store, n):
        return pay(store, "k", f"f{n + 1}", n + 1, later)

    outcomes = race(workers, 6, attempt)
    assert all(isinstance(outcome, Idempotent) for outcome in outcomes), outcomes
    assert len({outcome.resource_id for outcome in outcomes}) == 1
    assert [outcome.replayed for outcome in outcomes].count(False) == 1
    assert outcomes[0].resource_id != old.resource_id
    assert workers[1].get_payment(old.resource_id, "user:1") is not None


def test_concurrent_signups_with_one_email_make_one_user(open_data):
    workers = [open_data("main"), open_data("main")]
    emails = ["ana@example.com", "Ana@Example.com", "ANA@EXAMPLE.COM"] * 3

    def sign_up(store, n):
        return store.create_user(emails[n], "!", "", "", "user", NOW)

    outcomes = race(workers, len(emails), sign_up)
    made = [outcome for outcome in outcomes if isinstance(outcome, dict)]
    taken = [outcome for outcome in outcomes if isinstance(outcome, EmailTaken)]
    assert (len(made), len(taken)) == (1, len(emails) - 1), outcomes
    assert workers[0].list_users(0, 10) == made


def test_a_key_made_as_its_user_is_deleted_never_outlives_the_user(open_data):
    workers = [open_data("main"), open_data("main")]
    for round_ in range(5):
        user = workers[0].create_user(
            f"u{round_}@example.com", "!", "", "", "user", NOW
        )

        def either(store, n, user=user, round_=round_):
            if n == 0:
                return store.delete_user(user["id"])
            return store.create_api_key("k", user["id"], f"h{round_}", NOW)

        deleted, key = race(workers, 2, either)
        assert deleted is True
        assert isinstance(key, UnknownUser) or key["userId"] == user["id"], key
        assert workers[1].find_api_key(f"h{round_}") is None
        assert workers[1].list_api_keys(0, 10) == []


def test_ids_at_the_limit_find_nothing(store):
    store.create_article("a", ["t"], NOW)
    store.create_note("n", NOW, keep=5)
    assert store.get_article(MAX_ID) is None
    assert store.update_article(MAX_ID, {"title": "x"}, NOW, never) is None
    assert store.delete_article(MAX_ID, never) is False
    assert store.list_articles(MAX_ID, 10) == []
    assert store.list_articles(MAX_ID, 10, "t") == []
    assert store.get_note(MAX_ID) is None and store.update_note(MAX_ID, "x") is None
    assert store.delete_note(MAX_ID) is False and store.list_notes(MAX_ID, 1) == []
    assert store.get_todo(MAX_ID) is None and store.list_items(MAX_ID, 1) == []
    assert store.get_user(MAX_ID) is None and store.list_users(MAX_ID, 1) == []
    with pytest.raises(UnknownUser):
        store.create_api_key("k", MAX_ID, "h", NOW)
    assert store.delete_api_key(MAX_ID) is False
    assert store.delete_oauth_client(MAX_ID) is False
    assert store.delete_user(MAX_ID) is False


def test_a_reset_among_concurrent_creates_leaves_ids_that_never_collide(open_data):
    # A reset starts the ids again at 1: no create made during it may keep an id
    # the restarted ids reach later.
    workers = [open_data("main"), open_data("main")]
    for _ in range(20):
        workers[0].create_article("before", [], NOW)

    def work(store, n):
        if n == 0:
            return store.reset()
        return [store.create_article(f"by {n}", [], NOW)["id"] for _ in range(10)]

    outcomes = race(workers, 8, work)
    assert [o for o in outcomes if isinstance(o, Exception)] == [], outcomes
    survived = len(workers[1].list_articles(0, 1000))
    for _ in range(80):  # past every id drawn before the reset
        workers[0].create_article("after", [], NOW)
    ids = [article["id"] for article in workers[1].list_articles(0, 1000)]
    assert len(ids) == survived + 80 == len(set(ids))


def test_an_admin_deleted_as_it_demotes_the_other_leaves_one(open_data):
    workers = [open_data("main"), open_data("main")]
    for round_ in range(4):
        one, two = (
            workers[0].create_user(
                f"{who}{round_}@example.com", "!", "", "", "admin", NOW
            )
            for who in "ab"
        )
        for user in workers[0].list_users(0, 100):  # the pair: the only admins
            if user["role"] == "admin" and user["id"] not in (one["id"], two["id"]):
                workers[0].replace_user(user["id"], {**user, "role": "user"}, None, NOW)

        def either(store, n, one=one, two=two):
            if n == 0:
                return store.delete_user(one["id"])
            return store.replace_user(two["id"], {**two, "role": "user"}, None, NOW)

        outcomes = race(workers, 2, either)
        assert [isinstance(o, LastAdmin) for o in outcomes].count(True) == 1, outcomes
        assert workers[1].has_admin()


def test_two_users_taking_one_email_at_once_leave_one_with_it(open_data):
    workers = [open_data("main"), open_data("main")]
    users = [
        workers[0].create_user(f"{who}@example.com", "!", "", "", "user", NOW)
        for who in "ab"
    ]

    def take(store, n):
        wanted = {**users[n], "email": ["X@example.com", "x@EXAMPLE.com"][n]}
        return store.replace_user(users[n]["id"], wanted, None, NOW)

    outcomes = race(workers, 2, take)
    assert [isinstance(o, EmailTaken) for o in outcomes].count(True) == 1, outcomes
    emails = [user["email"].casefold() for user in workers[1].list_users(0, 10)]
    assert emails.count("x@example.com") == 1


# -- the lab's report card runs ------------------------------------------------------

RUN_ID, OTHER_RUN_ID = "0123456789abcdef" * 2, "fedcba9876543210" * 2
HOUR = 3600.0


def grade_run(
    run_id: str = RUN_ID, created: float = NOW, apart=None, starter: str = "s0"
) -> GradeRun:
    return GradeRun(run_id, 7, dict(apart or {}), starter, created, {})


def count(check: str):
    """A step that counts its requests in the check's state, and answers the count."""

    def step(run: GradeRun, state):
        done = (state or {}).get("n", 0) + 1
        return {**(state or {}), "n": done}, done

    return step


def test_a_grade_run_is_read_as_started_with_no_state(store):
    started = GradeRun(
        RUN_ID,
        2**31 - 1,
        {"gzip": "skipped", "accept": "skipped"},
        "s1",
        NOW + 0.25,
        {},
    )
    store.start_grade_run(started, lifetime=HOUR, most=100, most_each=100)
    assert store.grade_run(RUN_ID, NOW + 1, HOUR) == started
    assert store.grade_run(OTHER_RUN_ID, NOW + 1, HOUR) is None
    assert store.grade_step(OTHER_RUN_ID, "gzip", NOW, HOUR, never) is None


def test_a_grade_step_reads_and_keeps_its_check_s_state_alone(store):
    store.start_grade_run(grade_run(), lifetime=HOUR, most=100, most_each=100)
    seen = []

    def step(run, state):
        seen.append((run.id, run.seed, dict(run.states), state))
        return {"asked": True, "nested": {"list": [1, None, "é"]}}, "answer"

    assert store.grade_step(RUN_ID, "gzip", NOW, HOUR, step) == "answer"
    assert seen == [(RUN_ID, 7, {}, None)]
    assert store.grade_step(RUN_ID, "resume", NOW, HOUR, count("resume")) == 1
    assert store.grade_step(RUN_ID, "resume", NOW, HOUR, count("resume")) == 2
    assert store.grade_run(RUN_ID, NOW, HOUR).states == {
        "gzip": {"asked": True, "nested": {"list": [1, None, "é"]}},
        "resume": {"n": 2},
    }


def test_a_grade_step_that_raises_keeps_nothing(store):
    store.start_grade_run(grade_run(), lifetime=HOUR, most=100, most_each=100)
    store.grade_step(RUN_ID, "gzip", NOW, HOUR, count("gzip"))

    def broken(run, state):
        raise RuntimeError("the step failed")

    with pytest.raises(RuntimeError):
        store.grade_step(RUN_ID, "gzip", NOW, HOUR, broken)
    assert store.grade_run(RUN_ID, NOW, HOUR).states == {"gzip": {"n": 1}}


def test_a_grade_run_lives_its_lifetime_then_is_gone(store):
    store.start_grade_run(grade_run(), lifetime=HOUR, most=100, most_each=100)
    assert store.grade_run(RUN_ID, NOW + HOUR, HOUR) is not None
    assert store.grade_step(RUN_ID, "gzip", NOW + HOUR, HOUR, count("gzip")) == 1
    assert store.grade_run(RUN_ID, NOW + HOUR + 0.5, HOUR) is None
    assert store.grade_step(RUN_ID, "gzip", NOW + HOUR + 0.5, HOUR, never) is None


def test_grade_runs_beyond_the_most_wait_for_the_oldest_to_expire(store):
    store.start_grade_run(grade_run(created=NOW), lifetime=HOUR, most=2, most_each=2)
    store.start_grade_run(
        grade_run("a" * 32, NOW + 1000), lifetime=HOUR, most=2, most_each=2
    )
    with pytest.raises(GradeRunsFull) as full:
        store.start_grade_run(
            grade_run("b" * 32, NOW + 1000.5), lifetime=HOUR, most=2, most_each=2
        )
    assert full.value.retry_after == 2600  # 2599.5, rounded up
    with pytest.raises(GradeRunsFull) as full:
        store.start_grade_run(
            grade_run("b" * 32, NOW + HOUR), lifetime=HOUR, most=2, most_each=2
        )
    assert full.value.retry_after == 1  # never 0: its last second is a second
    assert store.grade_run("b" * 32, NOW + HOUR, HOUR) is None  # none was kept
    store.start_grade_run(
        grade_run("b" * 32, NOW + HOUR + 1), lifetime=HOUR, most=2, most_each=2
    )
    assert store.grade_run(RUN_ID, NOW + HOUR + 1, HOUR) is None
    assert store.grade_run("a" * 32, NOW + HOUR + 1, HOUR) is not None
    assert store.grade_run("b" * 32, NOW + HOUR + 1, HOUR) is not None


def test_a_grade_run_started_again_with_an_expired_run_s_id_starts_afresh(store):
    store.start_grade_run(grade_run(), lifetime=HOUR, most=100, most_each=100)
    store.grade_step(RUN_ID, "gzip", NOW, HOUR, count("gzip"))
    later = grade_run(created=NOW + HOUR + 1, apart={"accept": "skipped"})
    store.start_grade_run(later, lifetime=HOUR, most=100, most_each=100)
    assert store.grade_run(RUN_ID, NOW + HOUR + 1, HOUR) == later  # no state


def test_a_fresh_start_forgets_grade_runs_and_a_reset_keeps_them(store):
    store.start_grade_run(grade_run(), lifetime=HOUR, most=1, most_each=1)
    store.grade_step(RUN_ID, "gzip", NOW, HOUR, count("gzip"))
    store.reset()
    assert store.grade_run(RUN_ID, NOW, HOUR).states == {"gzip": {"n": 1}}
    store.reset(everything=True)
    assert store.grade_run(RUN_ID, NOW, HOUR) is None
    store.start_grade_run(
        grade_run(OTHER_RUN_ID), lifetime=HOUR, most=1, most_each=1
    )  # room


def test_concurrent_grade_steps_of_one_check_all_count(open_data):
    # Eight workers' requests of one check at once: each step reads the others'.
    workers = [open_data("main"), open_data("main")]
    workers[0].start_grade_run(grade_run(), lifetime=HOUR, most=100, most_each=100)

    def bump(store, n):
        return [
            store.grade_step(RUN_ID, "resume", NOW, HOUR, count("resume"))
            for _ in range(10)
        ]

    outcomes = race(workers, 8, bump)
    assert [o for o in outcomes if isinstance(o, Exception)] == [], outcomes
    answers = sorted(n for counted in outcomes for n in counted)
    assert answers == list(range(1, 81))  # each count answered once
    assert workers[1].grade_run(RUN_ID, NOW, HOUR).states == {"resume": {"n": 80}}


def test_concurrent_grade_steps_of_several_checks_lose_none(open_data):
    workers = [open_data("main"), open_data("main")]
    workers[0].start_grade_run(grade_run(), lifetime=HOUR, most=100, most_each=100)
    checks = ["gzip", "resume", "accept", "revalidate"]

    def bump(store, n):
        for _ in range(5):
            store.grade_step(RUN_ID, checks[n % 4], NOW, HOUR, count(checks[n % 4]))

    outcomes = race(workers, 8, bump)
    assert [o for o in outcomes if isinstance(o, Exception)] == [], outcomes
    states = workers[1].grade_run(RUN_ID, NOW, HOUR).states
    assert states == {check: {"n": 10} for check in checks}


def test_concurrent_grade_run_starts_never_keep_more_than_the_most(open_data):
    workers = [open_data("main"), open_data("main")]

    def start(store, n):
        run_id = f"{n:032x}"
        store.start_grade_run(grade_run(run_id), lifetime=HOUR, most=3, most_each=3)
        return run_id

    outcomes = race(workers, 8, start)
    full = [o for o in outcomes if isinstance(o, GradeRunsFull)]
    started = [o for o in outcomes if isinstance(o, str)]
    assert len(full) == 5 and len(started) == 3, outcomes
    assert all(o.retry_after == HOUR + 1 for o in full)  # over an hour old
    for run_id in started:
        assert workers[1].grade_run(run_id, NOW, HOUR) is not None


def test_a_start_that_waits_the_retry_after_it_was_given_finds_room(store):
    # The oldest run ends 2600 s after a start refused at NOW + 1000: a start that
    # many seconds later is let in.
    store.start_grade_run(grade_run(created=NOW), lifetime=HOUR, most=1, most_each=1)
    with pytest.raises(GradeRunsFull) as full:
        store.start_grade_run(
            grade_run("a" * 32, NOW + 1000), lifetime=HOUR, most=1, most_each=1
        )
    later = NOW + 1000 + full.value.retry_after
    store.start_grade_run(
        grade_run("a" * 32, later), lifetime=HOUR, most=1, most_each=1
    )
    assert store.grade_run(RUN_ID, later, HOUR) is None


def test_a_starter_holds_at_most_its_own_share_of_grade_runs(store):
    store.start_grade_run(
        grade_run("a" * 32, NOW), lifetime=HOUR, most=100, most_each=2
    )
    store.start_grade_run(
        grade_run("b" * 32, NOW + 10), lifetime=HOUR, most=100, most_each=2
    )
    with pytest.raises(GradeRunsFull) as full:
        store.start_grade_run(
            grade_run("c" * 32, NOW + 20), lifetime=HOUR, most=100, most_each=2
        )
    assert (full.value.mine, full.value.retry_after) == (True, HOUR - 20 + 1)
    # Another starter has room; the host's own count is not reached.
    other = grade_run("c" * 32, NOW + 20, starter="s9")
    store.start_grade_run(other, lifetime=HOUR, most=100, most_each=2)
    with pytest.raises(GradeRunsFull) as host:
        store.start_grade_run(
            grade_run("d" * 32, NOW + 30, starter="s8"),
            lifetime=HOUR, most=3, most_each=2,
        )  # fmt: skip
    assert host.value.mine is False
