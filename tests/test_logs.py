"""The log's formats (logs.py): JSON and text lines, one line each whatever the
record holds, for any logger's record; a process that configured no logging gets
the lines on stdout, each request's written by refapi itself (``RequestLines``) as
the formatters would write it; a host that configured logging gets records."""

from __future__ import annotations

import json
import logging
import os
import re
import select
import subprocess
import sys
import textwrap

import pytest
import webtest

from refapi.logs import (
    TEXTS,
    JsonLines,
    RequestLines,
    StandardOutput,
    TextLines,
    formatter,
    report,
)
from refapi.middleware import Observe
from tests.conftest import ADMIN

RFC3339_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


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
    "path",
    [
        "/lab/basic-auth/bob/SEKRIT",
        "/lab/hidden-basic-auth/bob/SEKRIT",
        "/lab/digest-auth/auth/bob/SEKRIT",
        "/lab/digest-auth/auth-int/bob/SEKRIT/SHA-256/never",
    ],
)
def test_a_password_in_the_labs_path_is_logged_redacted(make_app, caplog, path):
    # The lab's challenges take the password in the path, as httpbin's do; the
    # line wrote it as sent (docs/operating.md, "Logs": no credential in a log line).
    caplog.set_level(logging.INFO, logger="refapi.request")
    app = make_app(anonymous=True)
    app.get(path, headers={"Authorization": "Basic Ym9iOlNFS1JJVA=="}, status="*")
    app.post(path, status=405)
    preflight = {"Origin": "https://a.example", "Access-Control-Request-Method": "GET"}
    app.options(path, headers=preflight, status=204)
    lines = [TextLines().format(record) for record in caplog.records]
    assert len(lines) == 3
    for line in lines:
        assert "SEKRIT" not in line
        assert path.replace("SEKRIT", "[redacted]") in line


@pytest.mark.parametrize(
    "path",
    [
        "/lab/basic-auth/bob/SEKRIT/",
        "/lab//basic-auth/bob/SEKRIT",
        "/lab/basic-auth/bob/SEKRIT/extra",
        "/lab/Basic-Auth/bob/SEKRIT",
        "/lab/digest-auth/auth/bob/SEKRIT/MD5/5/extra",
        "/lab/./basic-auth/bob/SEKRIT",
        "/lab/basic-auth/./bob/SEKRIT",
        "/lab/x/../basic-auth/bob/SEKRIT",
        "/lab/digest-auth/auth/bob/./SEKRIT",
        "/lab/basic-auth/bob/SEKRIT/SEKRIT",  # a password with a slash, sent %2F
    ],
)
def test_a_password_in_a_path_the_lab_does_not_serve_is_logged_redacted(
    make_app, caplog, path
):
    """A typo of a challenge's path is a 404, whose line wrote the password as
    sent (a hostile-client review found it)."""
    caplog.set_level(logging.INFO, logger="refapi.request")
    app = make_app(anonymous=True)
    app.get(path, status="*")
    app.options(path, status="*")
    lines = [TextLines().format(record) for record in caplog.records]
    assert len(lines) == 2
    for line in lines:
        assert "SEKRIT" not in line and "[redacted]" in line


SERVE_ONE = textwrap.dedent(
    """
    import sys, webtest
    from refapi import Config, create_app
    config = Config.from_env()
    webtest.TestApp(create_app(config)).get("/v1/todos/1")
    """
)
# A host's logging, set up before the app: the request's line is a record, through
# the host's handler (here to stderr) and the formatter it names.
HOST_CONFIGURED = textwrap.dedent(
    """
    import logging.config
    logging.config.dictConfig({
        "version": 1,
        "formatters": {"refapi": {"()": "refapi.logs.JsonLines"}},
        "handlers": {"host": {"class": "logging.StreamHandler",
                              "stream": "ext://sys.stderr", "formatter": "refapi"}},
        "loggers": {"refapi": {"handlers": ["host"], "level": "INFO"}},
    })
    """
)
KEYS = [
    "time", "level", "message", "pid", "requestId", "traceId", "method", "route",
    "status", "durationMs", "bytes", "caller",
]  # fmt: skip
TEXT_LINE = re.compile(
    r"\S+Z INFO GET /v1/todos/1 200 requestId=[0-9a-f]{32} traceId=- method=GET "
    r"route=/v1/todos/\{id\} status=200 durationMs=[\d.]+ bytes=\d+ caller=-"
)


