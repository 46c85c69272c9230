"""Two hosts, one PostgreSQL database: the promises made "by all hosts" hold.

Two gunicorn instances (two workers each, on two ports) serve one schema of the
tests' server, as two machines behind a load balancer would. ``simultaneous`` hands
the requests to the hosts in turn, so each host gets half of every burst and both
its workers take a share. Each test is built so that hosts
keeping their own state would fail it: every burst gives each host alone more than
the limit it must hold together.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator

import psycopg
import pytest

from tests.conftest import ADMIN
from tests.e2e.harness import (
    GunicornServer,
    raw_request,
    simultaneous,
    workers_that_answered,
)
from tests.postgres import fresh_schema

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.postgres]

JSON_HEADERS = {"Content-Type": "application/json"}
PAYMENT = json.dumps({"amount": 19.99, "currency": "EUR"}).encode()


@pytest.fixture
def schema_url() -> Iterator[str]:
    with fresh_schema("hosts") as url:
        yield url


@pytest.fixture
def two_hosts(schema_url, gunicorn) -> Callable[..., list[GunicornServer]]:
    """A factory: two hosts of two workers on the test's schema, with ``env``.
    (The schema is made before the hosts start and dropped after they stop.)"""

    def start(env: dict[str, str] | None = None) -> list[GunicornServer]:
        return [
            gunicorn(workers=2, database_url=schema_url, env=env or {})
            for _ in range(2)
        ]

    return start


def assert_both_workers_of_both_hosts_answered(hosts, path: str) -> None:
    for host in hosts:
        assert len(workers_that_answered(host, path)) == host.workers, path
        assert host.log_failures() == []


def test_fifty_posts_with_one_key_over_two_hosts_make_one_payment(
    two_hosts, schema_url, pool
):
    hosts = two_hosts()
    request = raw_request(
        "POST", "/v1/payments", {**JSON_HEADERS, "Idempotency-Key": "one-key"}, PAYMENT
    )
    answers = simultaneous(hosts, [request] * 50)  # each host as its own admin login

    assert {a.status for a in answers} <= {201, 409}, Counter(a.status for a in answers)
    created = [a for a in answers if a.status == 201]
    assert len({a.body for a in created}) == 1  # replays are byte for byte
    replayed = sorted(str(a.getheader("Idempotent-Replayed")) for a in created)
    assert replayed == ["None"] + ["true"] * (len(created) - 1)
    for answer in answers:
        if answer.status == 409:
            assert json.loads(answer.body)["code"] == "IDEMPOTENCY_KEY_IN_USE"
            assert int(answer.getheader("Retry-After")) >= 1
    payment = json.loads(created[0].body)
    for host in hosts:
        found = pool.request("GET", host.url(f"/v1/payments/{payment['id']}"))
        assert found.status == 200 and found.json() == payment
    with psycopg.connect(schema_url) as conn:
        assert conn.execute("SELECT count(*) FROM payments").fetchone() == (1,)
    assert_both_workers_of_both_hosts_answered(hosts, "/v1/payments")


def test_posts_with_one_key_over_two_hosts_make_one_article(two_hosts, schema_url):
    # An article's key is a row of its own, claimed in the create's transaction.
    hosts = two_hosts()
    body = json.dumps({"title": "Once"}).encode()
    keyed = {**JSON_HEADERS, "Idempotency-Key": "one-key"}
    answers = simultaneous(
        hosts, [raw_request("POST", "/v1/articles", keyed, body)] * 20
    )

    assert {a.status for a in answers} <= {201, 409}, Counter(a.status for a in answers)
    created = [a for a in answers if a.status == 201]
    assert len({(a.body, a.getheader("Location")) for a in created}) == 1
    replayed = sorted(str(a.getheader("Idempotent-Replayed")) for a in created)
    assert replayed == ["None"] + ["true"] * (len(created) - 1)
    with psycopg.connect(schema_url) as conn:
        assert conn.execute("SELECT count(*) FROM articles").fetchone() == (1,)
    assert_both_workers_of_both_hosts_answered(hosts, "/v1/articles")


def test_a_burst_over_two_hosts_gets_one_bucket(two_hosts):
    capacity = 10
    # A token comes back every 1000 s: none during the test.
    limited = {"REFAPI_RATE_LIMIT_CAPACITY": str(capacity),
               "REFAPI_RATE_LIMIT_REFILL": "0.001"}  # fmt: skip
    hosts = two_hosts(limited)
    # Readiness used /healthz, which is exempt: the address's bucket is full. Each
    # host gets 15, more than the capacity: two buckets would pass 20.
    request = raw_request("GET", "/v1/todos/1")
    answers = simultaneous(hosts, [request] * 30, admin=False)

    assert Counter(a.status for a in answers) == {200: capacity, 429: 20}
    for answer in answers:
        assert answer.getheader("RateLimit-Policy") == f'"default";q={capacity};w=10000'
        if answer.status == 429:
            assert json.loads(answer.body)["code"] == "RATE_LIMITED"
            assert int(answer.getheader("Retry-After")) >= 1
    assert_both_workers_of_both_hosts_answered(hosts, "/v1/todos/1")


def test_an_article_made_on_one_host_is_read_changed_and_deleted_on_the_other(
    two_hosts, pool
):
    one, other = two_hosts()
    made = pool.request("POST", one.url("/v1/articles"), json={"title": "Across"})
    assert made.status == 201, made.data
    path = made.headers["Location"]

    read = pool.request("GET", other.url(path))
    assert read.status == 200 and read.json() == made.json()
    first_tag = read.headers["ETag"]
    patched = pool.request(
        "PATCH", other.url(path), json={"title": "Patched"},
        headers={"If-Match": first_tag},
    )  # fmt: skip
    assert patched.status == 200, patched.data

    # The first host sees the other's change: the tag it was given is stale.
    seen = pool.request("GET", one.url(path))
    assert seen.json() == patched.json()
    current_tag = seen.headers["ETag"]
    assert current_tag != first_tag
    stale = pool.request(
        "PATCH", one.url(path), json={"title": "Lost update"},
        headers={"If-Match": first_tag},
    )  # fmt: skip
    assert stale.status == 412
    assert stale.json()["code"] == "PRECONDITION_FAILED"
    assert stale.json()["details"] == {"etag": current_tag}
    assert pool.request("GET", one.url(path)).json()["title"] == "Patched"

    deleted = pool.request("DELETE", other.url(path), headers={"If-Match": current_tag})
    assert deleted.status == 204
    assert pool.request("GET", one.url(path)).status == 404
    assert pool.request("DELETE", one.url(path)).status == 404
    for host in (one, other):
        assert host.log_failures() == []


def login(anon_pool, host: GunicornServer) -> dict:
    """A login on ``host``: its token, session cookie and CSRF token."""
    answer = anon_pool.request("POST", host.url("/api/login"), json=ADMIN)
    assert answer.status == 200, answer.data
    cookie = answer.headers["Set-Cookie"].split(";")[0]
    assert cookie.startswith("refapi_session=")
    body = answer.json()
    return {"bearer": f"Bearer {body['token']}", "cookie": cookie,
            "csrf": body["csrfToken"],
            "user": f"/api/users/{body['user']['id']}"}  # fmt: skip


def test_a_cursor_token_session_and_api_key_from_one_host_work_on_the_other(
    two_hosts, anon_pool
):
    one, other = two_hosts()

    # A cursor, signed with the secret key the database keeps.
    first = anon_pool.request("GET", one.url("/v1/items?limit=2"))
    following = f"/v1/items?limit=2&cursor={first.json()['nextCursor']}"
    there = anon_pool.request("GET", other.url(following))
    assert there.status == 200, there.data
    assert [item["id"] for item in there.json()["data"]] == [3, 4]
    assert there.data == anon_pool.request("GET", one.url(following)).data

    # A Bearer token and a session (its CSRF token is an HMAC under that key too).
    # The admin by its own id: the two hosts' first starts race to make it, and a
    # losing insert may have drawn id 1 (docs/several-hosts.md, "The first admin").
    issued = login(anon_pool, one)
    admin = issued["user"]
    bearer = {"Authorization": issued["bearer"]}
    assert anon_pool.request("GET", other.url(admin), headers=bearer).status == 200
    session = anon_pool.request(
        "GET", other.url("/api/session"), headers={"Cookie": issued["cookie"]}
    )
    assert session.status == 200, session.data
    assert session.json()["user"]["email"] == ADMIN["email"]
    by_cookie = anon_pool.request(
        "POST", other.url("/v1/articles"), json={"title": "By cookie"},
        headers={"Cookie": issued["cookie"], "X-CSRF-Token": issued["csrf"]},
    )  # fmt: skip
    assert by_cookie.status == 201, by_cookie.data

    # An API key made on one host, used and then revoked on the other.
    made = anon_pool.request(
        "POST", one.url("/api/keys"), json={"name": "job"}, headers=bearer
    )
    assert made.status == 201, made.data
    key = {"X-API-Key": made.json()["key"]}
    assert anon_pool.request("GET", other.url(admin), headers=key).status == 200
    revoked = anon_pool.request(
        "DELETE", other.url(made.headers["Location"]), headers=bearer
    )
    assert revoked.status == 204
    assert anon_pool.request("GET", one.url(admin), headers=key).status == 401

    # A logout on the other host ends the login on the first.
    assert (
        anon_pool.request("POST", other.url("/api/logout"), headers=bearer).status
        == 204
    )
    assert anon_pool.request("GET", one.url(admin), headers=bearer).status == 401
    gone = anon_pool.request(
        "GET", one.url("/api/session"), headers={"Cookie": issued["cookie"]}
    )
    assert gone.status == 401
    for host in (one, other):
        assert host.log_failures() == []


def test_wrong_passwords_spread_over_two_hosts_get_five_tries_in_all(two_hosts):
    # A hash slow enough (tens of ms) that guesses checked before their failures
    # were counted would pile up past the limit.
    hosts = two_hosts({"REFAPI_PASSWORD_HASH": "pbkdf2:sha256:100000"})
    wrong = json.dumps({"email": ADMIN["email"], "password": "a-wrong-guess"})
    guess = raw_request("POST", "/api/login", JSON_HEADERS, wrong.encode())
    answers = simultaneous(hosts, [guess] * 40, admin=False)  # 20 a host

    assert Counter(a.status for a in answers) == {401: 5, 429: 35}
    for answer in answers:
        code = json.loads(answer.body)["code"]
        assert code == {401: "INVALID_CREDENTIALS", 429: "RATE_LIMITED"}[answer.status]
    # Past the limit, the right password too is refused, on both hosts.
    right = raw_request("POST", "/api/login", JSON_HEADERS, json.dumps(ADMIN).encode())
    assert [a.status for a in simultaneous(hosts, [right] * 2, admin=False)] == [
        429
    ] * 2
    assert_both_workers_of_both_hosts_answered(hosts, "/api/login")
