"""Errors: one place turns every exception from below into the error object."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from werkzeug.exceptions import HTTPException

from ..errors import ApiError, RateLimited, Unavailable, from_http_exception
from ..logs import printable_path
from ..storage import StorageUnavailable
from ..web import error_response
from ..web.environ import RATE_LIMITED, REQUEST_ID, STORAGE_FAULT, TRACE_ID

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

log = logging.getLogger("refapi")


class Errors:
    """Render every exception from the layers below as the error object.

    API errors keep their status; Werkzeug's routing errors (404, 405 with ``Allow``)
    are translated; a store that cannot serve now (``StorageUnavailable``: missing,
    unwritable, locked past its short wait) is 503 with ``Retry-After``, its cause
    logged; anything else is a 500 whose body says nothing of the cause and whose
    traceback goes to the log with the request id (in the line, and as the field
    ``requestId``, beside ``traceId``, as the request's own line has them).

    Reads ``refapi.request_id`` and ``refapi.trace_id`` for its log lines when
    ``RequestId`` is outside it (``None`` without it); writes
    ``refapi.storage_fault`` (True) when it answers 503 for a storage fault, and
    ``refapi.rate_limited`` (True) when it answers a ``429 RATE_LIMITED`` raised
    below (a bucket a handler passes, a login's failures), for ``Observe`` to
    count. It needs no other layer. Its answers
    get the request's response headers only when a layer outside it started the list
    (``middleware/headers.py``); one started inside it is lost with the exception,
    which is why ``app.py`` puts ``RequestId`` and CORS outside it.
    """

    # A failure anywhere below: unknown (500), or of the storage (503).
    raises = (ApiError, Unavailable)

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app

    def __call__(
        self, environ: WSGIEnvironment, start_response: StartResponse
    ) -> Iterable[bytes]:
        try:
            return self.app(environ, start_response)
        except ApiError as error:
            if isinstance(error, RateLimited):  # a handler's 429 (a login's failures)
                environ[RATE_LIMITED] = True  # a refusal, for Observe to count
            response = error_response(error)
        except HTTPException as exc:
            response = error_response(from_http_exception(exc))
        except StorageUnavailable as exc:
            request_id = environ.get(REQUEST_ID)
            log.warning(
                "storage unavailable [request_id=%s]: %s", request_id, exc,
                extra={"requestId": request_id, "traceId": environ.get(TRACE_ID)},
            )  # fmt: skip
            environ[STORAGE_FAULT] = True
            response = error_response(Unavailable())
        except Exception:
            request_id = environ.get(REQUEST_ID)
            log.exception(
                "unhandled error [request_id=%s] %s %s",
                request_id,
                environ.get("REQUEST_METHOD"),
                printable_path(environ.get("PATH_INFO", "")),
                extra={"requestId": request_id, "traceId": environ.get(TRACE_ID)},
            )
            response = error_response(ApiError())
        return response(environ, start_response)
