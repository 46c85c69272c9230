"""Assertions shared by the in-process tests."""

from __future__ import annotations

JSON_TYPE = "application/json; charset=utf-8"


def assert_error(response, status: int, code: str) -> None:
    """The specification's error object, with the status and code expected."""
    assert response.status_int == status
    assert response.headers["Content-Type"] == JSON_TYPE
    assert response.json["code"] == code
    assert set(response.json) == {"code", "message", "details"}


def send_accepting(app, method: str, path: str, accept: str):
    """``method path`` with ``Accept: accept``, and a small article body when the
    method takes one; the answer whatever its status."""
    body = b'{"title": "T"}' if method in ("POST", "PATCH") else b""
    return app.request(
        path,
        method=method,
        headers={"Accept": accept},
        body=body,
        content_type="application/json" if body else None,
        expect_errors=True,
    )


def varies_on(response) -> set[str]:
    """The request headers named by every ``Vary`` field of the response."""
    fields = ",".join(response.headers.getall("Vary"))
    return {name.strip().lower() for name in fields.split(",") if name.strip()}
