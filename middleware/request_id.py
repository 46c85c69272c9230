"""Request ids: every request gets one, every answer and log line carries it."""

from __future__ import annotations

import itertools
import os
import re
import secrets
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..web.environ import REQUEST_ID, TRACE_ID
from .headers import response_headers

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

# What an inbound X-Request-Id must be to be kept, and what every id sent is: the
# check below and the OpenAPI document both read it.
REQUEST_ID_SCHEMA = {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,128}$"}
# W3C Trace Context, section 3.2: version-traceid-parentid-flags, lowercase hex;
# a later version may add fields after another "-".
_TRACEPARENT = re.compile(
    r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}(-.*)?", re.ASCII
)


def trace_id(traceparent: str | None) -> str | None:
    """The trace id of a W3C ``traceparent`` header; None when it is not valid."""
    if not traceparent:
        return None
    found = _TRACEPARENT.fullmatch(traceparent.strip(" \t"))
    if found is None:
        return None
    version, trace, parent, rest = found.groups()
    if version == "ff" or (version == "00" and rest is not None):
        return None  # ff is forbidden; version 00 has exactly four fields
    if trace == "0" * 32 or parent == "0" * 16:
        return None  # all-zero ids are invalid
    return trace


class RequestId:
    """Give every request an id, echo it as ``X-Request-Id``, and log with it.

    An inbound ``X-Request-Id`` of 1-128 characters from ``[A-Za-z0-9._-]`` is kept,
    so a trace that began upstream continues here; anything else is replaced, so a
    client cannot inject text into our logs. A W3C ``traceparent`` (Trace Context)
    that a proxy or mesh sent is left as it is; when it is valid, its trace id is
    logged beside the request id.

    Reads ``X-Request-Id`` and ``traceparent``. Writes
    ``refapi.request_id`` and ``refapi.trace_id`` (None
    without a valid ``traceparent``), for the host and the layers below (``Errors``
    and ``Observe`` log with them), and adds ``X-Request-Id`` and
    ``X-Content-Type-Options: nosniff`` to the request's response headers
    (``middleware/headers.py``), starting the list if no layer outside did. It needs
    no other layer; an answer given outside it (a layer outside that refuses the
    request first) carries no id.
    """

    _VALID = re.compile(REQUEST_ID_SCHEMA["pattern"])

    adds = ("X-Request-Id", "X-Content-Type-Options")

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app
        self._new_prefix()
        # A random prefix per process and a counter: unique without a syscall each.
        # A forked child (a gunicorn worker of a preloaded app) draws its own
        # prefix once, at the fork, rather than asking its pid at every request.
        # PERF: about 540 instructions a request, make bench-instructions
        new_prefix = weakref.WeakMethod(self._new_prefix)
        os.register_at_fork(after_in_child=lambda: (new_prefix() or _nothing)())

    def _new_prefix(self) -> None:
        # The prefix and the counter are one 128-bit number, 80 random bits above a
        # 48-bit count, so an id is its 16 bytes in hex: 20 digits of prefix, 12 of
        # count, in one step rather than a format spec and a join.
        # PERF: 1,100 to 2,200 instructions a request, make bench-layers
        self._ids = itertools.count(secrets.randbits(80) << 48)

    def __call__(
        self, environ: WSGIEnvironment, start_response: StartResponse
    ) -> Iterable[bytes]:
        request_id = environ.get("HTTP_X_REQUEST_ID")
        if not request_id or not self._VALID.fullmatch(request_id):
            request_id = next(self._ids).to_bytes(16, "big").hex()
        environ[REQUEST_ID] = request_id
        traceparent = environ.get("HTTP_TRACEPARENT")
        environ[TRACE_ID] = trace_id(traceparent) if traceparent else None
        added, start = response_headers(environ, start_response)
        added += ("X-Request-Id", request_id), _NOSNIFF
        return self.app(environ, start)


_NOSNIFF = ("X-Content-Type-Options", "nosniff")


def _nothing() -> None:
    """What a fork runs for a ``RequestId`` gone since."""
