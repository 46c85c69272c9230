"""CORS: the Fetch standard's headers, so browser scripts on other origins can call."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..web.cors import EXPOSED, METHODS, REQUEST_HEADERS
from ..web.environ import RESPONSE_HEADERS
from .headers import Declared, response_headers

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

HEADERS = "Access-Control-Allow-Headers"


class Cors:
    """Cross-Origin Resource Sharing (the Fetch standard) for browser clients.

    A preflight (``OPTIONS`` with ``Access-Control-Request-Method``) is answered here
    with ``204`` and what may be sent, cached for ``Max-Age`` seconds; it never
    reaches the rate limit or the router. Every other response to a request with an
    ``Origin`` gets ``Access-Control-Allow-Origin`` and the list of response headers
    a script may read (``Expose-Headers``). With ``*`` no credentials are allowed;
    with a list of origins, the matching origin is echoed and ``Vary: Origin`` tells
    caches the answer depends on it.

    Reads ``Origin``, the method and ``Access-Control-Request-Method``; adds its
    headers to the request's response headers (``middleware/headers.py``), starting
    the list if no layer outside did. It needs no other layer. Outside ``Errors``,
    as ``app.py`` stacks it, an error answer is marked too; inside, only if a layer
    outside ``Errors`` started the list.
    """

    def __init__(
        self,
        app: WSGIApplication,
        *,
        origins: tuple[str, ...],
        any_header: bool = False,
        expose: str = EXPOSED,
    ) -> None:
        self.app = app
        self.any_origin = "*" in origins
        self.origins = frozenset(origins)
        self.vary = [] if self.any_origin else [("Vary", "Origin")]
        # ``any_header``: a preflight allows the headers it asks for, whatever
        # they are (the lab's, whose data they are: docs/lab.md, "Conventions").
        self.any_header = any_header
        self.preflight = [
            ("Access-Control-Allow-Methods", METHODS),
            (HEADERS, REQUEST_HEADERS),
            ("Access-Control-Max-Age", "600"),
        ]
        self.expose = ("Access-Control-Expose-Headers", expose)

    @staticmethod
    def declares(
        path: str,
        *,
        origins: tuple[str, ...],
        any_header: bool = False,
        expose: str = EXPOSED,
    ) -> Declared:
        """``Vary: Origin`` when the answer depends on it; the ``Access-Control-*``
        headers answer a request with an ``Origin`` (the CORS protocol's own), their
        values as the options make them."""
        exposed: dict[str, Any] = {"type": "string", "const": expose}
        schemas = [("Access-Control-Expose-Headers", exposed)]
        if any_header:  # the preflight's own list, echoed: one header field's length
            schemas.append((HEADERS, {"type": "string", "maxLength": 8190}))
        return Declared(
            adds=() if "*" in origins else ("Vary",),
            may_add=("Access-Control-Allow-Origin", "Access-Control-Expose-Headers"),
            schemas=tuple(schemas),
        )

    def _allow(self, origin: str) -> list[tuple[str, str]]:
        if self.any_origin:
            return [("Access-Control-Allow-Origin", "*")]
        if origin in self.origins:
            return [("Access-Control-Allow-Origin", origin), *self.vary]
        return list(self.vary)

    def _preflight(
        self,
        environ: WSGIEnvironment,
        start: StartResponse,
        allow: list[tuple[str, str]] | None,
    ) -> Iterable[bytes]:
        """``204`` to a preflight: what a script may send when its origin is
        allowed (``allow``, its Allow-Origin), nothing otherwise."""
        if allow is None:
            start("204 No Content", list(self.vary))
            return []
        asked = environ.get("HTTP_ACCESS_CONTROL_REQUEST_HEADERS")
        if self.any_header and asked:
            headers = [(name, asked if name == HEADERS else value)
                       for name, value in self.preflight]  # fmt: skip
        else:
            headers = self.preflight
        start("204 No Content", [*allow, *headers])
        return []

    def __call__(
        self, environ: WSGIEnvironment, start_response: StartResponse
    ) -> Iterable[bytes]:
        origin, listed = environ.get("HTTP_ORIGIN"), environ.get(RESPONSE_HEADERS)
        # PERF: "*" adds nothing: no call below a layer that started the list
        if origin is None and not self.vary and listed is not None:
            return self.app(environ, start_response)
        added, start = response_headers(environ, start_response)
        if origin is None:  # not a browser's cross-origin call
            added += self.vary
            return self.app(environ, start)
        allow = self._allow(origin)
        allowed = len(allow) > len(self.vary)
        if (
            environ["REQUEST_METHOD"] == "OPTIONS"
            and "HTTP_ACCESS_CONTROL_REQUEST_METHOD" in environ
        ):
            return self._preflight(environ, start, allow if allowed else None)
        if allowed:
            allow.append(self.expose)
        added += allow
        return self.app(environ, start)
