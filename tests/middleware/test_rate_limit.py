"""The token bucket in the middleware stack (middleware/rate_limit/), driven by
the injected clock; and the layer alone and in another order."""

from __future__ import annotations

import fcntl
import os
import shutil
import time

import pytest
import webtest
from werkzeug.test import Client

from refapi import create_app
from refapi.middleware import Authenticate, RequestId
from refapi.middleware.rate_limit import RateLimit
from refapi.middleware.rate_limit.policy import Policy, RateLimits
from refapi.storage.sqlite import SqliteStore
from refapi.storage.sqlite.bucket_table import PROBES, SLOTS
from refapi.storage.sqlite.buckets import SharedBuckets, SqliteBuckets
from refapi.web.environ import BUCKET_KEY
from tests.conftest import ADMIN, bearer
from tests.helpers import assert_error
from tests.middleware.alone import (
    bare,
    client,
    limit,
)

# On both backends: the buckets are the database's.
pytestmark = pytest.mark.every_backend

USER = {"email": "ada@example.com", "firstName": "Ada", "lastName": "L"}


@pytest.fixture
def limited(make_app):
    # Anonymous: the bucket is the client address's.
    return make_app(anonymous=True, rate_limit_capacity=3, rate_limit_refill=0.5)


def test_capacity_requests_pass_then_429(limited):
    remaining = [limited.get("/v1/todos/1").headers["RateLimit"] for _ in range(3)]
    assert remaining == [
        '"default";r=2;t=0',
        '"default";r=1;t=0',
        '"default";r=0;t=2',
    ]
    refused = limited.get("/v1/todos/1", status=429)
    assert refused.json == {
        "code": "RATE_LIMITED",
        "message": refused.json["message"],
        "details": {"retry_after": 2},
    }
    assert refused.headers["Retry-After"] == "2"
    assert refused.headers["RateLimit-Policy"] == '"default";q=3;w=6'
    assert refused.headers["RateLimit"] == '"default";r=0;t=2'


# Moves the app's clock to refill a bucket: SQLite's buckets follow it, PostgreSQL's
# the database's clock (one clock for every host), which no test can move.
@pytest.mark.sqlite_only
def test_refill_follows_the_clock_and_refusals_take_nothing(limited, clock):
    for _ in range(3):
        limited.get("/v1/todos/1")
    for _ in range(5):  # refused requests must not push the wait further out
        limited.get("/v1/todos/1", status=429)
    clock.advance(1.9)
    assert limited.get("/v1/todos/1", status=429).headers["Retry-After"] == "1"
    clock.advance(0.1)
    assert limited.get("/v1/todos/1").headers["RateLimit"] == '"default";r=0;t=2'


def test_retry_after_rounds_up_to_whole_seconds(make_app, clock):
    app = make_app(rate_limit_capacity=1, rate_limit_refill=0.4)
    app.get("/v1/todos/1")
    assert app.get("/v1/todos/1", status=429).headers["Retry-After"] == "3"


def test_even_404_and_405_count(limited):
    limited.get("/nope", status=404)
    limited.post("/v1/todos/1", status=405)
    limited.get("/v1/todos/1")
    assert limited.get("/v1/todos/1", status=429).json["code"] == "RATE_LIMITED"


def test_callers_have_their_own_buckets(limited):
    for _ in range(3):
        limited.get("/v1/todos/1")
    limited.get("/v1/todos/1", status=429)
    other = limited.get("/v1/todos/1", extra_environ={"REMOTE_ADDR": "10.0.0.2"})
    assert other.headers["RateLimit"] == '"default";r=2;t=0'


