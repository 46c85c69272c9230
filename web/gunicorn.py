"""gunicorn's own refusals, answered as the error object.

gunicorn reads the request line and the header fields before the application runs,
and refuses what it cannot frame safely (RFC 9112) by itself, with an HTML page and
none of our headers. ``SyncWorker`` is gunicorn's sync worker with its one hook for
this, ``handle_error``, overridden (``worker_class`` in ``gunicorn.conf.py`` names
it), so those answers are the error object like every other:

    request line over ``limit_request_line``         414 URI_TOO_LONG
    more fields than ``limit_request_fields``, or
    one over ``limit_request_field_size``            431 REQUEST_HEADER_FIELDS_TOO_LARGE
    a transfer coding gunicorn does not know         501 NOT_IMPLEMENTED
    an ``Expect`` other than ``100-continue``        417 EXPECTATION_FAILED
    a PROXY line from an address not allowed, or
    a failed TLS handshake                           403 FORBIDDEN
    any other unreadable request: request line,      400 MALFORMED_REQUEST
    field syntax, two ``Content-Length`` fields,
    ``Content-Length`` with chunked, bad chunks
    anything else (gunicorn caught an error)         500 INTERNAL_ERROR

The statuses are gunicorn's, except that every unreadable request is a 400 (gunicorn
answers a bad PROXY header with a 500); each code is the status's name in RFC 9110
(RFC 6585 for 431) in upper snake case, as PAYLOAD_TOO_LARGE is.

Nothing of a request that could not be read is trusted: the answer gets a new
``X-Request-Id`` (logged with gunicorn's warning), ``nosniff``, and
``Access-Control-Allow-Origin: *`` when every origin is allowed; with a list of
origins, the asking origin is unknown and none is named. The connection is closed
after the answer: what follows on it cannot be framed.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from ssl import SSLError
from typing import Any

from gunicorn import util
from gunicorn.http import errors as refused
from gunicorn.http.message import Message
from gunicorn.http.wsgi import Response as AccessLogEntry
from gunicorn.http.wsgi import default_environ
from gunicorn.workers import sync

from ..config import Config
from ..errors import (
    ApiError,
    MalformedRequest,
    RequestHeaderFieldsTooLarge,
    UriTooLong,
)
from ..middleware.cors import Cors
from .wsgi import JSON_TYPE, STATUS_LINES, json_bytes

REASON_CHARS = 200  # of gunicorn's reason, which may quote the request
APPLICATION_FAULTS = (refused.InvalidResponseHeader, refused.InvalidResponseHeaderName)


def _error(status: int, code: str, message: str, **details: Any) -> ApiError:
    error = ApiError(message, details)
    error.status, error.code = status, code
    return error


def refusal(exc: BaseException, cfg: Any) -> ApiError | None:
    """The error object for a request gunicorn refused; None for any other error."""
    if isinstance(exc, refused.LimitRequestLine):
        return UriTooLong(cfg.limit_request_line)
    if isinstance(exc, refused.LimitRequestHeaders):
        return RequestHeaderFieldsTooLarge(
            cfg.limit_request_fields, cfg.limit_request_field_size
        )
    if isinstance(exc, refused.UnsupportedTransferCoding):
        return _error(
            501, "NOT_IMPLEMENTED", "The transfer coding is not supported.",
            supported=["chunked"],
        )  # fmt: skip
    if isinstance(exc, refused.ExpectationFailed):
        return _error(417, "EXPECTATION_FAILED", "Only 100-continue is expected.")
    if isinstance(exc, refused.ForbiddenProxyRequest | SSLError):
        return _error(403, "FORBIDDEN", "The connection is not allowed.")
    # A header the application tried to send is its own fault, not the request's.
    if isinstance(exc, APPLICATION_FAULTS):
        return None
    if isinstance(exc, refused.ParseException):
        return MalformedRequest(
            "The request could not be read as HTTP/1.1.",
            details={"reason": str(exc)[:REASON_CHARS]},
        )
    return None


class SyncWorker(sync.SyncWorker):
    """gunicorn's sync worker, answering what gunicorn refuses as the error object."""

    def _cors(self) -> list[tuple[str, str]]:
        # The instance's own configuration when gunicorn serves an App, else the
        # environment's, as create_app() would read it.
        config = getattr(self.wsgi, "config", None)
        if not isinstance(config, Config):
            config = Config.from_env()
        if "*" not in config.cors_origins:
            return []
        return [
            ("Access-Control-Allow-Origin", "*"),
            ("Access-Control-Expose-Headers", Cors.EXPOSED),
        ]

    def handle_error(
        self, req: Any, client: Any, addr: Any, exc: BaseException
    ) -> None:
        started = datetime.now()
        addr = addr or ("", -1)  # a Unix socket has no address
        request_id = secrets.token_hex(16)
        error = refusal(exc, self.cfg)
        if error is None:
            self.log.exception("Error handling request [request_id=%s]", request_id)
            error = ApiError()
        else:
            self.log.warning(
                "Invalid request from ip=%s: %s [request_id=%s]",
                addr[0], exc, request_id,
            )  # fmt: skip
        body = json_bytes(error.body())
        status = STATUS_LINES[error.status]
        headers = [
            ("Content-Type", JSON_TYPE),
            ("Content-Length", str(len(body))),
            ("Connection", "close"),
            ("X-Request-Id", request_id),
            ("X-Content-Type-Options", "nosniff"),
            *self._cors(),
        ]
        if req is None and isinstance(getattr(exc, "req", None), Message):
            req = exc.req  # type: ignore[attr-defined]  # read up to a bad header
        if req is not None:  # as gunicorn does: no access log line without a request
            entry = AccessLogEntry(req, client, self.cfg)
            entry.status, entry.headers = status, headers
            entry.response_length = entry.sent = len(body)
            self._log_access(entry, req, client, addr, started)
        head = f"HTTP/1.1 {status}\r\n"
        head += "".join(f"{name}: {value}\r\n" for name, value in headers)
        try:
            util.write_nonblock(client, (head + "\r\n").encode("latin-1") + body)
        except Exception:
            self.log.debug("Failed to send the error answer.")

    def _log_access(
        self, entry: Any, req: Any, client: Any, addr: Any, started: datetime
    ) -> None:
        environ = default_environ(req, client, self.cfg)
        environ["REMOTE_ADDR"], environ["REMOTE_PORT"] = addr[0], str(addr[1])
        self.log.access(entry, req, environ, datetime.now() - started)
