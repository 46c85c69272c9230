"""The error family: every failure the API reports is one of these.

An error is raised anywhere (a handler, the body reader, a middleware) and rendered
in one place, ``error_response``, as the error object (docs/api.md, "Errors")::

    {"code": "UPPER_SNAKE", "message": "human text", "details": {...}}

4xx means the client must change the request; 5xx means the server failed (RFC 9110
section 15). Werkzeug's own routing exceptions (404, 405 with ``Allow``) are turned
into the same shape by ``from_http_exception``.
"""

from __future__ import annotations

from typing import Any, TypeVar

from werkzeug.exceptions import HTTPException

Header = tuple[str, str]

# No cache, private or shared, may keep the answer (RFC 9111 section 5.2.2.5). Sent
# on every answer that carries or depends on a credential (which rows' answers
# those are, ``Route.no_store`` says; the router adds it), and by the errors that
# are the caller's own, a 401 or a 429, whatever the route (in their headers below).
NO_STORE: Header = ("Cache-Control", "no-store")


class ApiError(Exception):
    status = 500
    code = "INTERNAL_ERROR"
    message = "The server failed to handle the request."
    # The headers an answer of the class always carries: ``fixed_headers``, the same
    # on every answer, and ``computed_headers``, whose values its constructor works
    # out and passes as ``headers``. ``carries`` names them all, made from those two
    # (never written by hand); ``may_carry``, those it sometimes adds. The OpenAPI
    # document reads them (tests/test_errors.py holds them to the code).
    fixed_headers: tuple[Header, ...] = ()
    computed_headers: tuple[str, ...] = ()
    carries: tuple[str, ...] = ()
    may_carry: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.carries = (*cls.computed_headers, *(name for name, _ in cls.fixed_headers))

    def __init__(
        self,
        message: str | None = None,
        details: dict[str, Any] | None = None,
        headers: list[Header] | None = None,
    ) -> None:
        super().__init__(message or self.message)
        self.message = message or self.message
        self.details = details or {}
        self.headers = [*(headers or ()), *self.fixed_headers]

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


class Unauthenticated(ApiError):
    """401 with the challenge RFC 6750 asks for; ``invalid_token`` when a token or
    key was sent and refused, ``invalid_request`` when the credentials sent cannot be
    read as one (section 3.1), and a ``Set-Cookie`` clearing a stale session."""

    status, code = 401, "UNAUTHENTICATED"
    message = "This needs a valid Bearer token, API key or session."
    computed_headers, fixed_headers = ("WWW-Authenticate",), (NO_STORE,)
    may_carry = ("Set-Cookie",)

    def __init__(
        self,
        message: str | None = None,
        *,
        invalid: bool = False,
        malformed: bool = False,
        clear_cookie: str | None = None,
    ) -> None:
        challenge = 'Bearer realm="refapi"'
        if malformed:
            challenge += ', error="invalid_request"'
        elif invalid:
            challenge += ', error="invalid_token"'
        super().__init__(message, headers=[("WWW-Authenticate", challenge)])
        if clear_cookie:
            self.headers.append(("Set-Cookie", clear_cookie))


class InvalidCredentials(ApiError):
    status, code = 401, "INVALID_CREDENTIALS"
    message = "The email or the password is wrong."
    fixed_headers = (("WWW-Authenticate", 'Bearer realm="refapi"'), NO_STORE)


class OAuthError(ApiError):
    """An error of the token endpoint, in RFC 6749's words (section 5.2) beside ours:
    ``error`` and ``error_description`` (``code`` is ``error`` in upper case), with
    ``Pragma: no-cache`` as section 5.1 asks (the router adds ``no-store``)."""

    status = 400
    error: str  # RFC 6749's name for it
    fixed_headers: tuple[Header, ...] = (("Pragma", "no-cache"),)

    def body(self) -> dict[str, Any]:
        return {
            **super().body(),
            "error": self.error,
            "error_description": self.message,
        }


class InvalidRequest(OAuthError):
    code, error = "INVALID_REQUEST", "invalid_request"
    message = "The token request is missing a parameter or is malformed."


class InvalidClient(OAuthError):
    """401 with a Basic challenge, however the client authenticated: RFC 9110
    (section 15.5.2) wants one on every 401, and RFC 6749 (section 5.2) allows it
    where it does not ask for it (a client that sent its secret in the form)."""

    status, code, error = 401, "INVALID_CLIENT", "invalid_client"
    message = "Client authentication failed."
    fixed_headers = (
        *OAuthError.fixed_headers,
        ("WWW-Authenticate", 'Basic realm="refapi"'),
    )


class UnsupportedGrantType(OAuthError):
    code, error = "UNSUPPORTED_GRANT_TYPE", "unsupported_grant_type"
    message = "The only grant type served is client_credentials."


class InvalidScope(OAuthError):
    code, error = "INVALID_SCOPE", "invalid_scope"
    message = "This service defines no scopes: send the request without one."


class Forbidden(ApiError):
    status, code = 403, "FORBIDDEN"
    message = "You are not allowed to do this."


class CsrfFailed(ApiError):
    status, code = 403, "CSRF_FAILED"
    message = "A request made with the session cookie needs a valid X-CSRF-Token."


class Conflict(ApiError):
    status, code = 409, "CONFLICT"
    message = "The value is already taken."


class NotFound(ApiError):
    status, code = 404, "NOT_FOUND"
    message = "The requested resource was not found."


Found = TypeVar("Found")


# What a client sent is quoted in an error by at most this many characters, then
# "…": an error does not echo a megabyte back (docs/api.md, "Errors").
MAX_QUOTED_CHARS = 100


