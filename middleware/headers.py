"""The headers the layers add to an answer, in one list per request.

A layer that adds a header to whatever answer comes back (``X-Request-Id``, CORS,
``Deprecation``, the RateLimit fields) appends it to ``environ[RESPONSE_HEADERS]``
instead of wrapping ``start_response`` itself. The outermost such layer starts the
list and wraps ``start_response`` once, to append the list to the answer: a
handler's, a rendered error's or a preflight's. The layers inside find the list and
add to it. So each layer works alone or in any order, and a request pays for one
wrapper however many layers add headers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIEnvironment

RESPONSE_HEADERS = "refapi.response_headers"

Headers = list[tuple[str, str]]


def response_headers(
    environ: WSGIEnvironment, start_response: StartResponse
) -> tuple[Headers, StartResponse]:
    """The request's list of headers to add, and the ``start_response`` to call on:
    the one given if an outer layer started the list, else one that appends it."""
    added: Headers | None = environ.get(RESPONSE_HEADERS)
    if added is not None:
        return added, start_response
    added = environ[RESPONSE_HEADERS] = []

    def start(status, headers, exc_info=None):
        headers.extend(added)
        return start_response(status, headers, exc_info)

    return added, start
