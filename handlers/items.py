"""Items: a read-only, ordered collection (ids 1-1000), walked by cursor."""

from __future__ import annotations

from ..storage.base import ItemStore
from ..web import Request, Response
from ..web.pagination import Pages


def list_items(request: Request, store: ItemStore, pages: Pages) -> Response:
    return pages.list(request, "items", store.list_items)
