"""Assertions shared by the in-process tests."""

from __future__ import annotations

JSON_TYPE = "application/json; charset=utf-8"


def assert_error(response, status: int, code: str) -> None:
    """The specification's error object, with the status and code expected."""
    assert response.status_int == status
    assert response.headers["Content-Type"] == JSON_TYPE
    assert response.json["code"] == code
    assert set(response.json) == {"code", "message", "details"}


def varies_on(response) -> set[str]:
    """The request headers named by every ``Vary`` field of the response."""
    fields = ",".join(response.headers.getall("Vary"))
    return {name.strip().lower() for name in fields.split(",") if name.strip()}
