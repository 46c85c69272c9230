"""Todos: read-only records seeded on first start (ids 1-200)."""

from __future__ import annotations

from ..errors import NotFound
from ..web import Request, Response, json_response


def get_todo(request: Request, id: int) -> Response:
    todo = request.store.get_todo(id)
    if todo is None:
        raise NotFound(f"Todo {id} does not exist.")
    return json_response(todo)
