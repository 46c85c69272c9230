"""The error family: every failure the API reports is one of these.

An error is raised anywhere (a handler, the body reader, a middleware) and rendered
in one place, ``error_response``, as the error object of the specification::

    {"code": "UPPER_SNAKE", "message": "human text", "details": {...}}

4xx means the client must change the request; 5xx means the server failed (RFC 9110
section 15). Werkzeug's own routing exceptions (404, 405 with ``Allow``) are turned
into the same shape by ``from_http_exception``.
"""

from __future__ import annotations

from typing import Any

from werkzeug.exceptions import HTTPException


class ApiError(Exception):
    status = 500
    code = "INTERNAL_ERROR"
    message = "The server failed to handle the request."

    def __init__(
        self,
        message: str | None = None,
        details: dict[str, Any] | None = None,
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        super().__init__(message or self.message)
        self.message = message or self.message
        self.details = details or {}
        self.headers = headers or []

    def body(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}


class InvalidJson(ApiError):
    status, code = 400, "INVALID_JSON"
    message = "The request body is not valid JSON."


class MalformedRequest(ApiError):
    status, code = 400, "MALFORMED_REQUEST"
    message = "The request's framing is broken: its body did not arrive whole."


class ValidationError(ApiError):
    status, code = 400, "VALIDATION_ERROR"
    message = "The request is not valid."
    MAX_ERRORS = 50  # a longer list is cut, with "truncated": true

    def __init__(self, errors: list[dict[str, str]]) -> None:
        details: dict[str, Any] = {"errors": errors[: self.MAX_ERRORS]}
        if len(errors) > self.MAX_ERRORS:
            details["truncated"] = True
        super().__init__(details=details)

    @classmethod
    def one(cls, field: str, message: str) -> ValidationError:
        return cls([{"field": field, "message": message}])


class UnknownAction(ApiError):
    status, code = 400, "UNKNOWN_ACTION"

    def __init__(self, allowed: list[str]) -> None:
        super().__init__(
            f"The query parameter action must be one of: {', '.join(allowed)}.",
            details={"allowed": allowed},
        )


class InvalidCursor(ApiError):
    status, code = 400, "INVALID_CURSOR"
    message = "The cursor was not issued by this server for this collection."


class NotFound(ApiError):
    status, code = 404, "NOT_FOUND"
    message = "The requested resource was not found."


class MethodNotAllowed(ApiError):
    status, code = 405, "METHOD_NOT_ALLOWED"
    message = "The method is not allowed for this resource."

    def __init__(self, allowed: list[str]) -> None:
        allow = ", ".join(sorted(allowed))
        super().__init__(
            details={"allowed": sorted(allowed)}, headers=[("Allow", allow)]
        )


class NotAcceptable(ApiError):
    status, code = 406, "NOT_ACCEPTABLE"
    message = "None of the representations in Accept can be served."


class PreconditionFailed(ApiError):
    status, code = 412, "PRECONDITION_FAILED"
    message = "If-Match does not match the current representation."


class PayloadTooLarge(ApiError):
    status, code = 413, "PAYLOAD_TOO_LARGE"
    message = "The request body is larger than the limit."

    def __init__(self, limit: int) -> None:
        super().__init__(details={"maxBytes": limit})


class UnsupportedMediaType(ApiError):
    status, code = 415, "UNSUPPORTED_MEDIA_TYPE"
    message = "The request body must be sent as JSON."

    def __init__(self, accepted: tuple[str, ...]) -> None:
        super().__init__(
            f"The request body must be sent as {' or '.join(accepted)}.",
            details={"accepted": list(accepted)},
        )


class Unavailable(ApiError):
    status, code = 503, "UNAVAILABLE"
    message = "The storage is unavailable; try again later."
    # RFC 9110 section 10.2.3: how long to stay away. As long as the store waits
    # for a held lock, so retrying clients do not pile up on a busy worker.
    retry_after = 5

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message, headers=[("Retry-After", str(self.retry_after))])


def from_http_exception(exc: HTTPException) -> ApiError:
    """Translate Werkzeug's routing and request errors into the error family."""
    if exc.code == 405:
        return MethodNotAllowed(list(getattr(exc, "valid_methods", None) or []))
    if exc.code == 404:
        return NotFound()
    error = ApiError(exc.description)
    error.status = exc.code or 500
    error.code = (exc.name or "Internal Error").upper().replace(" ", "_")
    return error


class RateLimited(ApiError):
    status, code = 429, "RATE_LIMITED"
    message = "Too many requests; retry after the time given."

    def __init__(self, retry_after: int) -> None:
        super().__init__(
            details={"retry_after": retry_after},
            headers=[("Retry-After", str(retry_after))],
        )


class IdempotencyKeyRequired(ApiError):
    status, code = 400, "IDEMPOTENCY_KEY_REQUIRED"
    message = "POST /v1/payments needs an Idempotency-Key header."


class IdempotencyKeyInvalid(ApiError):
    status, code = 400, "IDEMPOTENCY_KEY_INVALID"
    message = "Idempotency-Key must be 1-255 printable ASCII characters."


class IdempotencyKeyReused(ApiError):
    status, code = 422, "IDEMPOTENCY_KEY_REUSED"
    message = "This Idempotency-Key was used with a different request body."


class HostNotAllowed(ApiError):
    status, code = 403, "HOST_NOT_ALLOWED"
    message = "The proxy may not fetch from this host."


class UpstreamError(ApiError):
    status, code = 502, "UPSTREAM_ERROR"
    message = "The upstream server could not be used."


class UpstreamTimeout(ApiError):
    status, code = 504, "UPSTREAM_TIMEOUT"
    message = "The upstream server did not answer in time."