def serve_one(tmp_path, log_format: str, prelude: str = "") -> tuple[str, str]:
    """The standard output and error of a process that serves one GET."""
    env = {
        "DATABASE_URL": f"sqlite:///{tmp_path}/refapi.db",
        "REFAPI_DATA_DIR": str(tmp_path),
        "REFAPI_ADMIN_EMAIL": ADMIN["email"],
        "REFAPI_ADMIN_PASSWORD": ADMIN["password"],
        "REFAPI_PASSWORD_HASH": "pbkdf2:sha256:1000",
        "REFAPI_LOG_FORMAT": log_format,
    }
    done = subprocess.run(
        [sys.executable, "-c", prelude + SERVE_ONE], env=env, capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_a_process_that_configured_no_logging_gets_lines_on_stdout(
    tmp_path, log_format
):
    stdout, _ = serve_one(tmp_path, log_format)
    [line] = stdout.splitlines()
    if log_format == "json":
        written = json.loads(line)
        assert list(written) == KEYS
        assert RFC3339_UTC.fullmatch(written["time"])
        assert (written["level"], written["route"]) == ("info", "/v1/todos/{id}")
        assert written["pid"] > 0 and written["message"] == "GET /v1/todos/1 200"
    else:
        assert RFC3339_UTC.match(line)
        assert TEXT_LINE.fullmatch(line)


def test_a_host_that_configured_logging_gets_the_line_through_its_handler(tmp_path):
    stdout, stderr = serve_one(tmp_path, "json", prelude=HOST_CONFIGURED)
    assert stdout == ""
    [line] = [json.loads(text) for text in stderr.splitlines()]
    assert list(line) == KEYS and line["route"] == "/v1/todos/{id}"


@pytest.fixture
def pipe():
    """A pipe's two ends, closed after the test; reading it empty fails at once."""
    ends = os.pipe()
    os.set_blocking(ends[0], False)
    yield ends
    for end in ends:
        try:
            os.close(end)
        except OSError:
            pass  # closed by the test


REQUESTS = {
    "every-field": dict(
        request_id="4bf92f3577b34da6", trace_id="4bf92f3577b34da6a3ce929d0e0e4736",
        method='GE"T', path='/v1/a"b\\c\x01\u00e9\n{"forged": 1}',
        route="/v1/todos/{id}", status=404, seconds=0.0012345, size=68,
        caller="user:7",
    ),
    "nulls": dict(
        request_id=None, trace_id=None, method="GET", path="/", route=None,
        status=200, seconds=12.5, size=0, caller=None,
    ),
    # The duration's text is made from whole microseconds: the float's own repr.
    **{
        f"{seconds}s": dict(
            request_id=None, trace_id=None, method="GET", path="/", route=None,
            status=200, seconds=seconds, size=0, caller=None,
        )
        for seconds in (0, 0.000001, 0.00001, 0.0015, 0.002, 0.1204, 86400.123456)
    },
}  # fmt: skip


@pytest.mark.parametrize("log_format", ["json", "text"])
@pytest.mark.parametrize("fields", REQUESTS.values(), ids=REQUESTS.keys())
def test_a_written_line_is_the_formatters_line(pipe, caplog, log_format, fields):
    """RequestLines writes, in one write(), the text JsonLines or TextLines makes
    of the same request's record: every key, value and quote, but the time."""
    caplog.set_level(logging.INFO, logger="refapi.request")
    log = logging.getLogger("refapi.request")
    read, write = pipe

    report(log, None, mount="", lines=RequestLines(log_format, write), **fields)
    report(log, None, mount="", **fields)

    written = os.read(read, 65536).decode()
    [record] = caplog.records
    made = formatter(log_format).format(record) + "\n"
    assert written.count("\n") == 1
    assert RFC3339_UTC.sub("<time>", written) == RFC3339_UTC.sub("<time>", made)
    assert len(RFC3339_UTC.findall(written)) == 1


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_a_writer_keeps_few_texts_and_writes_the_same_line_once_they_are_forgotten(
    pipe, caplog, log_format
):
    """The texts of a method, route and status, and of a caller, are kept for the
    next line; a method is the client's token, callers are many, so no more than
    TEXTS of each are kept."""
    caplog.set_level(logging.INFO, logger="refapi.request")
    log = logging.getLogger("refapi.request")
    read, write = pipe
    lines = RequestLines(log_format, write)
    fields = REQUESTS["every-field"]
    written = []
    for n in range(TEXTS + 2):
        method, caller = (
            (fields["method"], fields["caller"]) if n in (0, TEXTS + 1)
            else (f"M{n}", f"user:{n}")
        )  # fmt: skip
        report(
            log, None, mount="", lines=lines,
            **{**fields, "method": method, "caller": caller},
        )  # fmt: skip
        line = os.read(read, 65536).decode()
        if n in (0, TEXTS + 1):
            written.append(RFC3339_UTC.sub("<time>", line))
    assert len(lines._texts) <= TEXTS and len(lines._callers) <= TEXTS
    assert written[0] == written[1]  # made again after the clear, the same


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_a_line_of_the_longest_path_and_method_is_one_write_a_pipe_takes_whole(
    pipe, caplog, log_format
):
    # Granian serves paths of 64 KiB: a line of one was torn between the
    # workers sharing a pipe (a write() is whole up to PIPE_BUF, 4 KiB).
    caplog.set_level(logging.INFO, logger="refapi.request")
    read, write = pipe
    os.set_blocking(write, False)  # a line longer than the pipe holds: no hang
    log = logging.getLogger("refapi.request")
    lines = RequestLines(log_format, write)
    path = '/v1/"\\' * 20_000  # the most JSON escapes
    report(
        log, None, request_id="r" * 128, trace_id="4bf92f3577b34da6a3ce929d0e0e4736",
        method="M" * 10_000, path=path, route="/v1/todos/{id}", status=404,
        seconds=86400.123456, size=2**63, caller="client:" + "9" * 19, mount="",
        lines=lines,
    )  # fmt: skip
    written = os.read(read, 65536)
    assert len(written) <= select.PIPE_BUF
    assert written.count(b"\n") == 1 and b"..." in written


def test_a_path_cannot_add_a_field_to_a_text_line(make_app, caplog):
    # Spaces were written as they came: "caller=user:1" looked like the caller.
    caplog.set_level(logging.INFO, logger="refapi.request")
    make_app(anonymous=True).get("/x%20caller=user:1%20status=200", status=404)
    [record] = caplog.records
    text = TextLines().format(record)
    assert " GET /x%20caller=user:1%20status=200 404 " in text
    assert text.count(" caller=") == 1 and text.endswith(" caller=-")


def bare(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"hello"]


def test_a_line_that_cannot_be_written_is_said_and_the_request_served(
    pipe, caplog, capfd
):
    caplog.set_level(logging.INFO, logger="refapi.request")
    read, write = pipe
    os.close(read)  # nobody reads: the write fails (EPIPE)

    webtest.TestApp(Observe(bare, lines=RequestLines("json", write))).get("/x")

    assert "refapi: a request's line was not written: BrokenPipeError" in (
        capfd.readouterr().err
    )


def test_a_forked_worker_writes_its_own_pid(pipe):
    """gunicorn may fork a worker from a process that made the app (preload)."""
    read, write = pipe
    lines = StandardOutput("json").lines
    assert lines is not None
    lines.fd = write
    child = os.fork()
    if child == 0:  # the child: one line, then out without pytest's clean-up
        lines.write(None, None, "GET", "/", None, 200, 100, 0, None)
        os._exit(0)
    os.waitpid(child, 0)
    os.set_blocking(read, True)  # the child has written and gone
    assert json.loads(os.read(read, 65536))["pid"] == child


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


def test_a_driver_s_records_come_in_the_app_s_format_on_its_stream():
    """psycopg's pool warns of each connection it drops in an outage: those
    lines went to standard error bare, one in two lines, when refapi set logging
    up (docs/operating.md, "Logs")."""
    script = (
        "import logging; from refapi import logs; logs.configure('json');"
        " logging.getLogger('psycopg.pool').warning('error connecting\\n\\tIs it up?')"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.stderr == ""
    [line] = done.stdout.splitlines()
    record = json.loads(line)
    assert record["level"] == "warning"
    assert record["message"] == "error connecting\n\tIs it up?"
