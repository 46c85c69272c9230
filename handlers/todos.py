"""Todos: read-only records seeded on first start (ids 1-200)."""

from __future__ import annotations

from ..errors import found
from ..storage.base import TodoStore
from ..web import Request, Response, json_response


def get_todo(request: Request, store: TodoStore, id: int) -> Response:
    return json_response(found(store.get_todo(id), "Todo", id))
