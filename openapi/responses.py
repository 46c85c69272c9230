"""Each operation's responses: what every status it may answer means, with the
headers and bodies that come with it.

A status gathers parts (``_Part``): the row's success, 304 for a GET (RFC 9110
section 15.4.5), each error the row, the router and the layers around it declare,
what the server refuses before the application runs, and the row's own answers.
The parts of one status merge into its response object: its description names
every error code, a header is required only when every part sends it, and its
content is any of the parts' bodies, with an example of each. Headers are
components, each in two forms (``RateLimit``, always sent; ``RateLimit.optional``,
which may be absent), described once in ``vocabulary.HEADERS``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..errors import (
    ApiError,
    MethodNotAllowed,
    RequestHeaderFieldsTooLarge,
    RequestTimeout,
    UnknownAction,
    UriTooLong,
)
from ..middleware.headers import Declared, Layer, declared
from ..web.negotiation import JSON, VENDOR
from ..web.statuses import PHRASES
from .refs import HEADER, ref, refs, unique
from .vocabulary import ERROR, HEADERS

if TYPE_CHECKING:
    from ..router.route import Route


@dataclass
class _Part:
    """One thing a status may mean for an operation: a success, an error, an answer
    of the row's own; the parts of a status are merged into its response."""

    description: str
    schema: str | None = None  # a component's name; None: no JSON body
    media_types: tuple[str, ...] = (JSON,)
    headers: dict[str, bool] = field(default_factory=dict)  # name -> always sent
    error: type[ApiError] | None = None
    sample: tuple[str, Any] | None = None  # an example's name and value
    # A header's schema where the row's differs from the vocabulary's.
    schemas: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def responses(rows: list[Route], layers: Sequence[Layer]) -> dict[str, Any]:
    """The operation's responses by status, its rows served inside ``layers``."""
    by_status: dict[str, list[_Part]] = {}
    stack = [declared(layer, rows[0].path) for layer in layers]
    for route in rows:
        for status, part in _parts(route, stack):
            by_status.setdefault(status, []).append(part)
    if any(route.action for route in rows):
        # A missing or unknown action, or a known one asked with another method.
        for error in (UnknownAction, MethodNotAllowed):
            by_status.setdefault(str(error.status), []).append(
                _error_part(error, _passed(stack))
            )
    _ranges_join_their_statuses(by_status)
    return {
        status: _response(status, parts) for status, parts in sorted(by_status.items())
    }


def _ranges_join_their_statuses(by_status: dict[str, list[_Part]]) -> None:
    """Add the parts of a range (``4XX``) to each status of it listed too.

    An answer is read against its own status where the operation lists it, and
    against the range only where it does not (OpenAPI 3.1, Responses Object): the
    proxy's upstream 404, or the lab's asked-for 401, is a 404 or a 401 to a
    reader, so those entries say it may be one, with its body and headers (a 204
    and a 304 have no body)."""
    ranges = {status[0]: parts for status, parts in by_status.items() if "X" in status}
    for status, parts in by_status.items():
        if "X" not in status and status[0] in ranges:
            joined = ranges[status[0]]
            if status in NO_CONTENT:
                joined = [replace(part, schema=None) for part in joined]
            parts += joined


# What never has content (RFC 9110 sections 15.3.5 and 15.4.5).
NO_CONTENT = ("204", "304")


def refusal(
    error: type[ApiError], path: str, layers: Sequence[Layer]
) -> dict[str, Any]:
    """The response of one error from below the layers, alone on its status."""
    stack = [declared(layer, path) for layer in layers]
    return _response(str(error.status), [_error_part(error, _passed(stack))])


def _parts(route: Route, stack: list[Declared]) -> Iterator[tuple[str, _Part]]:
    """(status, part) for everything the row can answer, and the layers around it
    (``stack``, outermost first)."""
    base = _passed(stack)
    status = route.success_status
    headers = {**base, **dict(route.success_headers)}
    # Not negotiated, a row may still answer another type than JSON (the lab's).
    media_types = route.offers or route.produces or ((JSON,) if route.response else ())
    phrase = PHRASES[status]
    # Named for the action where the rows of one operation each have one.
    sample = None if route.sample is None else (route.action or "sample", route.sample)
    own = route.header_schemas
    yield (
        str(status),
        _Part(phrase, route.response, media_types, headers, None, sample, own),
    )
    if route.method == "GET" and not route.streamed:
        current = "Not Modified: the copy the client holds is current."
        not_modified = {**base, "ETag": True}
        yield "304", _Part(current, None, (), not_modified, schemas=own)
    for error in _errors(route, stack):
        yield str(error.status), _error_part(error, base)
    for index, layer in enumerate(stack):
        for error in layer.raises:
            yield str(error.status), _error_part(error, _passed(stack, index, error))
    for error in BEFORE_THE_APP:
        server = dict.fromkeys(SERVER_ADDS, True) | dict.fromkeys(SERVER_MAY_ADD, False)
        yield str(error.status), _error_part(error, server)
    for answer in route.answers:
        headers = {**base, **dict.fromkeys(answer.headers, True)}
        kinds = answer.produces or (JSON,)
        yield answer.status, _Part(answer.description, answer.schema, kinds, headers)


