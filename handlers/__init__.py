"""Handlers: plain functions from a prepared ``Request`` to a ``Response``.

By the time a handler runs, the dispatcher has matched the route, converted the path
parameters, read and validated the body (``request.payload``) and negotiated the
representation. A handler does the one thing its endpoint is for.
"""

from __future__ import annotations
