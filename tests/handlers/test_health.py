"""Health check: 200 with every check "ok", 503 with the failing check named."""

from __future__ import annotations

import os

import pytest
import webtest

from refapi import create_app

# On both backends: a database out of reach is each backend's fault.
pytestmark = pytest.mark.every_backend

JSON_TYPE = "application/json; charset=utf-8"


@pytest.fixture
def down_app(down_store, config, clock):
    """An app whose database cannot be reached."""
    return webtest.TestApp(create_app(config, store=down_store, clock=clock))


def test_health_ok(app):
    response = app.get("/healthz", status=200)
    assert response.headers["Content-Type"] == JSON_TYPE
    assert response.headers["Cache-Control"] == "no-store"
    assert response.json == {
        "status": "ok",
        "checks": {"storage": "ok", "rateLimit": "ok"},
        "version": "1.0.0",
    }
    assert "Retry-After" not in response.headers


def test_health_head_has_headers_and_no_body(app):
    response = app.head("/healthz", status=200)
    assert response.headers["Content-Type"] == JSON_TYPE
    assert response.body == b""


def test_health_storage_down_is_503_with_the_health_body(down_app):
    response = down_app.get("/healthz", status=503)
    assert response.headers["Content-Type"] == JSON_TYPE
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["Retry-After"] == "5"
    # The buckets are kept with the data (SQLite: a file in the same missing folder),
    # so both checks fail.
    assert response.json == {
        "status": "unavailable",
        "checks": {"storage": "unavailable", "rateLimit": "unavailable"},
        "version": "1.0.0",
    }


@pytest.mark.sqlite_only
def test_sqlite_health_names_a_deleted_database_file(app, store):
    app.get("/healthz", status=200)
    os.unlink(store.path)
    response = app.get("/healthz", status=503)
    assert response.json["checks"] == {"storage": "unavailable", "rateLimit": "ok"}
    assert response.json["status"] == "unavailable"


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_health_other_methods_are_405(app, method):
    response = app.request(
        "/healthz",
        method=method,
        body=b"{}",
        content_type="application/json",
        expect_errors=True,
    )
    assert response.status_int == 405
    assert response.headers["Content-Type"] == JSON_TYPE
    assert set(response.headers["Allow"].split(", ")) - {"OPTIONS"} == {"GET", "HEAD"}
    assert response.json["code"] == "METHOD_NOT_ALLOWED"
    assert set(response.json) == {"code", "message", "details"}