def test_the_bucket_is_the_principals_whatever_its_token_or_address(make_app):
    app = make_app(anonymous=True, rate_limit_capacity=4, rate_limit_refill=0.01)
    first = bearer(app, ADMIN["email"], ADMIN["password"])  # the address's token
    app.get("/v1/todos/1", extra_environ=first)
    # A fresh login (from another address) buys no fresh bucket: both are the admin.
    second = bearer(app, ADMIN["email"], ADMIN["password"])
    second["REMOTE_ADDR"] = "10.0.0.9"
    response = app.get("/v1/todos/1", extra_environ=second)
    assert response.headers["RateLimit"] == '"default";r=2;t=0'
    for _ in range(2):
        app.get("/v1/todos/1", extra_environ=first)
    app.get("/v1/todos/1", extra_environ=second, status=429)


def test_an_invalid_token_is_limited_as_its_address(make_app):
    app = make_app(anonymous=True, rate_limit_capacity=2, rate_limit_refill=0.01)
    bad = {"HTTP_AUTHORIZATION": "Bearer forged"}
    for _ in range(2):
        app.get("/v1/todos/1", extra_environ=bad, status=401)
    app.get("/v1/todos/1", status=429)  # the same address, no token: one bucket


@pytest.mark.parametrize("path", ["/healthz"])
def test_health_check_is_exempt_and_unmarked(make_app, path):
    app = make_app(rate_limit_capacity=1)
    for _ in range(5):
        response = app.get(path)
        assert "RateLimit" not in response.headers
        assert "RateLimit-Policy" not in response.headers


def test_preflight_is_exempt(make_app):
    app = make_app(rate_limit_capacity=1)
    preflight = {"Origin": "https://x.example", "Access-Control-Request-Method": "POST"}
    for _ in range(5):
        response = app.options("/v1/articles", headers=preflight, status=204)
        assert "RateLimit" not in response.headers
    app.get("/v1/todos/1")


def test_429_is_readable_cross_origin(make_app):
    app = make_app(rate_limit_capacity=1)
    app.get("/v1/todos/1")
    refused = app.get(
        "/v1/todos/1", headers={"Origin": "https://x.example"}, status=429
    )
    assert refused.headers["Access-Control-Allow-Origin"] == "*"
    assert "Retry-After" in refused.headers["Access-Control-Expose-Headers"]


@pytest.mark.sqlite_only
def test_sqlite_an_unusable_bucket_file_is_503_and_named_by_health(
    make_app, store, clock
):
    app = make_app()
    app.get("/v1/todos/1", status=200)
    path = store.path + ".buckets"
    os.unlink(path)
    os.mkdir(path)  # a directory in the way: nothing can be mapped there

    health = app.get("/healthz", status=503)
    assert health.json["status"] == "unavailable"
    assert health.json["checks"] == {"storage": "ok", "rateLimit": "unavailable"}
    assert health.headers["Retry-After"].isdigit()
    clock.advance(1)  # the path is looked at again at most once a second
    refused = app.get("/v1/todos/1", status=503)
    assert_error(refused, 503, "UNAVAILABLE")  # fail closed, as health says

    os.rmdir(path)
    assert app.get("/healthz", status=200).json["checks"]["rateLimit"] == "ok"
    app.get("/v1/todos/1", status=200)


# -- the buckets of what hashes a password -------------------------------------------

WRONG_LOGIN = {"email": ADMIN["email"], "password": "not-the-password"}


