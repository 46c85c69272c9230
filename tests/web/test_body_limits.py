"""Each route's body limit, through the whole app: a body over it is ``413
PAYLOAD_TOO_LARGE`` with ``details.limit``, refused before it is read.

A body declared longer than the limit is refused from ``Content-Length`` alone: the
input stream here fails if it is read at all. A chunked body (no
``Content-Length``) is read until one byte past the limit, and no further. Whether
each limit admits what its row's schema accepts is ``tests/test_routes_limits.py``.
"""

from __future__ import annotations

import io
import json
import sys
from urllib.parse import urlencode

import pytest

from refapi import routes
from refapi.web.body import FORM
from tests.helpers import SERVED

BODIES = [route for route in SERVED if route.body_limit is not None]


class Unreadable(io.RawIOBase):
    """A body that must not be read."""

    def read(self, size: int = -1) -> bytes:
        raise AssertionError("the body was read")


class Counted(io.BytesIO):
    """A body that counts what is read of it."""

    taken = 0

    def read(self, size: int | None = -1) -> bytes:
        chunk = super().read(size)
        self.taken += len(chunk)
        return chunk


def call(app, route: routes.Route, stream, **environ) -> tuple[str, dict]:
    """The status and JSON body of ``route`` asked with ``stream`` as its body."""
    query = f"action={route.action}" if route.action else ""
    content_type = FORM if route.form else "application/json"
    env = {
        "REQUEST_METHOD": route.method,
        "PATH_INFO": route.path.replace("{id}", "1"),
        "QUERY_STRING": query,
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "CONTENT_TYPE": content_type,
        "wsgi.url_scheme": "http",
        "wsgi.input": stream,
        "wsgi.errors": sys.stderr,
        "wsgi.version": (1, 0),
        "wsgi.multithread": False,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        **app.extra_environ,  # the admin's Bearer token
        **environ,
    }
    statuses = []

    def start_response(status, headers, exc_info=None):
        statuses.append(status)

    body = b"".join(app.app(env, start_response))
    return statuses[0], json.loads(body)


@pytest.mark.parametrize("route", BODIES, ids=lambda r: f"{r.method} {r.path} {r.name}")
def test_a_body_declared_over_the_routes_limit_is_413_unread(app, route):
    over = {"CONTENT_LENGTH": str(route.body_limit + 1)}
    status, body = call(app, route, Unreadable(), **over)
    assert status.startswith("413 ")  # the phrase is the Python's (3.13: RFC 9110's)
    assert body["code"] == "PAYLOAD_TOO_LARGE"
    assert body["details"] == {"limit": route.body_limit}


@pytest.mark.parametrize("route", BODIES, ids=lambda r: f"{r.method} {r.path} {r.name}")
def test_a_chunked_body_is_read_to_one_byte_past_the_limit(app, route):
    assert route.body_limit is not None
    stream = Counted(b"x" * (route.body_limit + 10_000))
    status, body = call(app, route, stream, **{"wsgi.input_terminated": True})
    assert status.startswith("413 ")  # the phrase is the Python's (3.13: RFC 9110's)
    assert body["details"] == {"limit": route.body_limit}
    assert stream.taken == route.body_limit + 1


def test_the_configured_limit_wins_where_it_is_smaller(make_app):
    app = make_app(max_body_bytes=100)
    login = next(r for r in BODIES if r.path == "/api/login")
    status, body = call(app, login, Unreadable(), CONTENT_LENGTH="101")
    assert (status[:3], body["details"]) == ("413", {"limit": 100})


def test_a_body_of_the_limit_is_read(anon):
    """A note pretty-printed and escaped to its row's limit exactly is created."""
    demo = next(r for r in BODIES if r.action == "create")
    text = "\\ud83e\\udd84" * 1000  # 1,000 characters, each written as 12 bytes
    head, tail = '{\n    "text": "', '"\n}'
    padding = demo.body_limit - len(head) - len(text) - len(tail)
    raw = (head + text + tail + " " * padding).encode()
    assert len(raw) == demo.body_limit
    created = anon.post(
        "/api/demo.php?action=create", raw, content_type="application/json", status=201
    )
    assert created.json["text"] == "🦄" * 1000


def test_a_token_request_over_its_limit_is_413_not_invalid_request(anon):
    token = next(r for r in BODIES if r.path == "/oauth/token")
    form = urlencode({"grant_type": "client_credentials", "pad": "a" * 60_000})
    response = anon.post("/oauth/token", form, content_type=FORM, status=413)
    assert response.json["code"] == "PAYLOAD_TOO_LARGE"
    assert response.json["details"] == {"limit": token.body_limit}
    assert response.headers["Cache-Control"] == "no-store"
