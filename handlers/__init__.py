"""Handlers: plain functions from a prepared ``Request`` to a ``Response``.

By the time a handler runs, the dispatcher has matched the route, converted the path
parameters, read and validated the body (``request.payload``) and negotiated the
representation. A handler does the one thing its endpoint is for.

A handler may import the web helpers, the storage interface, the configuration,
the error family, the slots, the metrics and ``hosts.py``; the docs' handler also
the OpenAPI generator and the router's ``Route`` (a type). Never the middleware
(a cross-cutting concern is the stack's), the route table, the app or the lab.
"""

from __future__ import annotations