# Counts the default bucket (10 tokens a second) to the token: SQLite's follows the
# app's clock; PostgreSQL's the database's, which runs on between two requests (on a
# loaded machine, past a token).
@pytest.mark.sqlite_only
def test_a_login_passes_the_auth_bucket_of_its_address_before_the_default(make_app):
    app = make_app(anonymous=True, auth_rate_limit=2, login_max_failures=100)
    for remaining in (1, 0):
        response = app.post_json("/api/login", WRONG_LOGIN, status=401)
        assert response.headers["RateLimit-Policy"] == (
            '"default";q=100;w=10, "auth";q=2;w=60'
        )
        default = 99 - (1 - remaining)
        wait = 0 if remaining else 30
        assert response.headers["RateLimit"] == (
            f'"default";r={default};t=0, "auth";r={remaining};t={wait}'
        )
    refused = app.post_json("/api/login", WRONG_LOGIN, status=429)
    assert refused.json["details"] == {"retry_after": 30}  # 1 token at 2 a minute
    assert refused.headers["Retry-After"] == "30"
    assert refused.headers["RateLimit"] == '"default";r=98;t=0, "auth";r=0;t=30'
    # The refused login took no token from the default bucket, and other routes
    # list only the default one.
    other = app.get("/v1/todos/1")
    assert other.headers["RateLimit-Policy"] == '"default";q=100;w=10'
    assert other.headers["RateLimit"] == '"default";r=97;t=0'
    # Another address has its own bucket, even for the same account.
    app.post_json(
        "/api/login", WRONG_LOGIN, extra_environ={"REMOTE_ADDR": "10.9.9.9"}, status=401
    )


def test_the_auth_policy_names_its_window_whatever_its_quota(make_app):
    # 11 a minute: 11 / (11 / 60) is not 60 in floating point.
    app = make_app(anonymous=True, auth_rate_limit=11)
    response = app.post_json("/api/login", WRONG_LOGIN, status=401)
    assert response.headers["RateLimit-Policy"].endswith('"auth";q=11;w=60')


# Moves the app's clock to refill a bucket: SQLite's buckets follow it, PostgreSQL's
# the database's clock (one clock for every host), which no test can move.
@pytest.mark.sqlite_only
def test_a_full_default_bucket_takes_no_auth_token(make_app, clock):
    app = make_app(anonymous=True, auth_rate_limit=1, rate_limit_capacity=1)
    app.get("/v1/todos/1")
    refused = app.post_json("/api/login", WRONG_LOGIN, status=429)
    assert refused.headers["RateLimit"] == '"default";r=0;t=1'  # auth not reached
    clock.advance(1)
    app.post_json("/api/login", WRONG_LOGIN, status=401)  # its auth token was there


def test_logins_the_failure_count_refuses_spend_no_auth_token(make_app, clock):
    # Five failures, then refusals: had each refusal spent an "auth" token, the
    # drained bucket would answer next with its own short wait, and a client
    # waiting as told would be refused again by the count.
    app = make_app(anonymous=True, login_max_failures=5, auth_rate_limit=10)
    for _ in range(5):
        app.post_json("/api/login", WRONG_LOGIN, status=401)
    waits = []
    for _ in range(10):
        refused = app.post_json("/api/login", WRONG_LOGIN, status=429)
        waits.append(int(refused.headers["Retry-After"]))
        clock.advance(1)
    assert waits == list(range(60, 50, -1))  # the count's minute, counting down
    clock.advance(waits[-1])  # as told: the count lets a login through now
    app.post_json("/api/login", WRONG_LOGIN, status=401)


def test_registration_passes_the_register_bucket_taken_emails_included(make_app):
    app = make_app(anonymous=True, register_rate_limit=2)
    body = {"email": "ada@example.com", "password": "ada-password"}
    created = app.post_json("/api/users", body, status=201)
    assert created.headers["RateLimit-Policy"] == (
        '"default";q=100;w=10, "register";q=2;w=3600'
    )
    app.post_json("/api/users", body, status=409)  # asking costs a token too
    refused = app.post_json(
        "/api/users", {**body, "email": "b@example.com"}, status=429
    )
    assert refused.json["details"] == {"retry_after": 1800}
    app.post_json(
        "/api/users", body, extra_environ={"REMOTE_ADDR": "10.9.9.9"}, status=409
    )


