"""Versioning: ``/v1`` in the path, or the vendor media type in ``Accept``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..web.negotiation import API_VERSIONS, vendor_version
from .headers import Declared, response_headers

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

VERSIONED = tuple(f"/v{version}/" for version in API_VERSIONS)  # path prefixes


class Versioning:
    """API versions by path prefix or by media type.

    ``/v1/...`` is canonical. A request that accepts
    ``application/vnd.refapi+json;version=1`` (with a weight above 0) may leave the
    prefix out: ``/articles`` is routed as ``/v1/articles``; without the vendor type
    it is ``404`` with ``Vary: Accept``, since another ``Accept`` would have found it
    (RFC 9110 section 12.5.5). Which media type answers, and whether the version
    asked for is served (else ``406``), the router decides after routing, like every
    other negotiation (``web/negotiation.py``). When a deprecation is configured, every
    answer under a version prefix carries ``Deprecation`` (RFC 9745) and ``Sunset``
    (RFC 8594); endpoints without a version never do.

    Reads ``PATH_INFO`` and ``Accept``; rewrites ``PATH_INFO``, and adds the
    lifecycle headers to the request's response headers (``middleware/headers.py``),
    starting the list if no layer outside did. It needs no other layer.
    """

    def __init__(
        self,
        app: WSGIApplication,
        *,
        prefixes: frozenset[str],
        deprecation: str = "",
        sunset: str = "",
    ) -> None:
        self.app = app
        self.prefixes = prefixes
        self.lifecycle = [
            (name, value)
            for name, value in (("Deprecation", deprecation), ("Sunset", sunset))
            if value
        ]

    @staticmethod
    def declares(
        path: str, *, deprecation: str = "", sunset: str = "", **options: object
    ) -> Declared:
        """``Deprecation`` and ``Sunset``, those configured, under a version."""
        if not path.startswith(VERSIONED):
            return Declared()
        lifecycle = (("Deprecation", deprecation), ("Sunset", sunset))
        return Declared(adds=tuple(name for name, value in lifecycle if value))

    def __call__(
        self, environ: WSGIEnvironment, start_response: StartResponse
    ) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        end = path.find("/", 1)
        if (path if end < 0 else path[:end]) in self.prefixes:  # "/todos" of /todos/1
            version = vendor_version(environ.get("HTTP_ACCEPT", ""))
            if version is None:
                added, start = response_headers(environ, start_response)
                added.append(("Vary", "Accept"))
                return self.app(environ, start)
            environ["PATH_INFO"] = path = f"/v{version}{path}"
        if self.lifecycle and path.startswith(VERSIONED):
            added, start = response_headers(environ, start_response)
            added += self.lifecycle
            return self.app(environ, start)
        return self.app(environ, start_response)
