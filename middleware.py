"""The middleware stack: small WSGI classes, each owning one cross-cutting concern.

Each takes the application it wraps and its options, precomputes what it can, and in
``__call__`` runs a short series of early returns. ``app.py`` assembles them.

Headers a layer adds to the answer go into one list, ``environ[RESPONSE_HEADERS]``,
which ``RequestId``, the outermost layer, creates and appends to whatever answer
comes back: a handler's, a rendered error's or a preflight's. So no layer needs to
wrap ``start_response`` or catch errors just to add its headers.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
import re
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING

from werkzeug.exceptions import HTTPException

from errors import (
    ApiError,
    NotAcceptable,
    RateLimited,
    Unavailable,
    from_http_exception,
)
from storage import StorageUnavailable
from web import JSON_TYPE, error_response

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

log = logging.getLogger("refapi")
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


class Errors:
    """Render every exception from the layers below as the error object.

    API errors keep their status; Werkzeug's routing errors (404, 405 with ``Allow``)
    are translated; an unreachable store is 503; anything else is a 500 whose body
    says nothing of the cause and whose traceback goes to the log with the request id.
    """

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse):
        try:
            return self.app(environ, start_response)
        except ApiError as error:
            response = error_response(error)
        except HTTPException as exc:
            response = error_response(from_http_exception(exc))
        except StorageUnavailable:
            log.warning(
                "storage unavailable [request_id=%s]", environ.get("refapi.request_id")
            )
            response = error_response(Unavailable())
        except Exception:
            log.exception(
                "unhandled error [request_id=%s] %s %s",
                environ.get("refapi.request_id"),
                environ.get("REQUEST_METHOD"),
                environ.get("PATH_INFO"),
            )
            response = error_response(ApiError())
        return response(environ, start_response)


class Cors:
    """Cross-Origin Resource Sharing (the Fetch standard) for browser clients.

    A preflight (``OPTIONS`` with ``Access-Control-Request-Method``) is answered here
    with ``204`` and what may be sent, cached for ``Max-Age`` seconds; it never
    reaches the rate limit or the router. Every other response to a request with an
    ``Origin`` gets ``Access-Control-Allow-Origin`` and the list of response headers
    a script may read (``Expose-Headers``). With ``*`` no credentials are allowed;
    with a list of origins, the matching origin is echoed and ``Vary: Origin`` tells
    caches the answer depends on it.
    """

    METHODS = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
    REQUEST_HEADERS = (
        "Authorization, Content-Type, Idempotency-Key, X-Request-Id, X-API-Key, "
        "X-CSRF-Token, If-Match, If-None-Match, Accept"
    )
    EXPOSED = (
        "X-Next-Cursor, Retry-After, X-Request-Id, ETag, Location, Link, RateLimit, "
        "RateLimit-Policy, Idempotent-Replayed"
    )

    def __init__(self, app: WSGIApplication, *, origins: tuple[str, ...]) -> None:
        self.app = app
        self.any_origin = "*" in origins
        self.origins = frozenset(origins)
        self.vary = [] if self.any_origin else [("Vary", "Origin")]
        self.preflight = [
            ("Access-Control-Allow-Methods", self.METHODS),
            ("Access-Control-Allow-Headers", self.REQUEST_HEADERS),
            ("Access-Control-Max-Age", "600"),
        ]
        self.expose = ("Access-Control-Expose-Headers", self.EXPOSED)

    def _allow(self, origin: str) -> list[tuple[str, str]]:
        if self.any_origin:
            return [("Access-Control-Allow-Origin", "*")]
        if origin in self.origins:
            return [("Access-Control-Allow-Origin", origin), *self.vary]
        return list(self.vary)

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse):
        origin = environ.get("HTTP_ORIGIN")
        if origin is None:
            environ[RESPONSE_HEADERS].extend(self.vary)
            return self.app(environ, start_response)
        allow = self._allow(origin)
        allowed = len(allow) > len(self.vary)
        if (
            environ["REQUEST_METHOD"] == "OPTIONS"
            and "HTTP_ACCESS_CONTROL_REQUEST_METHOD" in environ
        ):
            if allowed:
                allow += self.preflight
            start_response("204 No Content", allow)
            return []
        if allowed:
            allow.append(self.expose)
        environ[RESPONSE_HEADERS].extend(allow)
        return self.app(environ, start_response)


class RateLimit:
    """A token bucket per caller (the specification's model), shared by all workers.

    The caller is identified here, once, and recorded as ``refapi.caller`` for the
    layers below (payments scope idempotency keys by it): for now the client address,
    ``REMOTE_ADDR`` (rewritten from ``X-Forwarded-For`` only when ``ProxyFix`` is
    configured to trust a proxy). Every limited response carries the IETF fields of
    draft-ietf-httpapi-ratelimit-headers-11::

        RateLimit-Policy: "default";q=<capacity>;w=<seconds to refill fully>
        RateLimit: "default";r=<tokens remaining>;t=<seconds until one is back>

    An empty bucket is ``429 RATE_LIMITED`` with ``Retry-After`` (RFC 9110 section
    10.2.3, whole seconds rounded up) and the same number in ``details.retry_after``.
    A refused request takes no token. The health check is never limited, so a load
    balancer's probes cannot be starved.
    """

    def __init__(
        self,
        app: WSGIApplication,
        *,
        take: Callable[[str, int, float, float], tuple[bool, float]],
        capacity: int,
        refill: float,
        clock: Callable[[], float],
        exempt: frozenset[str] = frozenset({"/healthz"}),
    ) -> None:
        self.app = app
        self.take = take
        self.capacity = capacity
        self.refill = refill
        self.clock = clock
        self.exempt = exempt
        window = math.ceil(capacity / refill)
        self.policy = ("RateLimit-Policy", f'"default";q={capacity};w={window}')

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse):
        if environ.get("PATH_INFO") in self.exempt:
            return self.app(environ, start_response)
        caller = "addr:" + environ.get("REMOTE_ADDR", "")
        environ["refapi.caller"] = caller
        allowed, level = self.take(caller, self.capacity, self.refill, self.clock())
        wait = 0 if level >= 1 else math.ceil((1 - level) / self.refill)
        environ[RESPONSE_HEADERS] += (
            self.policy,
            ("RateLimit", f'"default";r={int(level)};t={wait}'),
        )
        if not allowed:
            raise RateLimited(max(wait, 1))
        return self.app(environ, start_response)


class Versioning:
    """API versions by path prefix or by media type.

    ``/v1/...`` is canonical. A request with
    ``Accept: application/vnd.refapi+json;version=1`` may leave the prefix out
    (``/articles``): it is routed as ``/v1/articles`` and answered with that media
    type. A version this server does not have is ``406`` on either form of path.
    When a deprecation is configured, every versioned response carries
    ``Deprecation`` (RFC 9745) and ``Sunset`` (RFC 8594).
    """

    VENDOR = "application/vnd.refapi+json"

    def __init__(
        self,
        app: WSGIApplication,
        *,
        prefixes: frozenset[str],
        versions: frozenset[str] = frozenset({"1"}),
        deprecation: str = "",
        sunset: str = "",
    ) -> None:
        self.app = app
        self.prefixes = prefixes
        self.versions = versions
        self.current = max(versions)
        self.lifecycle = [
            (name, value)
            for name, value in (("Deprecation", deprecation), ("Sunset", sunset))
            if value
        ]

    def _requested_version(self, accept: str) -> str | None:
        for part in accept.split(","):
            media_type, *params = part.split(";")
            if media_type.strip().lower() != self.VENDOR:
                continue
            for param in params:
                key, _, value = param.partition("=")
                if key.strip().lower() == "version":
                    return value.strip().strip('"')
            return self.current
        return None

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse):
        path = environ.get("PATH_INFO", "")
        accept = environ.get("HTTP_ACCEPT", "")
        version = (
            self._requested_version(accept) if self.VENDOR in accept.lower() else None
        )
        if version is None:
            if self.lifecycle and path.startswith("/v1/"):
                environ[RESPONSE_HEADERS].extend(self.lifecycle)
            return self.app(environ, start_response)
        if version not in self.versions:
            raise NotAcceptable(
                f"API version {version!r} is not served.",
                details={"versions": sorted(self.versions)},
            )
        segment = path.split("/", 2)[1] if path.startswith("/") else ""
        if "/" + segment in self.prefixes:
            environ["PATH_INFO"] = f"/v{version}{path}"
        vendor_type = f"{self.VENDOR};version={version}"
        environ[RESPONSE_HEADERS].extend(self.lifecycle)

        def start(status, headers, exc_info=None):
            headers[:] = [
                ("Content-Type", vendor_type)
                if name == "Content-Type" and value == JSON_TYPE
                else (name, value)
                for name, value in headers
            ]
            return start_response(status, headers, exc_info)

        return self.app(environ, start)
