"""Every read, change and delete of a record that does not exist: the error object,
naming the resource and the id asked for."""

from __future__ import annotations

import json

import pytest

from tests.helpers import assert_error

MISSING = 999_999
DEMO = "/api/demo.php"
USER = {"email": "nobody@example.com", "firstName": "N", "lastName": "B"}

# (method, path, body, the name the message gives)
CALLS = [
    ("GET", f"/v1/articles/{MISSING}", None, "Article"),
    ("PATCH", f"/v1/articles/{MISSING}", {"title": "T"}, "Article"),
    ("DELETE", f"/v1/articles/{MISSING}", None, "Article"),
    ("GET", f"/v1/todos/{MISSING}", None, "Todo"),
    ("GET", f"{DEMO}?action=detail&id={MISSING}", None, "Note"),
    ("PATCH", f"{DEMO}?action=update&id={MISSING}", {"text": "t"}, "Note"),
    ("DELETE", f"{DEMO}?action=delete&id={MISSING}", None, "Note"),
    ("DELETE", f"/api/keys/{MISSING}", None, "API key"),
    ("DELETE", f"/api/oauth-clients/{MISSING}", None, "OAuth client"),
    ("GET", "/v1/payments/pay_missing", None, "Payment"),
    ("GET", f"/api/users/{MISSING}", None, "User"),
    ("PUT", f"/api/users/{MISSING}", USER, "User"),
    ("DELETE", f"/api/users/{MISSING}", None, "User"),
]


@pytest.mark.parametrize(
    ("method", "path", "body", "name"), CALLS, ids=[f"{m} {p}" for m, p, *_ in CALLS]
)
def test_a_missing_record_is_404_naming_it(app, method, path, body, name):
    response = app.request(
        path,
        method=method,
        body=json.dumps(body).encode() if body is not None else b"",
        content_type="application/json" if body is not None else None,
        expect_errors=True,
    )
    assert_error(response, 404, "NOT_FOUND")
    missing = path.rsplit("/", 1)[-1].rsplit("=", 1)[-1]
    assert response.json == {
        "code": "NOT_FOUND",
        "message": f"{name} {missing} does not exist.",
        "details": {},
    }
