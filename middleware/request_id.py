"""Request ids: every request gets one, every answer and log line carries it."""

from __future__ import annotations

import itertools
import os
import re
import secrets
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

# The list of headers every layer adds to; RequestId appends it to the answer.
RESPONSE_HEADERS = "refapi.response_headers"


class RequestId:
    """Give every request an id, echo it as ``X-Request-Id``, and log with it.

    An inbound ``X-Request-Id`` of 1-128 characters from ``[A-Za-z0-9._-]`` is kept,
    so a trace that began upstream continues here; anything else is replaced, so a
    client cannot inject text into our logs. The id is in ``environ`` as
    ``refapi.request_id`` for the host and the layers below. This layer also starts
    the request's list of response headers and adds it to whatever answer comes back.
    """

    _VALID = re.compile(r"[A-Za-z0-9._-]{1,128}")

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app
        self._pid = 0
        self._prefix = ""
        self._counter = itertools.count()

    def _new_id(self) -> str:
        # A random prefix per process and a counter: unique without a syscall each.
        if self._pid != os.getpid():
            self._pid, self._prefix = os.getpid(), secrets.token_hex(10)
        return f"{self._prefix}{next(self._counter):012x}"

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse):
        request_id = environ.get("HTTP_X_REQUEST_ID", "")
        if not self._VALID.fullmatch(request_id):
            request_id = self._new_id()
        environ["refapi.request_id"] = request_id
        added = environ[RESPONSE_HEADERS] = [
            ("X-Request-Id", request_id),
            ("X-Content-Type-Options", "nosniff"),
        ]

        def start(status, headers, exc_info=None):
            headers.extend(added)
            return start_response(status, headers, exc_info)

        return self.app(environ, start)