# Counts the default bucket (10 tokens a second) to the token: SQLite's follows the
# app's clock; PostgreSQL's the database's, which runs on between two requests (on a
# loaded machine, past a token).
@pytest.mark.sqlite_only
def test_a_password_change_passes_the_auth_bucket_and_a_profile_edit_does_not(make_app):
    app = make_app(anonymous=True, auth_rate_limit=1)
    # The login spends this address's one auth token; the PUTs come from another.
    token = bearer(app, ADMIN["email"], ADMIN["password"])
    token["REMOTE_ADDR"] = "10.9.9.9"
    path, profile = (
        "/api/users/1",
        {"email": ADMIN["email"], "firstName": "A", "lastName": ""},
    )
    edited = app.put_json(path, profile, extra_environ=token)
    assert edited.headers["RateLimit-Policy"] == '"default";q=100;w=10'
    change = {
        **profile,
        "password": "another-password",
        "currentPassword": ADMIN["password"],
    }
    changed = app.put_json(path, change, extra_environ=token)
    assert (
        changed.headers["RateLimit-Policy"] == '"default";q=100;w=10, "auth";q=1;w=60'
    )
    assert changed.headers["RateLimit"] == '"default";r=98;t=0, "auth";r=0;t=60'
    again = {**change, "currentPassword": "another-password"}
    refused = app.put_json(path, again, extra_environ=token, status=429)
    # Refused by the auth bucket: the default one got its token back.
    assert refused.headers["RateLimit"] == '"default";r=98;t=0, "auth";r=0;t=60'
    assert app.get("/v1/todos/1", extra_environ=token).headers["RateLimit"] == (
        '"default";r=97;t=0'
    )


@pytest.mark.sqlite_only  # counts the default bucket to the token, as above
def test_a_strangers_password_change_is_403_before_the_auth_bucket(make_app):
    # Authorization comes before the body (docs/rate-limits.md): someone else's
    # record is refused before the handler could tell a password is in it, and
    # nothing is hashed; a wrong currentPassword is hashed, and costs a token.
    app = make_app(anonymous=True, auth_rate_limit=2)
    app.post_json("/api/users", {**USER, "password": "a-long-password"}, status=201)
    user = bearer(app, USER["email"], "a-long-password")
    user["REMOTE_ADDR"] = "10.9.9.8"
    change = {"email": ADMIN["email"], "firstName": "", "lastName": "",
              "password": "another-password"}  # fmt: skip
    refused = app.put_json("/api/users/1", change, extra_environ=user, status=403)
    assert refused.headers["RateLimit-Policy"] == '"default";q=100;w=10'
    own = {"email": USER["email"], "firstName": "", "lastName": "",
           "password": "another-password", "currentPassword": "not-it"}  # fmt: skip
    wrong = app.put_json("/api/users/2", own, extra_environ=user, status=403)
    assert wrong.headers["RateLimit"] == '"default";r=98;t=0, "auth";r=1;t=0'


# -- an IPv6 client counts by its /64 ------------------------------------------------


def test_an_ipv6_client_counts_by_its_64(make_app):
    app = make_app(anonymous=True, rate_limit_capacity=2, rate_limit_refill=0.01)
    for address in ("2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:9"):
        app.get("/v1/todos/1", extra_environ={"REMOTE_ADDR": address})
    app.get("/v1/todos/1", extra_environ={"REMOTE_ADDR": "2001:db8:1:2::7"}, status=429)
    app.get("/v1/todos/1", extra_environ={"REMOTE_ADDR": "2001:db8:1:3::1"})


def test_an_ipv6_client_passes_the_auth_bucket_by_its_64(make_app):
    app = make_app(anonymous=True, auth_rate_limit=1)
    hop = {"REMOTE_ADDR": "2001:db8:1:2::1"}
    app.post_json("/api/login", WRONG_LOGIN, extra_environ=hop, status=401)
    hop = {"REMOTE_ADDR": "2001:db8:1:2::2"}
    app.post_json("/api/login", WRONG_LOGIN, extra_environ=hop, status=429)