def _passed(
    stack: list[Declared], at: int | None = None, error: type[ApiError] | None = None
) -> dict[str, bool]:
    """The headers the layers add to an answer, and whether each is always there.

    An answer from below the stack (the router's, a handler's) has passed every
    layer. One that the layer at ``at`` makes itself has passed those outside it;
    it carries that layer's own headers too unless it is a failure (5xx), which
    may come before the layer added any; those of the layers inside it may have
    been added before the failure (the header list outlives an exception), or not.
    """
    headers: dict[str, bool] = {}
    for index, layer in enumerate(stack):
        always = (
            at is None
            or index < at
            or (index == at and error is not None and error.status < 500)
        )
        headers.update({name: always for name in layer.adds if name not in headers})
    for layer in stack:
        headers.update({name: False for name in layer.may_add if name not in headers})
    return headers


# What the server (gunicorn, serving/gunicorn.py) refuses before the application
# runs, on any path, and the headers it sends (no bucket was asked, so no RateLimit).
# A 408 may also come from the app, for a body that stops arriving (web/body.py).
BEFORE_THE_APP: tuple[type[ApiError], ...] = (
    RequestTimeout,
    UriTooLong,
    RequestHeaderFieldsTooLarge,
)
SERVER_ADDS = ("X-Request-Id", "X-Content-Type-Options")
# And when every origin is allowed, the CORS headers (serving/gunicorn.py).
SERVER_MAY_ADD = ("Access-Control-Allow-Origin", "Access-Control-Expose-Headers")


def _errors(route: Route, stack: list[Declared]) -> list[type[ApiError]]:
    """The errors the router and the handler may answer for the row: what its
    columns imply, what the layers ask the router to answer, then what it names."""
    found = list(route.implied_errors)
    for layer in stack:
        found += layer.router_raises  # a credential sent and refused
    found += route.errors
    return sorted(unique(found), key=lambda error: error.status)


def _error_part(error: type[ApiError], passed: dict[str, bool]) -> _Part:
    """An error's part: the headers of the layers it passed, and its own."""
    headers = {**passed, **dict.fromkeys(error.carries, True)}
    headers.update({name: False for name in error.may_carry if name not in headers})
    phrase = PHRASES[error.status]
    return _Part(phrase, ERROR, headers=headers, error=error)


def _response(status: str, parts: list[_Part]) -> dict[str, Any]:
    """Merge the parts of one status: any of their bodies, headers always sent only
    when every part sends them."""
    descriptions = unique(part.description for part in parts if not part.error)
    errors = unique(part.error for part in parts if part.error)
    if errors:
        descriptions.insert(0, PHRASES[int(status)] + ".")
        descriptions += [f"- `{error.code}`: {error.message}" for error in errors]
    response: dict[str, Any] = {"description": "\n".join(descriptions)}
    names = unique(name for part in parts for name in part.headers)
    own = {name: schema for part in parts for name, schema in part.schemas.items()}
    if names:
        response["headers"] = {
            name: _header(
                name, all(part.headers.get(name) for part in parts), own.get(name)
            )
            for name in names
        }
    bodies = [
        ref(name) for name in unique(part.schema for part in parts if part.schema)
    ]
    schema = bodies[0] if len(bodies) == 1 else {"anyOf": bodies}
    # JSON where a part has a schema for it; text (XML, CSV) wherever it is sent.
    types = unique(
        kind
        for part in parts
        for kind in part.media_types
        if part.schema or not _is_json(kind)
    )
    if types:
        response["content"] = {kind: _media_type(kind, schema, parts) for kind in types}
    return response


def _header(
    name: str, required: bool, schema: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A reference to the header's component: ``RateLimit`` is always sent,
    ``RateLimit.optional`` may be absent; or, where the row gives the header a
    schema of its own, the header written out with it."""
    if schema is not None:
        description = HEADERS[name][0]
        return {
            "description": description,
            "required": required,
            "schema": dict(schema),
        }
    return {"$ref": HEADER + (name if required else f"{name}.optional")}


def header_components(parts: Any, layers: Sequence[Layer] = ()) -> dict[str, Any]:
    """The header components ``parts`` refer to, each required or optional, with
    the schema a layer of ``layers`` declares for it, else the vocabulary's (a
    layer's options make it, not the path: any path's declaration tells it)."""
    declared_schemas = {
        name: schema for layer in layers for name, schema in declared(layer, "").schemas
    }
    found = {}
    for key in sorted(set(refs(parts, HEADER))):
        name, _, optional = key.partition(".")
        description, schema = HEADERS[name]
        found[key] = {"description": description, "required": not optional}
        found[key]["schema"] = declared_schemas.get(name, schema)
    return found


def _media_type(kind: str, schema: dict, parts: list[_Part]) -> dict[str, Any]:
    if kind == EVENT_STREAM:
        # Each event (id, event, data), as an EventSource and schemathesis read it.
        return {"schema": schema}
    if not _is_json(kind):
        # XML and CSV: the same records as text (see web/representations.py).
        return {"schema": {"type": "string"}}
    # Named by its code, which a reader picks it by; the message is in the value
    # and in the response's description, not a third time as a summary.
    examples = {
        part.error.code: {
            "value": {
                "code": part.error.code,
                "message": part.error.message,
                "details": {},
            },
        }
        for part in parts
        if part.error
    }
    for part in parts:
        if part.sample is not None:
            name, value = part.sample
            examples[name] = {"value": value}
    return {"schema": schema, "examples": examples} if examples else {"schema": schema}


EVENT_STREAM = "text/event-stream"


def _is_json(media_type: str) -> bool:
    return media_type == JSON or media_type.startswith(VENDOR)
