"""The request log (middleware/observe.py): one line per request with the documented
fields, the trace id of a valid ``traceparent``, errors under the request's id, no
credential anywhere; alone around a host's app, and outside RequestId. The line's
formats themselves: tests/test_logs.py.
"""

from __future__ import annotations

import json
import logging
import re

import pytest
import webtest

from refapi import create_app
from refapi.logs import JsonLines, TextLines
from refapi.middleware import Observe, RequestId
from refapi.middleware.request_id import trace_id
from refapi.storage.sqlite import SqliteStore
from refapi.web.environ import RESPONSE_HEADERS
from tests.conftest import ADMIN
from tests.test_logs import RFC3339_UTC

FIELDS = {
    "time", "level", "message", "pid", "requestId", "traceId", "method", "route",
    "status", "durationMs", "bytes", "caller",
}  # fmt: skip


TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE}-00f067aa0ba902b7-01"


@pytest.fixture
def lines(caplog):
    """The JSON objects of every record the app logged, as the service writes them."""
    caplog.set_level(logging.INFO, logger="refapi")
    formatter = JsonLines()

    def read() -> list[dict]:
        texts = [formatter.format(record) for record in caplog.records]
        assert all("\n" not in text for text in texts)  # one line each
        return [json.loads(text) for text in texts]

    return read


def request_lines(objects: list[dict]) -> list[dict]:
    return [line for line in objects if "route" in line]


@pytest.mark.parametrize(
    ("method", "path", "route", "status"),
    [
        ("GET", "/v1/todos/1", "/v1/todos/{id}", 200),
        ("GET", "/v1/articles/99999", "/v1/articles/{id}", 404),
        ("GET", "/nowhere", None, 404),
        ("DELETE", "/v1/todos/1", None, 405),
        ("GET", "/api/demo.php?action=list", "/api/demo.php", 200),
        ("HEAD", "/v1/todos/2", "/v1/todos/{id}", 200),
        ("GET", "/healthz", "/healthz", 200),
    ],
    ids=["found", "not-found", "no-route", "no-method", "demo-action", "head",
         "health"],
)  # fmt: skip
def test_one_line_per_request_with_the_decided_fields(
    make_app, lines, method, path, route, status
):
    app = make_app(anonymous=True)

    response = app.request(path, method=method, expect_errors=True)

    assert response.status_int == status
    [line] = request_lines(lines())
    assert set(line) == FIELDS
    assert RFC3339_UTC.fullmatch(line["time"])
    assert line["level"] == "info"
    assert line["requestId"] == response.headers["X-Request-Id"]
    assert line["traceId"] is None
    assert line["method"] == method
    assert line["route"] == route
    assert line["status"] == status and isinstance(line["status"], int)
    assert isinstance(line["durationMs"], float) and line["durationMs"] >= 0
    assert line["bytes"] == len(response.body)
    assert line["caller"] is None
    assert line["message"] == f"{method} {path.split('?')[0]} {status}"


def test_the_caller_is_the_principal_never_its_credential(make_app, lines):
    app = make_app()  # the admin's Bearer token on every request
    token = app.extra_environ["HTTP_AUTHORIZATION"].removeprefix("Bearer ")

    app.post_json("/v1/articles", {"title": "logged"}, status=201)

    [line] = request_lines(lines())
    assert line["route"] == "/v1/articles"
    assert re.fullmatch(r"user:\d+", line["caller"])
    assert token not in json.dumps(line)


def test_no_credential_reaches_any_line(make_app, caplog, lines):
    app = make_app(anonymous=True)
    answer = app.post_json("/api/login", ADMIN)
    token, csrf = answer.json["token"], answer.json["csrfToken"]
    cookie = answer.headers["Set-Cookie"].split(";")[0].split("=", 1)[1]
    bearer = {"Authorization": f"Bearer {token}"}
    key = app.post_json("/api/keys", {"name": "k"}, headers=bearer).json["key"]
    client = app.post_json(
        "/api/oauth-clients", {"name": "c"}, headers=bearer
    ).json  # fmt: skip

    app.get("/v1/todos/1", headers={"X-API-Key": key})
    app.get("/api/session", headers={"Cookie": f"refapi_session={cookie}"})
    app.get("/api/users", headers={"Authorization": "Bearer wrong-token"}, status=401)
    app.get("/api/users", headers={"X-API-Key": "wrong-key"}, status=401)
    app.post(
        "/oauth/token",
        {"grant_type": "client_credentials", "client_id": client["clientId"],
         "client_secret": client["clientSecret"]},
    )  # fmt: skip
    app.post_json(
        "/api/login", {"email": ADMIN["email"], "password": "a wrong one"}, status=401
    )

    written = [json.dumps(line) for line in lines()]
    written += [TextLines().format(record) for record in caplog.records]
    secrets = (token, csrf, cookie, key, client["clientSecret"], ADMIN["password"])
    assert len(request_lines(lines())) == 9
    for secret in (*secrets, "wrong-token", "wrong-key", "a wrong one"):
        assert not [text for text in written if secret in text], secret


def test_the_query_is_not_logged(make_app, lines):
    make_app(anonymous=True).get("/v1/items?limit=2&cursor=secretish", status=400)
    [line] = request_lines(lines())
    assert "secretish" not in json.dumps(line)
    assert line["message"] == "GET /v1/items 400"


class BrokenTodos(SqliteStore):
    def get_todo(self, todo_id):
        raise RuntimeError("the internals")


