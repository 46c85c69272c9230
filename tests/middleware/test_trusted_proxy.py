"""TrustedProxy (middleware/trusted_proxy.py): ``X-Forwarded-For`` names the caller
only behind a trusted proxy, counted from it, and ``X-Forwarded-Prefix`` is kept
only as a plain path prefix; alone, and outside the rate limit."""

from __future__ import annotations

import pytest

from refapi.middleware import (
    TrustedProxy,
)
from tests.middleware.alone import (
    bare,
    client,
    limit,
)


def test_forwarded_for_is_ignored_unless_a_proxy_is_trusted(make_app):
    untrusted = make_app(anonymous=True, rate_limit_capacity=1)
    untrusted.get("/v1/todos/1", headers={"X-Forwarded-For": "1.1.1.1"})
    untrusted.get("/v1/todos/1", headers={"X-Forwarded-For": "2.2.2.2"}, status=429)


def test_forwarded_for_names_the_caller_behind_a_trusted_proxy(make_app):
    trusted = make_app(anonymous=True, rate_limit_capacity=1, trust_proxy=1)
    trusted.get("/v1/todos/1", headers={"X-Forwarded-For": "1.1.1.1"})
    trusted.get("/v1/todos/1", headers={"X-Forwarded-For": "2.2.2.2"})
    trusted.get("/v1/todos/1", headers={"X-Forwarded-For": "1.1.1.1"}, status=429)


def test_fewer_forwarded_for_values_than_trusted_proxies_name_no_one(make_app):
    # Two proxies should have written two values; one means the request came round
    # them, so the client's value is not believed, and the peer's bucket is used.
    trusted = make_app(anonymous=True, rate_limit_capacity=1, trust_proxy=2)
    trusted.get("/v1/todos/1", headers={"X-Forwarded-For": "1.1.1.1"})
    trusted.get("/v1/todos/1", headers={"X-Forwarded-For": "2.2.2.2"}, status=429)


def test_trusted_proxy_refuses_a_negative_number_of_hops():
    with pytest.raises(ValueError, match="hops"):
        TrustedProxy(lambda environ, start_response: [], hops=-1)


@pytest.mark.parametrize(
    ("prefix", "location"),
    [
        pytest.param("/prod", "/prod/v1/articles/1", id="plain"),
        pytest.param("/prod/eu-1/", "/prod/eu-1/v1/articles/1", id="two-segments"),
        pytest.param("/", "/v1/articles/1", id="root"),
        pytest.param("/a%20b", "/a%20b/v1/articles/1", id="percent-encoded"),
        pytest.param("//evil.example", "/v1/articles/1", id="scheme-relative"),
        pytest.param("///evil.example", "/v1/articles/1", id="three-slashes"),
        pytest.param("/prod//x", "/v1/articles/1", id="empty-segment"),
        pytest.param("https://evil.example", "/v1/articles/1", id="absolute-url"),
        pytest.param("evil.example", "/v1/articles/1", id="no-leading-slash"),
        pytest.param("/\\evil.example", "/v1/articles/1", id="backslash"),
        pytest.param("/a<script>", "/v1/articles/1", id="angle-brackets"),
        pytest.param("/a\tb", "/v1/articles/1", id="control"),
        pytest.param("/a b", "/v1/articles/1", id="space"),
    ],
)
def test_forwarded_prefix_is_kept_only_when_a_plain_path(make_app, prefix, location):
    app = make_app(trust_proxy=1)
    response = app.post_json(
        "/v1/articles",
        {"title": "a"},
        headers={"X-Forwarded-Prefix": prefix},
        status=201,
    )
    assert response.headers["Location"] == location


def test_forwarded_prefix_counts_from_the_trusted_proxy(make_app):
    # With one trusted proxy, the value it appended (the last) is the one used.
    app = make_app(trust_proxy=1)
    headers = {"X-Forwarded-Prefix": "//evil.example, /prod"}
    response = app.post_json("/v1/articles", {"title": "a"}, headers=headers)
    assert response.headers["Location"] == "/prod/v1/articles/1"
    headers = {"X-Forwarded-Prefix": "/prod, //evil.example"}
    response = app.post_json("/v1/articles", {"title": "b"}, headers=headers)
    assert response.headers["Location"] == "/v1/articles/2"


def test_forwarded_prefix_is_ignored_unless_a_proxy_is_trusted(app):
    headers = {"X-Forwarded-Prefix": "/prod"}
    response = app.post_json("/v1/articles", {"title": "a"}, headers=headers)
    assert response.headers["Location"] == "/v1/articles/1"


def test_a_refused_prefix_keeps_the_hosts_mount_point(make_app):
    app = make_app(trust_proxy=1)
    response = app.post_json(
        "/v1/articles",
        {"title": "a"},
        headers={"X-Forwarded-Prefix": "//evil.example"},
        extra_environ={"SCRIPT_NAME": "/mnt"},
    )
    assert response.headers["Location"] == "/mnt/v1/articles/1"


# -- alone, and in another order than app.py's (tests/middleware/alone.py) ----------


FORWARDED = {
    "X-Forwarded-For": "203.0.113.9",
    "X-Forwarded-Proto": "https",
    "X-Forwarded-Prefix": "/api",
}


def test_trusted_proxy_alone_applies_the_proxys_headers():
    app = client(TrustedProxy(bare, hops=1))
    seen = app.get("/", headers=FORWARDED).json
    assert seen["REMOTE_ADDR"] == "203.0.113.9"
    assert seen["wsgi.url_scheme"] == "https"
    assert seen["SCRIPT_NAME"] == "/api"
    foreign = {**FORWARDED, "X-Forwarded-Prefix": "//evil.example"}
    assert app.get("/", headers=foreign).json["SCRIPT_NAME"] == ""


def test_trusted_proxy_outside_rate_limit_limits_each_forwarded_client(store, clock):
    app = client(TrustedProxy(limit(bare, store, clock, capacity=1), hops=1))
    app.get("/", headers={"X-Forwarded-For": "203.0.113.1"})
    app.get("/", headers={"X-Forwarded-For": "203.0.113.1"}, status=429)
    app.get("/", headers={"X-Forwarded-For": "203.0.113.2"})  # its own bucket
