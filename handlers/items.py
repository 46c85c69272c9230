"""Items: a read-only, ordered collection (ids 1-1000), walked by cursor."""

from __future__ import annotations

from ..web import Request, Response, pagination


def list_items(request: Request) -> Response:
    return pagination.list_page(request, "items", request.store.list_items)
