"""The operations the router serves besides the rows: HEAD wherever there is a GET
(RFC 9110 section 9.3.2: the GET's answer without its body), OPTIONS on every path
(section 9.3.7: ``204`` with ``Allow``), and each ``/v1`` path without its prefix,
for a request whose ``Accept`` names the vendor type (``middleware/versioning.py``).

The document declares them so that a tool checking requests against it (Prism)
passes what the server serves. Their operationIds end in ``_head``, ``_options`` and
``_by_accept`` (``SERVED_TOO``): schemathesis leaves them out, as they answer what
the GET, the router's ``Allow`` and the prefixed paths already say
(docs/development.md, "OpenAPI and schemathesis").
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from ..errors import NotFound
from ..middleware.headers import Layer
from ..router.route import Route
from ..web.negotiation import vendor_type
from .refs import HEADER
from .responses import refusal, responses

# The operationIds of the operations below, for a tester to leave out.
SERVED_TOO = r"_(head|options|by_accept)$"
HEAD = "The GET's answer without its body: the same status and headers."
OPTIONS = (
    "The methods the path answers, in `Allow` (not a CORS preflight, which the "
    "CORS layer answers with the Access-Control-* headers)."
)


# A path parameter of OPTIONS: the router answers Allow for any one segment, at
# the routing step, as it answers 405, before a row reads the segment (docs/api.md,
# "Order of checks"). Its length is bounded by the request line gunicorn takes
# (limit_request_line, gunicorn.conf.py: 414), not by the app, so no maxLength: an
# in-process tester would expect the app to refuse a longer one (as with
# CONDITION_SCHEMA in openapi/vocabulary.py; tools/contract/.spectral.yaml).
SEGMENT = {
    "type": "string",
    "minLength": 1,
    "pattern": "^[^/]+$",
    "description": "Any one path segment: OPTIONS answers before the path's "
    "operations read it, so an id they would refuse gets `Allow` too.",
}


def served_too(
    paths: dict[str, dict[str, Any]],
    rows: dict[str, list[Route]],
    layers: Sequence[Layer],
) -> dict[str, dict[str, Any]]:
    """``paths`` with HEAD and OPTIONS added, and the unprefixed ``/v1`` paths."""
    found = {}
    for path, item in paths.items():
        item = dict(item)
        if "get" in item:
            item["head"] = _head(item["get"])
        item["options"] = _options(path, rows[path], next(iter(item.values())), layers)
        found[path] = item
    for path, item in list(found.items()):
        if path.startswith("/v1/"):
            found[path.removeprefix("/v1")] = _by_accept(path, item, layers)
    return found


def _head(get: dict[str, Any]) -> dict[str, Any]:
    head = copy.deepcopy(get)
    head["operationId"] = get["operationId"] + "_head"
    head["summary"] = get["summary"] + " (HEAD)"
    head["description"] = HEAD
    for response in head["responses"].values():
        response.pop("content", None)
    return head


def _allow() -> None:
    """Answered by the router itself (``router._allow``)."""


def _options(
    path: str, rows: list[Route], first: dict[str, Any], layers: Sequence[Layer]
) -> dict[str, Any]:
    # What an OPTIONS answer is, as a row would say it: 204, Allow, no body,
    # no-store where every answer of the path depends on a credential (the
    # router's no_store_paths).
    row = Route(
        "OPTIONS", path, _allow, negotiated=False, status=204, headers=("Allow",),
        sensitive=all(route.no_store for route in rows),
    )  # fmt: skip
    operation: dict[str, Any] = {
        "operationId": first["operationId"] + "_options",
        "summary": "options",
        "description": OPTIONS,
        "tags": first["tags"],
        "security": [],
    }
    named = [p["name"] for p in first.get("parameters", ()) if p["in"] == "path"]
    if named:
        operation["parameters"] = [
            {"name": name, "in": "path", "required": True, "schema": SEGMENT}
            for name in named
        ]
    operation["responses"] = responses([row], layers)
    _or_preflight(operation["responses"]["204"]["headers"])
    return operation


# The headers a CORS preflight's 204 carries (middleware/cors.py), which answers in
# the router's place before any bucket is asked.
PREFLIGHT = (
    "Access-Control-Allow-Origin",
    "Access-Control-Allow-Methods",
    "Access-Control-Allow-Headers",
    "Access-Control-Max-Age",
)


def _or_preflight(headers: dict[str, dict[str, str]]) -> None:
    """An OPTIONS 204 is the router's (Allow, the bucket's RateLimit) or, to a
    request with ``Access-Control-Request-Method``, the CORS layer's preflight: a
    document cannot tell them apart by a request header, so what only one of them
    sends may be absent."""
    both = ("X-Request-Id", "X-Content-Type-Options")
    for name in [*headers, *PREFLIGHT]:
        if name not in both:
            headers[name] = {"$ref": HEADER + name + ".optional"}


def _by_accept(
    path: str, item: dict[str, Any], layers: Sequence[Layer]
) -> dict[str, Any]:
    item = copy.deepcopy(item)
    said = (
        f"`{path}` without its `/v1`, for a request whose `Accept` names "
        f"`{vendor_type('1')}`; without it, `404` with `Vary: Accept`. "
    )
    for method, operation in item.items():
        operation["operationId"] += "_by_accept"
        operation["description"] = said + operation["description"]
        if "404" not in operation["responses"]:
            operation["responses"]["404"] = refusal(NotFound, path, layers)
            if method == "head":
                operation["responses"]["404"].pop("content")
        operation["responses"] = dict(sorted(operation["responses"].items()))
    return item