@pytest.mark.sqlite_only
def test_sqlite_colliding_addresses_never_refill_a_register_bucket(
    make_app, store, clock
):
    """The collision attack (docs/rate-limits.md, "The bucket table"): GETs from
    the /64s of the attacker's own /48 whose keys probe the slot of its drained
    "register" bucket push that bucket out of the table; once their own buckets
    have refilled, it must come back empty, not full. The test knows the table's
    secret key, as an attacker who guessed it would."""
    # One secret, not the store's random one: about 32 of the /48's /64s collide
    # on average, and a key that leaves 16 or fewer (1 in 500) would fail the
    # attack's precondition below rather than the defence.
    store.buckets.shared.secret = lambda: b"the secret the attacker guessed"
    app = make_app(anonymous=True, register_rate_limit=2)
    home = {"REMOTE_ADDR": "2001:db8:cafe:1::1"}
    sent = iter(range(100))

    def register(status: int) -> None:
        body = {"email": f"u{next(sent)}@example.com", "password": "a-password-1"}
        app.post_json("/api/users", body, extra_environ=home, status=status)

    register(201), register(201), register(429)
    place = store.buckets.shared._digest  # the key's digest and first probe
    drained = place("register:addr:2001:db8:cafe:1::/64")[1] % SLOTS
    # Every /64 of the /48 whose window of probes holds the drained slot.
    flood = [
        f"2001:db8:cafe:{n:x}::1"
        for n in range(2, 65536)
        if (drained - place(f"addr:2001:db8:cafe:{n:x}::/64")[1]) % SLOTS < PROBES
    ]
    assert len(flood) > 2 * PROBES
    clock.advance(1)  # the flood is newer than the drained bucket
    for address in flood:  # the later ones, finding no free slot, start empty
        app.get("/v1/todos/1", extra_environ={"REMOTE_ADDR": address}, status="*")
    clock.advance(60)  # the flood's own buckets are full again, their slots free
    register(429)


def test_the_layer_works_alone_keyed_on_the_address(tmp_path):
    """Without Authenticate, RequestId or Errors around it: no caller, no header
    list, nothing to render its refusals."""
    shared = SharedBuckets(str(tmp_path / "buckets"), lambda: b"test-secret")

    def hello(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"hello"]

    app = RateLimit(
        hello,
        limits=RateLimits(
            buckets=SqliteBuckets(shared), capacity=2, refill=1e-6, clock=lambda: 100.0,
            policies=(Policy.per("auth", 1, 60),),
        ),
        routes={("POST", "/login"): ("auth",)},
    )  # fmt: skip
    client = Client(app)
    one, two = {"REMOTE_ADDR": "192.0.2.1"}, {"REMOTE_ADDR": "192.0.2.2"}
    assert client.post("/login", environ_base=one).status_code == 200
    # The address's auth bucket is empty: the layer answers its own 429.
    assert client.post("/login", environ_base=one).status_code == 429
    assert client.get("/", environ_base=one).status_code == 200  # a default token left
    refused = client.get("/", environ_base=one)
    assert refused.status_code == 429
    assert refused.headers["RateLimit"] == '"default";r=0;t=1000000'
    assert client.get("/", environ_base=two).status_code == 200


@pytest.mark.sqlite_only
def test_sqlite_a_bucket_file_locked_by_another_is_503_in_time_not_a_hang(
    config, store, tmp_path
):
    """Anything holding the file's lock (a stopped worker, an operator's tool) makes
    takes wait at most the store's lock wait, then 503, as health says; once it is
    let go, every request is served again."""
    path = str(tmp_path / "locked.db")
    shutil.copy(store.path, path)
    waiting = SqliteStore(path, busy_timeout_s=0.3)
    app = webtest.TestApp(create_app(config, store=waiting))
    app.get("/v1/todos/1", status=200)
    held = os.open(path + ".buckets", os.O_RDWR)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        began = time.monotonic()
        assert_error(app.get("/v1/todos/1", status=503), 503, "UNAVAILABLE")
        health = app.get("/healthz", status=503)
        assert health.json["checks"] == {"storage": "ok", "rateLimit": "unavailable"}
        assert time.monotonic() - began < 2
    finally:
        os.close(held)
    app.get("/v1/todos/1", status=200)
    assert app.get("/healthz", status=200).json["checks"]["rateLimit"] == "ok"
    waiting.close()


