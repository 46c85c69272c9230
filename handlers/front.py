"""The front page, ``GET /``: where everything else is, for a person or a program.

One URL, two representations, picked by content negotiation (RFC 9110 section
12.5.1) from exactly these: ``text/html``, a small page a browser shows, and
``application/json``, ``{"links": {...}}`` for a client to follow. A request that
takes neither is ``406 NOT_ACCEPTABLE``, and every answer says ``Vary: Accept``
(section 12.5.5), since another ``Accept`` would have got the other body. Without
``Accept``, or with ``*/*`` alone, JSON comes first, as everywhere in this API; a
browser names ``text/html`` and gets the page.

Both link the same places: the interactive docs, the web UI, the OpenAPI document,
the health check, the guides (``handlers/guides.py``), the learner's lab and the
web UI's Explore screen (while the lab is on), and each collection, the ``/v1``
reads of a path without an id, found in the route table being served (its
``routes``), so a new collection is linked when its row is added. Every link is an
absolute path under the mount point (``request.link``). The page shows no setting:
what is configured is the operator's to know, not a visitor's.

The page runs no script and has no inline style: it is served under the web UI's
Content-Security-Policy (``handlers/ui.py``) and borrows its stylesheet.
"""

from __future__ import annotations

import functools
import html
from string import Template
from typing import Protocol

from ..web import Request, Response, json_response
from ..web.negotiation import JSON
from ..web.representations import Resource
from ..web.static import HTML, read
from .ui import CSP


class Route(Protocol):
    """What the front page reads of a row of the table (``router.route.Route``): a
    contract, not an import."""

    @property
    def method(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def version(self) -> str | None: ...
    @property
    def resource(self) -> Resource | None: ...


# The places besides the collections: (name in the JSON, path, what the page says).
PLACES = (
    ("docs", "/docs", "Interactive API docs (Swagger UI)"),
    ("ui", "/ui/", "The web UI: log in, manage users"),
    ("openapi", "/openapi.json", "The OpenAPI 3.1 document"),
    ("health", "/healthz", "Health check"),
    ("guides", "/guides/", "The guides: the API, running it, changing it"),
)
# The lab's places, linked while the table serves the route each needs (REFAPI_LAB=0
# serves none): (name, path, what the page says, the route's path).
LAB_PLACES = (
    ("lab", "/lab/anything", "The learner's lab: your request, echoed",
     "/lab/anything"),
    ("explore", "/ui/#/explore", "Explore: any request, run and explained",
     "/lab/explain"),
)  # fmt: skip


@functools.lru_cache(maxsize=16)  # one route table an app; a handful of apps
def collections(routes: tuple[Route, ...]) -> tuple[tuple[str, str], ...]:
    """(name, path) of each collection the table serves: a ``/v1`` GET of a path
    without an id (a collection's path names none), named by its resource."""
    return tuple(
        (route.resource.plural if route.resource else route.path, route.path)
        for route in routes
        if route.method == "GET" and route.version and "{" not in route.path
    )


@functools.lru_cache(maxsize=16)
def places(routes: tuple[Route, ...]) -> tuple[tuple[str, str, str], ...]:
    """(name, path, text) of each place besides the collections that is served."""
    served = {route.path for route in routes}
    lab = (place[:3] for place in LAB_PLACES if place[3] in served)
    return (*PLACES, *lab)


def get_front_page(request: Request, routes: tuple[Route, ...]) -> Response:
    start = places(routes)
    everywhere = [*start, *((name, path, name) for name, path in collections(routes))]
    if request.media_type == JSON:
        links = {name: request.link(path) for name, path, _ in everywhere}
        return json_response(
            {"links": links}, headers=[("Content-Security-Policy", CSP)]
        )
    items = [
        f'<li><a href="{html.escape(request.link(path))}">{html.escape(text)}</a>'
        f" <code>{html.escape(path)}</code></li>"
        for _, path, text in everywhere
    ]
    page = Template(read("ui", "front.html").decode()).substitute(
        ui=html.escape(request.link("/ui")),
        places="\n      ".join(items[: len(start)]),
        collections="\n      ".join(items[len(start) :]),
    )
    return Response(
        page.encode(),
        headers=[("Content-Type", HTML), ("Content-Security-Policy", CSP)],
    )
