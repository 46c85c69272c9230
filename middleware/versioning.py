"""Versioning: ``/v1`` in the path, or the vendor media type in ``Accept``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import NotAcceptable
from ..web import JSON_TYPE
from .request_id import RESPONSE_HEADERS

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment


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
