"""Todos: 200 seeded, read-only records of exactly four fields."""

from __future__ import annotations

import math
import re

import pytest

JSON_TYPE = "application/json; charset=utf-8"


@pytest.mark.parametrize(
    ("todo_id", "expected"),
    [
        pytest.param(1, (1, "review the cursor #1", False), id="first"),
        pytest.param(3, (1, "document the schema #3", True), id="every-third-done"),
        pytest.param(20, (1, "refactor the parser #20", False), id="last-of-user-1"),
        pytest.param(21, (2, "write the cursor #21", True), id="first-of-user-2"),
        pytest.param(200, (10, "deploy the parser #200", False), id="last"),
    ],
)
def test_get_todo(app, todo_id, expected):
    user_id, title, completed = expected
    response = app.get(f"/v1/todos/{todo_id}", status=200)
    assert response.headers["Content-Type"] == JSON_TYPE
    assert re.fullmatch(r'"[^"]+"', response.headers["ETag"])
    assert response.json == {
        "userId": user_id,
        "id": todo_id,
        "title": title,
        "completed": completed,
    }


def test_all_200_todos_have_four_fields_and_user_id_ceil_id_over_20(make_app):
    app = make_app(rate_limit_capacity=1000)  # 200 reads in one burst
    for todo_id in range(1, 201):
        todo = app.get(f"/v1/todos/{todo_id}").json
        assert list(todo) == ["userId", "id", "title", "completed"]
        assert todo["id"] == todo_id
        assert todo["userId"] == math.ceil(todo_id / 20)
        assert isinstance(todo["title"], str) and todo["title"]
        assert todo["completed"] is (todo_id % 3 == 0)


@pytest.mark.parametrize("todo_id", [201, 999, 9223372036854775807])
def test_unknown_todo_is_404(app, todo_id):
    response = app.get(f"/v1/todos/{todo_id}", status=404)
    assert response.headers["Content-Type"] == JSON_TYPE
    assert response.json["code"] == "NOT_FOUND"
    assert set(response.json) == {"code", "message", "details"}


@pytest.mark.parametrize(
    "todo_id", ["0", "-1", "abc", "1.5", "99999999999999999999999"]
)
def test_malformed_todo_id_is_400(app, todo_id):
    response = app.get(f"/v1/todos/{todo_id}", status=400)
    assert response.headers["Content-Type"] == JSON_TYPE
    assert response.json["code"] == "VALIDATION_ERROR"
    assert [e["field"] for e in response.json["details"]["errors"]] == ["id"]


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_todos_are_read_only(app, method):
    response = app.request(
        "/v1/todos/1",
        method=method,
        body=b"{}",
        content_type="application/json",
        expect_errors=True,
    )
    assert response.status_int == 405
    assert set(response.headers["Allow"].split(", ")) - {"OPTIONS"} == {"GET", "HEAD"}
    assert response.json["code"] == "METHOD_NOT_ALLOWED"
    assert app.get("/v1/todos/1").json["title"] == "review the cursor #1"


@pytest.mark.parametrize("todo_id", ["007", "0" * 30 + "7", "0" * 4000 + "7"])
def test_leading_zeros_name_the_same_todo(app, todo_id):
    # However many zeros lead, the number is what names the record.
    assert app.get(f"/v1/todos/{todo_id}").json["id"] == 7


def test_todo_is_served(app):
    response = app.get("/v1/todos/1")
    assert response.status_int == 200
    assert response.json == {
        "userId": 1,
        "id": 1,
        "title": "review the cursor #1",
        "completed": False,
    }
