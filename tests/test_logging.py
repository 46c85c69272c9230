"""The request log: one line per request with the documented fields, the trace id of
a valid ``traceparent``, errors under the request's id, no credential anywhere."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
import textwrap

import pytest
import webtest

from refapi import Config, create_app
from refapi.logs import JsonLines, TextLines
from refapi.middleware import Observe, RequestId
from refapi.middleware.request_id import trace_id
from refapi.storage.sqlite import SqliteStore
from tests.conftest import ADMIN

FIELDS = {
    "time", "level", "message", "pid", "requestId", "traceId", "method", "route",
    "status", "durationMs", "bytes", "caller",
}  # fmt: skip
RFC3339_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
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


def test_the_text_format_is_one_line_even_for_a_hostile_path(make_app, caplog):
    caplog.set_level(logging.INFO, logger="refapi.request")
    make_app(anonymous=True).get("/v1/todos/1%0A%7B%22forged%22", status=400)
    [record] = caplog.records
    text = TextLines().format(record)
    assert "\n" not in text
    assert ' GET /v1/todos/1%0A{"forged" 400 ' in text
    assert re.search(
        r"requestId=\S+ traceId=- method=GET route=/v1/todos/{id} status=400 ", text
    )


@pytest.mark.parametrize(
    ("env", "why"),
    [
        ({"REFAPI_LOG_FORMAT": "xml"}, "REFAPI_LOG_FORMAT must be json or text"),
        ({"REFAPI_METRICS": "127.0.0.1,not-a-network"}, "REFAPI_METRICS"),
        ({"REFAPI_METRICS": "10.0.0.0/33"}, "REFAPI_METRICS"),
    ],
    ids=["format", "address", "prefix"],
)
def test_observability_settings_are_checked_at_start(env, why):
    with pytest.raises(ValueError, match=why):
        Config.from_env(env)


def test_observability_settings_are_read_from_the_environment():
    config = Config.from_env(
        {"REFAPI_LOG_FORMAT": "text", "REFAPI_METRICS": "127.0.0.1, 10.0.0.0/8"}
    )
    assert config.log_format == "text"
    assert config.metrics == ("127.0.0.1", "10.0.0.0/8")


SERVE_ONE = textwrap.dedent(
    """
    import sys, webtest
    from refapi import Config, create_app
    config = Config.from_env()
    webtest.TestApp(create_app(config)).get("/v1/todos/1")
    """
)


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_a_process_that_configured_no_logging_gets_lines_on_stdout(
    tmp_path, log_format
):
    env = {
        "DATABASE_URL": f"sqlite:///{tmp_path}/refapi.db",
        "REFAPI_DATA_DIR": str(tmp_path),
        "REFAPI_ADMIN_EMAIL": ADMIN["email"],
        "REFAPI_ADMIN_PASSWORD": ADMIN["password"],
        "REFAPI_PASSWORD_HASH": "pbkdf2:sha256:1000",
        "REFAPI_LOG_FORMAT": log_format,
    }
    done = subprocess.run(
        [sys.executable, "-c", SERVE_ONE], env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    if log_format == "json":
        assert json.loads(line)["route"] == "/v1/todos/{id}"
    else:
        assert RFC3339_UTC.match(line)
        assert " INFO GET /v1/todos/1 200 requestId=" in line
        assert " route=/v1/todos/{id} " in line


def bare(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"hello"]


def streamed(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    yield b"hel"
    yield b"lo!"


def crashing(environ, start_response):
    raise RuntimeError("below Observe, nothing caught it")


@pytest.mark.parametrize(
    ("app", "size"), [(bare, 5), (streamed, 6)], ids=["list", "streamed"]
)
def test_observe_alone_logs_a_host_apps_request(lines, app, size):
    webtest.TestApp(Observe(app)).get("/anything", status=200)
    [line] = request_lines(lines())
    assert (line["requestId"], line["traceId"], line["route"]) == (None, None, None)
    assert (line["status"], line["bytes"], line["caller"]) == (200, size, None)
    assert line["message"] == "GET /anything 200"


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


def test_any_loggers_record_keeps_its_fields_in_order_and_nothing_else():
    """A host's or gunicorn's record, through the same formatter: its ``extra``,
    then what a filter added, then its stack; none of the record's own attributes."""
    logger = logging.getLogger("a.host")
    record = logger.makeRecord(
        "a.host", logging.WARNING, "host.py", 7, "%s left", ("disk",), None,
        extra={"zone": "b", "attempt": 2}, sinfo="Stack (most recent call last): here",
    )  # fmt: skip
    record.hostname = "web-1"  # a filter's
    line = json.loads(JsonLines().format(record))
    assert list(line) == [
        "time", "level", "message", "pid", "zone", "attempt", "hostname", "stack_info",
    ]  # fmt: skip
    assert (line["level"], line["message"], line["zone"]) == (
        "warning",
        "disk left",
        "b",
    )
    assert RFC3339_UTC.fullmatch(line["time"])
    as_dict = logger.makeRecord(
        "a.host", logging.INFO, "", 0, {"event": "up"}, (), None
    )
    line = json.loads(JsonLines().format(as_dict))
    assert (line["message"], line["event"]) == ("", "up")


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
