"""Observe: what an operator sees of each request, one log line and its metrics."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from ..logs import REQUEST_LOGGER, RequestLines, report
from ..metrics import AS_RATE_LIMITED, AS_REPLAY, AS_STORAGE_FAULT
from ..web.environ import (
    ANSWER,
    BUCKET_KEY,
    PROXIED,
    RATE_LIMITED,
    REQUEST_ID,
    RESPONSE_HEADERS,
    ROUTE,
    STORAGE_FAULT,
    TRACE_ID,
)
from ..web.statuses import STATUS_CODES
from .headers import response_headers

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

    from ..metrics import Metrics


class Observe:
    """Log one line per request and count it (docs/operating.md, "Logs" and
    "Metrics").

    The line is written once the answer is made, with the request id, the trace id
    of a valid ``traceparent``, the method, the route's template (so
    ``/v1/articles/7`` and ``/v1/articles/8`` group together; None when no route
    matched), the status, the milliseconds taken, the body's bytes and the caller:
    ``user:7`` or ``client:2`` as authentication found it, else None. Never a
    credential: the caller is an id, and the path is logged without its query.
    Every line is at level ``info``, a 500's too: why it failed is logged by the
    layer that knows (``Errors``: the traceback at ``error``, a storage outage at
    ``warning``), under the same request id.

    The line is a record on ``log`` (``refapi.request``), whose level turns it on
    and off; with ``lines`` (``logs.request_lines()``: the app's, when it set
    logging up itself) it is written by that, from a template in one ``write()``,
    and costs a sixth (``logs.py``). With ``metrics`` (``REFAPI_METRICS`` set), the
    request is also counted under its ``mount`` (``SCRIPT_NAME``), route, method
    and status.

    Reads, each with a default when its layer is not there: ``refapi.request_id``
    and ``refapi.trace_id`` (``RequestId``), ``refapi.bucket_key`` (``Authenticate``),
    ``refapi.route`` (the router), ``refapi.storage_fault`` (``Errors``) and
    ``refapi.rate_limited`` (``RateLimit``); so it goes outside them all. The
    answer's status and headers it reads from ``refapi.answer``, which the
    headers' list's ``start_response`` writes (``middleware/headers.py``): it
    starts that list when no layer outside did, and writes nothing else. It needs
    no other layer: around a host's own app it logs and counts with those fields
    null. An answer that is not a list (a host's streamed body) is reported when
    the server closes it.
    """

    def __init__(
        self,
        app: WSGIApplication,
        *,
        log: logging.Logger | None = None,
        lines: RequestLines | None = None,
        metrics: Metrics | None = None,
        timer: Callable[[], float] = time.perf_counter,
        logged_path: Callable[[str], str] | None = None,
    ) -> None:
        self.app = app
        self.log = log or logging.getLogger(REQUEST_LOGGER)
        self.lines = lines
        self.metrics = metrics
        self.timer = timer
        # What a line writes of PATH_INFO, when a path may hold a credential (the
        # lab's: lab/__init__.py, logged_paths); else the path as it is.
        self.logged_path = logged_path

    def __call__(
        self, environ: WSGIEnvironment, start_response: StartResponse
    ) -> Iterable[bytes]:
        started = self.timer()
        # The answer as the headers' list's start_response writes it (headers.py).
        # PERF: no call below a layer that started it, 1,200 instructions a
        # request, make bench-instructions
        start = start_response
        if environ.get(RESPONSE_HEADERS) is None:
            _, start = response_headers(environ, start_response)
        try:
            body = self.app(environ, start)
        except Exception:
            self.done(environ, started, 0, failed=True)
            raise
        if isinstance(body, (list, tuple)):  # every answer of the app itself
            # PERF: one chunk's length without sum() and map(), 1,300
            # instructions a request, make bench-instructions
            size = len(body[0]) if len(body) == 1 else sum(map(len, body))
            self.done(environ, started, size)
            return body
        return _Counted(body, self, environ, started)

    def done(
        self,
        environ: WSGIEnvironment,
        started: float,
        size: int,
        failed: bool = False,
    ) -> None:
        """Log and count the request, whose answer ``environ[ANSWER]`` holds."""
        seconds = self.timer() - started
        answer = None if failed else environ.get(ANSWER)
        # The code of a line of refapi's own looked up; a host's line read.
        status = (STATUS_CODES.get(answer[0]) or int(answer[0][:3])) if answer else 500
        method = environ.get("REQUEST_METHOD", "")
        route = environ.get(ROUTE)
        caller = environ.get(BUCKET_KEY)
        # What else it counts as, at most one (metrics.py, AS_REPLAY). A storage
        # fault is answered 503 and a refusal 429: no other answer asks for their
        # marks (PERF: 600 instructions a request, make bench-instructions).
        counted_as = ""
        if status == 503 and environ.get(STORAGE_FAULT):
            counted_as = AS_STORAGE_FAULT
        elif status == 429 and environ.get(RATE_LIMITED):
            counted_as = AS_RATE_LIMITED
        elif (
            method == "POST" and answer and ("Idempotent-Replayed", "true") in answer[1]
        ):
            counted_as = AS_REPLAY
        path, script = environ.get("PATH_INFO", ""), environ.get("SCRIPT_NAME", "")
        if self.logged_path is not None:
            path = self.logged_path(path)
        # The mount as web/environ.mount_of reads it (a trusted proxy's prefix is
        # no mount), here without the call.
        # PERF: about 500 instructions a request, make bench-layers
        proxied = environ.get(PROXIED)
        mount = script if proxied is None else proxied.get("SCRIPT_NAME") or ""
        # By position, in logs.report's order.
        report(
            self.log, self.metrics, environ.get(REQUEST_ID), environ.get(TRACE_ID),
            method, script + path, route, status, seconds, size,
            caller if caller and not caller.startswith("addr:") else None,
            mount, counted_as, failed, self.lines,
        )  # fmt: skip


class _Counted:
    """A body that is not a list (a host's streamed answer): count its bytes as
    they go out, and report once the server closes it (PEP 3333)."""

    def __init__(
        self,
        body: Iterable[bytes],
        observe: Observe,
        environ: WSGIEnvironment,
        started: float,
    ) -> None:
        self.body, self.observe, self.environ = body, observe, environ
        self.started, self.size = started, 0

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.body:
            self.size += len(chunk)
            yield chunk

    def close(self) -> None:
        try:
            close = getattr(self.body, "close", None)
            if close is not None:
                close()
        finally:
            self.observe.done(self.environ, self.started, self.size)