def test_an_uncaught_error_is_logged_with_its_traceback_under_the_request_id(
    tmp_path, config, clock, lines
):
    broken = BrokenTodos(str(tmp_path / "broken.db"))
    try:
        app = webtest.TestApp(create_app(config, store=broken, clock=clock))
        app.get(
            "/v1/todos/1", headers={"X-Request-Id": "trace-500",
                                    "traceparent": TRACEPARENT}, status=500,
        )  # fmt: skip
    finally:
        broken.close()
    written = lines()
    [error] = [line for line in written if "traceback" in line]
    [request] = request_lines(written)
    assert error["requestId"] == request["requestId"] == "trace-500"
    assert error["traceId"] == request["traceId"] == TRACE
    assert error["level"] == "error" and request["level"] == "info"
    assert "Traceback (most recent call last)" in error["traceback"]
    assert "RuntimeError: the internals" in error["traceback"]
    assert request["status"] == 500 and request["route"] == "/v1/todos/{id}"


def test_a_valid_traceparent_is_logged_beside_the_request_id(make_app, lines):
    app = make_app(anonymous=True)
    app.get("/v1/todos/1", headers={"traceparent": TRACEPARENT})
    app.get("/v1/todos/1", headers={"traceparent": TRACEPARENT.upper()})
    first, second = request_lines(lines())
    assert first["traceId"] == TRACE
    assert second["traceId"] is None


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (TRACEPARENT, TRACE),
        (f"01-{TRACE}-00f067aa0ba902b7-00-what-a-later-version-adds", TRACE),
        (f" {TRACEPARENT}\t", TRACE),
        (None, None),
        ("", None),
        (f"00-{'0' * 32}-00f067aa0ba902b7-01", None),
        (f"00-{TRACE}-{'0' * 16}-01", None),
        (f"ff-{TRACE}-00f067aa0ba902b7-01", None),
        (f"00-{TRACE}-00f067aa0ba902b7-01-extra", None),
        (TRACEPARENT.upper(), None),
        (f"00-{TRACE[:-1]}-00f067aa0ba902b7-01", None),
        (f"00-{TRACE}-00f067aa0ba902b7", None),
        (f"00_{TRACE}_00f067aa0ba902b7_01", None),
        (f"{TRACEPARENT},{TRACEPARENT}", None),
        ("00-" + "g" * 32 + "-00f067aa0ba902b7-01", None),
    ],
    ids=["valid", "later-version", "spaces", "absent", "empty", "zero-trace",
         "zero-parent", "version-ff", "v00-extra", "uppercase", "short-trace",
         "no-flags", "underscores", "repeated", "not-hex"],
)  # fmt: skip
def test_traceparent_is_checked_as_w3c_trace_context_says(header, expected):
    assert trace_id(header) == expected


def bare(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"hello"]


def streamed(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    yield b"hel"
    yield b"lo!"


def chunks(environ, start_response):
    # A line of its own, not one of refapi's: its code read from it.
    start_response("299 Quite Fine", [("Content-Type", "text/plain")])
    return [b"he", b"llo", b"!"]


def crashing(environ, start_response):
    raise RuntimeError("below Observe, nothing caught it")


@pytest.mark.parametrize(
    ("app", "status", "size"),
    [(bare, 200, 5), (streamed, 200, 6), (chunks, 299, 6)],
    ids=["list", "streamed", "chunks"],
)
def test_observe_alone_logs_a_host_apps_request(lines, app, status, size):
    webtest.TestApp(Observe(app)).get("/anything", status=status)
    [line] = request_lines(lines())
    assert (line["requestId"], line["traceId"], line["route"]) == (None, None, None)
    assert (line["status"], line["bytes"], line["caller"]) == (status, size, None)
    assert line["message"] == f"GET /anything {status}"


def test_observe_alone_logs_an_error_nothing_below_caught(lines):
    with pytest.raises(RuntimeError):
        webtest.TestApp(Observe(crashing)).get("/x")
    [line] = request_lines(lines())
    assert line["level"] == "error" and line["status"] == 500
    assert "RuntimeError: below Observe" in line["traceback"]


def test_observe_outside_request_id_logs_the_id_made_below(lines):
    # Observe reads the environ once the answer is made: what a layer below wrote.
    webtest.TestApp(Observe(RequestId(bare))).get("/x")
    [line] = request_lines(lines())
    assert re.fullmatch(r"[0-9a-f]{32}", line["requestId"])


def test_a_hosts_record_factory_makes_the_request_line(lines):
    """The documented way to add to every record (logging.setLogRecordFactory) adds
    to the request's line too."""
    made = logging.getLogRecordFactory()

    def factory(*args, **kwargs):
        record = made(*args, **kwargs)
        record.region = "eu-1"
        return record

    logging.setLogRecordFactory(factory)
    try:
        webtest.TestApp(Observe(bare)).get("/anything", status=200)
    finally:
        logging.setLogRecordFactory(made)
    [line] = request_lines(lines())
    assert line["region"] == "eu-1" and line["status"] == 200


def test_observe_alone_starts_the_list_where_a_host_left_its_key_empty(lines):
    # A host's environ may hold refapi.response_headers as None (no list started):
    # Observe starts one, and logs the answer's own status.
    app = webtest.TestApp(Observe(bare), extra_environ={RESPONSE_HEADERS: None})
    app.get("/x", status=200)
    [line] = request_lines(lines())
    assert line["status"] == 200
