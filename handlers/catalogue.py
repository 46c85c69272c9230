"""The endpoint catalogue, ``GET /api/download_csv.php``: a CSV of every operation.

It is generated from the route table being served (its ``routes``), so it can
never list an operation that is not answered, or miss one that is. One row per
operation (each demo action its own row); the columns, in order:

    name,endpoint,method,required parameters,optional parameters,sample response

A parameter is ``name:type`` with JSON Schema's type names (an array adds ``[]``:
``tags:string[]``); path, query, header and body parameters alike, several in one
cell separated by ``; ``; a cell that is exactly ``-`` means none. The endpoint
carries the mount point (``/prod/v1/articles``) and names path parameters as
``{id}``; a demo row's name says its action (``list_notes (action=list)``), and
the row of a handler that serves several methods its method (``reflect_anything
(method=POST)``, the lab's). The
sample response is JSON text. Rows left out of the catalogue are not API
operations (``documented=False``: the docs, the OpenAPI document), or not a resource's
(``catalogued=False``: the front page).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Protocol

from ..web import Request, Response, json_bytes
from ..web.representations import csv_text


class Param(Protocol):
    name: str
    type: str
    required: bool


class Route(Protocol):
    """What the catalogue reads of a row of the table (``router.route.Route``), which
    names this module's handler: a contract, not an import."""

    @property
    def name(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def method(self) -> str: ...
    @property
    def action(self) -> str | None: ...
    @property
    def catalogued(self) -> bool: ...
    @property
    def sample(self) -> Any: ...
    @property
    def params(self) -> Sequence[Param]: ...
    @property
    def body_params(self) -> Sequence[Param]: ...


HEADER = (
    "name",
    "endpoint",
    "method",
    "required parameters",
    "optional parameters",
    "sample response",
)
NONE = "-"


def download_catalogue(request: Request, routes: Sequence[Route]) -> Response:
    listed = [route for route in routes if route.catalogued]
    # A handler that serves several methods (the lab's) is a row per method.
    shared = {n for n, count in Counter(r.name for r in listed).items() if count > 1}
    rows = [HEADER, *(_row(request, route, shared) for route in listed)]
    return Response(
        csv_text(rows, none=NONE).encode(),
        headers=[("Content-Disposition", 'attachment; filename="endpoints.csv"')],
    )


def _row(request: Request, route: Route, shared: set[str]) -> tuple[str, ...]:
    params = (*route.params, *route.body_params)
    name = f"{route.name} (action={route.action})" if route.action else route.name
    if route.name in shared and not route.action:
        name = f"{route.name} (method={route.method})"
    return (
        name,
        request.link(route.path),
        route.method,
        _cell([p for p in params if p.required]),
        _cell([p for p in params if not p.required]),
        NONE if route.sample is None else json_bytes(route.sample).decode(),
    )


def _cell(params: Sequence[Param]) -> str:
    return "; ".join(f"{p.name}:{p.type}" for p in params) or NONE
