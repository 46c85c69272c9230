"""Login failures: counted per client address and per account, reserved before the
password is checked, purged by age whatever their key."""

from __future__ import annotations

import re

import webtest

from refapi import create_app
from tests.conftest import ADMIN
from tests.helpers import FreshStartAfter, assert_error

RIGHT = {"email": ADMIN["email"], "password": ADMIN["password"]}
WRONG = {"email": ADMIN["email"], "password": "not-the-password"}


def test_one_address_cannot_lock_an_account_out(anon):
    for _ in range(5):
        anon.post_json("/api/login", WRONG, status=401)
    limited = anon.post_json("/api/login", RIGHT, status=429)
    assert_error(limited, 429, "RATE_LIMITED")
    # The account has five failures of its fifty: from elsewhere, it logs in.
    elsewhere = {"REMOTE_ADDR": "192.0.2.77"}
    anon.post_json("/api/login", RIGHT, extra_environ=elsewhere, status=200)


def test_a_refused_login_is_not_counted_and_waits_from_the_first_failure(anon, clock):
    for _ in range(5):
        anon.post_json("/api/login", WRONG, status=401)
        clock.advance(10)
    refused = anon.post_json("/api/login", RIGHT, status=429)
    assert refused.headers["Retry-After"] == "10"  # the first failure was 50 s ago
    clock.advance(10)
    anon.post_json("/api/login", RIGHT, status=200)


def test_a_login_the_count_refuses_keeps_its_default_token(anon):
    # The count's 429 is no bucket's: its default token stays spent, since the
    # default bucket bounds how many one address asks for (docs/rate-limits.md).
    def default_left(response):
        [(name, level)] = re.findall(r'("\w+");r=(\d+)', response.headers["RateLimit"])
        assert name == '"default"'  # the one bucket it passed
        return int(level)

    for _ in range(5):
        anon.post_json("/api/login", WRONG, status=401)
    first = default_left(anon.post_json("/api/login", RIGHT, status=429))
    assert default_left(anon.post_json("/api/login", RIGHT, status=429)) == first - 1


def test_a_right_password_takes_its_attempt_back(anon):
    for _ in range(4):
        anon.post_json("/api/login", WRONG, status=401)
    for _ in range(3):  # each reserves the fifth attempt, then releases it
        anon.post_json("/api/login", RIGHT, status=200)
    anon.post_json("/api/login", WRONG, status=401)
    anon.post_json("/api/login", RIGHT, status=429)


def test_an_ipv6_client_counts_its_failures_by_its_64(anon):
    for n in range(5):
        hop = {"REMOTE_ADDR": f"2001:db8:7:7::{n + 1}"}
        body = {"email": f"guess{n}@example.com", "password": "x"}
        anon.post_json("/api/login", body, extra_environ=hop, status=401)
    hop = {"REMOTE_ADDR": "2001:db8:7:7:ffff::1"}
    anon.post_json("/api/login", RIGHT, extra_environ=hop, status=429)
    anon.post_json(
        "/api/login", RIGHT, extra_environ={"REMOTE_ADDR": "2001:db8:7:8::1"}
    )


def test_one_ipv6_48_adds_at_most_the_address_limit_to_an_account(anon):
    """A customer may hold a whole /48, 65,536 /64s: each /64 counts alone toward
    the address limit, but the /48 adds at most five failures to the account's
    fifty, and is refused that account once it has."""
    for net in range(12):  # sixty wrong passwords, which locked the account before
        hop = {"REMOTE_ADDR": f"2001:db8:cafe:{net:x}::1"}
        for _ in range(5):
            status = 401 if net == 0 else 429
            anon.post_json("/api/login", WRONG, extra_environ=hop, status=status)
    # Its /64s are not limited for other accounts, and the account has five
    # failures of its fifty: from another /48, it logs in.
    guess = {"email": "nobody@example.com", "password": "x"}
    anon.post_json("/api/login", guess, extra_environ=hop, status=401)
    elsewhere = {"REMOTE_ADDR": "2001:db8:beef::1"}
    anon.post_json("/api/login", RIGHT, extra_environ=elsewhere, status=200)


def test_failures_from_ten_ipv6_48s_still_lock_an_account(anon):
    for net in range(10):
        hop = {"REMOTE_ADDR": f"2001:db8:{net:x}::1"}
        for _ in range(5):
            anon.post_json("/api/login", WRONG, extra_environ=hop, status=401)
    elsewhere = {"REMOTE_ADDR": "2001:db8:ffff::1"}
    anon.post_json("/api/login", RIGHT, extra_environ=elsewhere, status=429)


def test_a_login_email_with_a_trailing_newline_is_400(anon):
    body = {**RIGHT, "email": ADMIN["email"] + "\n"}
    response = anon.post_json("/api/login", body, status=400)
    assert_error(response, 400, "VALIDATION_ERROR")
    assert response.json["details"]["errors"][0]["field"] == "/email"


def test_a_login_racing_a_fresh_start_is_401_not_500(config, store, clock):
    # The user is gone before its token is stored: the insert's foreign key
    # refuses it, which is the wrong password's answer, not an internal error.
    ada = {"email": "ada@example.com", "password": "correct-horse-battery-9"}
    webtest.TestApp(create_app(config, store=store, clock=clock)).post_json(
        "/api/users", ada, status=201
    )
    resetting = config.open_store()
    try:
        racing = FreshStartAfter("user_login", store, resetting)
        app = webtest.TestApp(create_app(config, store=racing, clock=clock))
        refused = app.post_json("/api/login", ada, status=401)
        assert_error(refused, 401, "INVALID_CREDENTIALS")
        assert store.user_login(ada["email"]) is None  # the fresh start went through
    finally:
        resetting.close()