def quoted(text: str) -> str:
    """``text`` as an error quotes it: cut to ``MAX_QUOTED_CHARS``."""
    return text if len(text) <= MAX_QUOTED_CHARS else text[:MAX_QUOTED_CHARS] + "…"


def found(result: Found | None, name: str, id: object) -> Found:
    """``result``, unless the store found nothing (``None``, or ``False`` from a
    delete): then ``404 NOT_FOUND``, "Article 7 does not exist."."""
    if result is None or result is False:
        raise NotFound(f"{name} {quoted(str(id))} does not exist.")
    return result


class MethodNotAllowed(ApiError):
    status, code = 405, "METHOD_NOT_ALLOWED"
    message = "The method is not allowed for this resource."
    computed_headers = ("Allow",)

    def __init__(self, allowed: list[str]) -> None:
        allow = ", ".join(sorted(allowed))
        super().__init__(
            details={"allowed": sorted(allowed)}, headers=[("Allow", allow)]
        )


class NotAcceptable(ApiError):
    """Refused for what ``Accept`` asks, so the answer depends on it (RFC 9110
    section 12.5.5)."""

    status, code = 406, "NOT_ACCEPTABLE"
    message = "None of the representations in Accept can be served."
    fixed_headers = (("Vary", "Accept"),)


class PreconditionFailed(ApiError):
    status, code = 412, "PRECONDITION_FAILED"
    message = "If-Match does not match the current representation."


class PayloadTooLarge(ApiError):
    """A body over its route's limit, in bytes (docs/api.md, "Request bodies")."""

    status, code = 413, "PAYLOAD_TOO_LARGE"
    message = "The request body is larger than the limit."

    def __init__(self, limit: int) -> None:
        super().__init__(details={"limit": limit})


class RequestTimeout(ApiError):
    """The request (its head or its body) did not arrive within the server's
    deadline (serving/gunicorn.py): a client that stalls or trickles is cut off."""

    status, code = 408, "REQUEST_TIMEOUT"
    message = "The request did not arrive in time."


class UriTooLong(ApiError):
    """Refused by gunicorn before the application runs (serving/gunicorn.py)."""

    status, code = 414, "URI_TOO_LONG"
    message = "The request line is longer than the limit."

    def __init__(self, limit: int) -> None:
        super().__init__(details={"maxBytes": limit})


class RequestHeaderFieldsTooLarge(ApiError):
    """Refused by gunicorn before the application runs (serving/gunicorn.py)."""

    status, code = 431, "REQUEST_HEADER_FIELDS_TOO_LARGE"
    message = "The request has more header fields, or a longer one, than the limit."

    def __init__(self, max_fields: int, max_field_bytes: int) -> None:
        super().__init__(
            details={"maxFields": max_fields, "maxFieldBytes": max_field_bytes}
        )


class UnsupportedMediaType(ApiError):
    status, code = 415, "UNSUPPORTED_MEDIA_TYPE"
    message = "The request body must be sent as JSON."

    def __init__(self, accepted: tuple[str, ...], coding: str | None = None) -> None:
        message = f"The request body must be sent as {' or '.join(accepted)}."
        if coding is not None:  # RFC 9110, 15.5.16: a content coding not supported
            message = (
                f"The request body must be sent without a content coding"
                f" ({quoted(coding)} is not supported)."
            )
        super().__init__(message, details={"accepted": list(accepted)})


class Unavailable(ApiError):
    status, code = 503, "UNAVAILABLE"
    message = "The storage is unavailable; try again later."
    computed_headers = ("Retry-After",)
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
    # The refusal is the caller's own (its bucket, of its credential or address):
    # no cache may keep it for another.
    computed_headers, fixed_headers = ("Retry-After",), (NO_STORE,)

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


class IdempotencyKeyInUse(ApiError):
    """The first request with this key is still storing what it made and did
    not finish within the store's short wait (docs/api.md, "Idempotent
    creates"): the store raised ``KeyInUse``."""

    status, code = 409, "IDEMPOTENCY_KEY_IN_USE"
    message = "A request with this Idempotency-Key is still being processed."
    computed_headers = ("Retry-After",)

    def __init__(self, retry_after: int = 1) -> None:
        super().__init__(headers=[("Retry-After", str(retry_after))])


class IdempotencyKeyReused(ApiError):
    status, code = 422, "IDEMPOTENCY_KEY_REUSED"
    message = "This Idempotency-Key was used with a different request body."


class HostNotAllowed(ApiError):
    status, code = 403, "HOST_NOT_ALLOWED"
    message = "The proxy may not fetch from this host."


class UpstreamError(ApiError):
    status, code = 502, "UPSTREAM_ERROR"
    message = "The upstream server could not be used."


class Busy(ApiError):
    """The host's share of slow work is taken (docs/operating.md, "Slow work shares
    the host"): the proxy and the explainer answer at once rather than hold the
    last slot, the one that answers everyone else."""

    status, code = 503, "BUSY"
    message = (
        "The server's share of slow work (proxy fetches, explanations, the lab's"
        " slow answers) is taken; retry in a second."
    )
    fixed_headers = (("Retry-After", "1"),)


class UpstreamTimeout(ApiError):
    status, code = 504, "UPSTREAM_TIMEOUT"
    message = "The upstream server did not answer in time."


class LoopDetected(ApiError):
    """The proxy's request came back to the proxy: it carries this service's own
    pseudonym in ``Via`` (RFC 9110 section 7.6.3), so fetching again would go round
    until the URL ran out, a worker held at every turn. 508 is RFC 5842's (section
    7.2), for the same thing in WebDAV."""

    status, code = 508, "LOOP_DETECTED"
    message = "The request already passed through this service's proxy."
