"""Errors (middleware/errors.py): everything below renders as the error object, in
JSON whatever ``Accept`` says: an ``ApiError``, Werkzeug's 404 and 405 (keeping
``Allow``), an outage as 503, and a crash as a logged 500 without its traceback."""

from __future__ import annotations

import logging

import pytest
import webtest

from refapi import create_app
from refapi.errors import NotFound
from refapi.middleware import (
    Errors,
    RequestId,
)
from tests.helpers import assert_error, call
from tests.middleware.alone import (
    client,
    raising,
)


@pytest.mark.parametrize(
    "path",
    ["/nope", "/v1/articles/", "/v1", "/v2/articles", "/articles", "/v1//todos/1"],
)
def test_unknown_path_is_404_error_object(app, path):
    assert_error(app.get(path, status=404), 404, "NOT_FOUND")


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/v1/articles", {"GET", "HEAD", "POST"}),
        ("DELETE", "/v1/articles", {"GET", "HEAD", "POST"}),
        ("PUT", "/v1/articles/1", {"GET", "HEAD", "PATCH", "DELETE"}),
        ("POST", "/v1/todos/1", {"GET", "HEAD"}),
        ("POST", "/v1/items", {"GET", "HEAD"}),
        ("POST", "/healthz", {"GET", "HEAD"}),
        ("DELETE", "/v1/payments/pay_1", {"GET", "HEAD"}),
    ],
)
def test_wrong_method_is_405_with_allow(app, method, path, allowed):
    # OPTIONS is answered on every routed path, so a 405's Allow lists it too.
    response = call(app, method, path, {})
    assert_error(response, 405, "METHOD_NOT_ALLOWED")
    assert sorted(response.headers["Allow"].split(", ")) == sorted(
        {*allowed, "OPTIONS"}
    )
    assert response.json["details"]["allowed"] == sorted({*allowed, "OPTIONS"})
    options = app.options(path, status=204)
    assert options.headers["Allow"] == response.headers["Allow"]


class BrokenTodos:
    """The test's store, but reading a todo is a bug."""

    def __init__(self, store) -> None:
        self.store = store

    def __getattr__(self, name: str):
        return getattr(self.store, name)

    def get_todo(self, todo_id):
        raise RuntimeError("secret internals at /srv/refapi")


def test_uncaught_exception_is_500_without_traceback(store, config, clock, caplog):
    app = webtest.TestApp(create_app(config, store=BrokenTodos(store), clock=clock))
    with caplog.at_level(logging.ERROR, logger="refapi"):
        response = app.get(
            "/v1/todos/1", headers={"X-Request-Id": "trace-500"}, status=500
        )
    assert_error(response, 500, "INTERNAL_ERROR")
    assert response.headers["X-Request-Id"] == "trace-500"
    assert "secret" not in response.text and "Traceback" not in response.text
    [record] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "trace-500" in record.getMessage()
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError


def test_storage_down_is_503_unavailable(down_store, config, clock):
    app = webtest.TestApp(create_app(config, store=down_store, clock=clock))
    response = app.get(
        "/v1/todos/1", headers={"Origin": "https://x.example"}, status=503
    )
    assert_error(response, 503, "UNAVAILABLE")
    assert response.headers["Access-Control-Allow-Origin"] == "*"


@pytest.mark.parametrize(
    ("path", "accept", "status", "code"),
    [
        ("/nope", "application/xml", 404, "NOT_FOUND"),
        ("/v1/articles/9", "text/csv", 404, "NOT_FOUND"),
        ("/v1/items?limit=0", "text/csv", 400, "VALIDATION_ERROR"),
        ("/v1/items?cursor=x", "application/xml", 400, "INVALID_CURSOR"),
    ],
)
def test_errors_are_always_json(app, path, accept, status, code):
    response = app.get(path, headers={"Accept": accept}, status=status)
    assert_error(response, status, code)


# -- alone, and in another order than app.py's (tests/middleware/alone.py) ----------


def test_errors_alone_renders_an_api_error_and_hides_a_crash(caplog):
    assert_error(
        client(Errors(raising(NotFound()))).get("/", status=404),
        404,
        "NOT_FOUND",
    )
    with caplog.at_level(logging.ERROR, logger="refapi"):
        crash = client(Errors(raising(RuntimeError("secret detail"))))
        answer = crash.get("/", status=500)
    assert_error(answer, 500, "INTERNAL_ERROR")
    assert "secret detail" not in answer.text
    assert "request_id=None" in caplog.text  # no RequestId layer: no id to log


def test_errors_outside_request_id_logs_the_requests_id(caplog):
    app = client(Errors(RequestId(raising(RuntimeError("boom")))))
    with caplog.at_level(logging.ERROR, logger="refapi"):
        app.get("/", headers={"X-Request-Id": "r3"}, status=500)
    assert "request_id=r3" in caplog.text