# -- alone, and in another order than app.py's (tests/middleware/alone.py) ----------


# Moves the app's clock to refill a bucket: SQLite's buckets follow it, PostgreSQL's
# the database's clock (one clock for every host), which no test can move.
@pytest.mark.sqlite_only
def test_rate_limit_alone_keys_on_the_address_and_refuses_when_empty(store, clock):
    app = client(limit(bare, store, clock))
    answers = [app.get("/") for _ in range(3)]
    assert [a.headers["RateLimit"] for a in answers] == [
        '"default";r=2;t=0',
        '"default";r=1;t=0',
        '"default";r=0;t=2',
    ]
    assert answers[0].headers["RateLimit-Policy"] == '"default";q=3;w=6'
    assert answers[0].json[BUCKET_KEY] is None  # it reads no caller it was not given
    refused = app.get("/", status=429)
    assert_error(refused, 429, "RATE_LIMITED")
    assert refused.headers["Retry-After"] == "2"
    assert refused.json["details"] == {"retry_after": 2}
    assert refused.headers["RateLimit"] == '"default";r=0;t=2'
    other = app.get("/", extra_environ={"REMOTE_ADDR": "192.0.2.77"})
    assert other.headers["RateLimit"] == '"default";r=2;t=0'
    clock.advance(2)
    assert app.get("/").headers["RateLimit"] == '"default";r=0;t=2'


def test_rate_limit_alone_passes_its_address_buckets(store, clock):
    app = client(
        limit(
            bare,
            store,
            clock,
            policies=(Policy.per("auth", 1, 60),),
            routes={("POST", "/login"): ("auth",)},
        )
    )
    passed = app.post("/login")
    assert passed.headers["RateLimit-Policy"] == '"default";q=3;w=6, "auth";q=1;w=60'
    refused = app.post("/login", status=429)
    assert refused.headers["RateLimit"] == '"default";r=2;t=0, "auth";r=0;t=60'
    assert app.get("/").headers["RateLimit"] == '"default";r=1;t=0'


def test_rate_limit_outside_request_id_adds_to_the_same_answer(store, clock):
    app = client(limit(RequestId(bare), store, clock, capacity=1))
    assert app.get("/").headers["X-Request-Id"]
    refused = app.get("/", headers={"X-Request-Id": "r4"}, status=429)
    assert refused.headers["RateLimit"] == '"default";r=0;t=2'
    # Refused before RequestId was reached: the id is not this layer's to give.
    assert "X-Request-Id" not in refused.headers


def test_rate_limit_outside_authenticate_counts_every_request_by_address(
    store, clock, token
):
    app = client(
        limit(Authenticate(bare, store=store, clock=clock), store, clock, capacity=2)
    )
    app.get("/", extra_environ=token)
    app.get("/")
    app.get("/", extra_environ=token, status=429)  # the address's bucket: empty


def test_a_policys_field_is_kept_by_whole_level_never_below_a_token():
    """What ``pass_default`` writes for the bucket alone is made once a whole level
    (policy.py, ``Policy.left``): the same text as made fresh, a level under one
    token never kept (its wait changes), and at most 1,024 kept."""
    policy = Policy.per("default", 100, 10)
    assert policy.field(99.5) == ("RateLimit", '"default";r=99;t=0')
    assert policy.left == {99: ("RateLimit", '"default";r=99;t=0')}
    assert policy.field(0.5) == ("RateLimit", '"default";r=0;t=1')
    assert policy.field(0.9) == ("RateLimit", '"default";r=0;t=1')
    assert 0 not in policy.left
    for level in range(1, 1_500):
        assert policy.field(level + 0.25)[1] == f'"default";r={level};t=0'
    assert 0 < len(policy.left) <= 1024
