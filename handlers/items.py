"""Items: a read-only, ordered collection (ids 1-1000), walked by cursor."""

from __future__ import annotations

from ..web import Request, Response, pagination


def list_items(request: Request) -> Response:
    after, limit = pagination.window(request, "items")
    records = request.store.list_items(after, limit)
    return pagination.page_response(request, "items", records, limit)
