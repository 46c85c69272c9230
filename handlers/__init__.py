"""Handlers: plain functions from a prepared ``Request`` to a ``Response``.

By the time a handler runs, the dispatcher has matched the route, converted the path
parameters, read and validated the body (``request.payload``) and negotiated the
representation. A handler does the one thing its endpoint is for.
"""

from __future__ import annotations

from ..storage.base import iso
from ..web import Request


def now_iso(request: Request) -> str:
    """The request clock's time as RFC 3339 UTC with the ``Z`` offset."""
    return iso(request.clock())
