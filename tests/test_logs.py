"""The log's formats (logs.py): JSON and text lines, one line each whatever the
record holds, for any logger's record; and a process that configured no logging
gets the lines on stdout."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
import textwrap

import pytest

from refapi.logs import JsonLines, TextLines
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
