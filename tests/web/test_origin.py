"""Where a request was sent (web/origin.py): the host the servers let through is
the host the app writes into URLs and compares an Origin with."""

from __future__ import annotations

import pytest

from refapi.web.origin import authority, request_host, request_origin, same_origin


def environ(host: str | None = None, scheme: str = "http", **extra: str) -> dict:
    made = {"wsgi.url_scheme": scheme, "SERVER_NAME": "server.test",
            "SERVER_PORT": "8080", **extra}  # fmt: skip
    if host is not None:
        made["HTTP_HOST"] = host
    return made


@pytest.mark.parametrize(
    ("host", "scheme", "expected"),
    [
        ("my_service:8000", "http", "my_service:8000"),  # Werkzeug's get_host: ""
        ("Example.test:80", "http", "Example.test"),
        ("example.test:443", "https", "example.test"),
        ("example.test:443", "http", "example.test:443"),
        ("[::1]:8000", "http", "[::1]:8000"),
        ("a b", "http", ""),
        ("user@example.test", "http", ""),
        ("[zz]", "http", ""),
    ],
)
def test_the_host_is_read_by_the_servers_rule(host, scheme, expected):
    assert request_host(environ(host, scheme)) == expected


def test_without_a_host_field_the_servers_name_and_port():
    assert request_host(environ()) == "server.test:8080"
    assert request_host(environ("")) == "server.test:8080"
    assert request_host(environ(SERVER_NAME="::1")) == "[::1]:8080"
    assert request_host(environ(SERVER_PORT="80")) == "server.test"
    assert request_origin(environ(scheme="https", SERVER_PORT="443")) == (
        "https://server.test"
    )


@pytest.mark.parametrize(
    ("origin", "host", "same"),
    [
        ("http://localhost", "localhost:80", True),
        ("http://localhost:80", "localhost", True),
        ("HTTP://LocalHost", "localhost", True),
        ("http://my_app:8000", "my_app:8000", True),
        ("https://localhost", "localhost", False),
        ("http://localhost:8000", "localhost", False),
        ("http://evil.test", "localhost", False),
        ("null", "localhost", False),
        ("http://localhost/x", "localhost", False),
        ("http://", "", False),
    ],
)
def test_an_origin_is_compared_as_a_browser_writes_it(origin, host, same):
    assert same_origin(origin, environ(host, SERVER_NAME="")) is same


def test_authority_drops_only_the_schemes_own_port():
    assert authority("http", "a.test:80") == "a.test"
    assert authority("https", "a.test:80") == "a.test:80"
    assert authority("http", "a.test:8080") == "a.test:8080"
