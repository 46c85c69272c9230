"""The headers the layers add to an answer, in one list per request.

A layer that adds a header to whatever answer comes back (``X-Request-Id``, CORS,
``Deprecation``, the RateLimit fields) appends it to ``environ[RESPONSE_HEADERS]``
instead of wrapping ``start_response`` itself. The outermost such layer starts the
list and wraps ``start_response`` once, to append the list to the answer: a
handler's, a rendered error's or a preflight's; the wrapper also writes the answer's
status and headers to ``environ[ANSWER]``, for ``Observe``. The layers inside find
the list and add to it. So each layer works alone or in any order, and a request
pays for one wrapper however many layers add headers or read the answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..web.environ import ANSWER, RESPONSE_HEADERS

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIEnvironment

    from _typeshed import OptExcInfo  # typeshed's, as wsgiref.types uses: stubs only

    from ..errors import ApiError

Headers = list[tuple[str, str]]


@dataclass(frozen=True)
class Declared:
    """What a layer does to the answers of one path, as the OpenAPI document tells
    it: the headers it adds to every answer that passes it (without an ``Origin``),
    the errors it answers itself, and those the router answers for it (a
    credential it found refused: only the router knows whether the route is
    public)."""

    adds: tuple[str, ...] = ()
    raises: tuple[type[ApiError], ...] = ()
    router_raises: tuple[type[ApiError], ...] = ()
    # Headers it adds to some answers only (CORS's, to a request with an Origin).
    may_add: tuple[str, ...] = ()
    # A header's schema where the layer's options make it differ from the
    # vocabulary's (openapi/vocabulary.py): the lab's CORS exposes every header.
    schemas: tuple[tuple[str, dict[str, Any]], ...] = ()


# A layer as app.py lists it: its class and the options it is made with. What it
# declares is a function of the two, so it is known before (and without) the
# layer itself.
Layer = tuple[type, dict[str, Any]]


def declared(layer: Layer, path: str) -> Declared:
    """What ``layer`` declares for ``path``: its class's ``declares(path,
    **options)``, else the class's ``adds`` and ``raises`` (a layer of a host's
    declares nothing)."""
    cls, options = layer
    declares = getattr(cls, "declares", None)
    if declares is not None:
        found: Declared = declares(path, **options)
        return found
    return Declared(getattr(cls, "adds", ()), getattr(cls, "raises", ()))


def response_headers(
    environ: WSGIEnvironment, start_response: StartResponse
) -> tuple[Headers, StartResponse]:
    """The request's list of headers to add, and the ``start_response`` to call on:
    the one given if an outer layer started the list, else one that appends it
    and writes the answer's status and headers to ``environ[ANSWER]``."""
    added: Headers | None = environ.get(RESPONSE_HEADERS)
    if added is not None:
        return added, start_response
    added = environ[RESPONSE_HEADERS] = []

    def start(
        status: str, headers: Headers, exc_info: OptExcInfo | None = None
    ) -> Callable[[bytes], object]:
        headers.extend(added)
        environ[ANSWER] = status, headers
        return start_response(status, headers, exc_info)

    return added, start
