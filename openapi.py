"""The OpenAPI 3.1 document, derived from the route table and ``schemas/``.

OpenAPI (https://spec.openapis.org/oas/v3.1.0) describes an HTTP API as data: its
operations, their parameters, bodies, answers and headers, the bodies in JSON Schema
(draft 2020-12). Clients are generated from it, and tools test a server against it.
Nothing in it is written twice: each operation is a row of the route table, each
body a document in ``schemas/``, each error a class in ``errors.py`` that says its
status and the headers it carries (``carries``). Each middleware layer declares the
headers it adds and the errors it answers (``declares``, ``middleware/headers.py``),
and the document reads them in the stack's order: an answer carries the headers of
the layers it passed. What a row shows says which errors the router can answer (a
body schema: 400, 413, 415; an id: 400 and 404; content negotiation: 406; who may
call: 401, 403) and which headers a success carries; the row works both out once
(``Route.implied_errors``, ``Route.success_headers``), and names the rest itself
(``Route.errors``, ``Route.headers``, ``Route.answers``).

Rows that share a path and a method and differ by ``action`` (the demo) are one
operation, with a required ``action`` query parameter that names their actions.
HEAD (a GET without its body) and OPTIONS (``Allow``) are answered on every path and
are not listed as operations.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from . import schemas
from .errors import (
    ApiError,
    MethodNotAllowed,
    PreconditionFailed,
    RequestHeaderFieldsTooLarge,
    RequestTimeout,
    UnknownAction,
    UriTooLong,
)
from .middleware.headers import Declared, Layer, declared
from .middleware.request_id import REQUEST_ID_SCHEMA
from .storage.base import MAX_ID
from .web.auth import SESSION_COOKIE
from .web.negotiation import JSON, VENDOR
from .web.pagination import CURSOR_SCHEMA

if TYPE_CHECKING:
    from .config import Config
    from .routes import Param, Route

ERROR = "error"  # schemas/error.json: the body of every error
_COMPONENT = "#/components/schemas/"
_HEADER = "#/components/headers/"

ABOUT = """\
A reference REST service. Every error, from every layer, is the error object
(`code`, `message`, `details`). Versioned resources live under `/v1`; the same paths
without the prefix answer a request whose `Accept` names
`application/vnd.refapi+json;version=1`. GET and HEAD of a resource answer with a
strong `ETag` and `304` to a matching `If-None-Match`; every path answers `OPTIONS`
with `Allow`. Limited routes carry the IETF `RateLimit` fields."""

# The response headers the service sends: description and schema.
HEADERS: dict[str, tuple[str, dict[str, Any]]] = {
    "X-Request-Id": (
        "The request's id, kept from the request when well-formed; in every log line.",
        dict(REQUEST_ID_SCHEMA),
    ),
    "X-Content-Type-Options": (
        "`nosniff`: a browser takes the Content-Type as sent, never guessing another.",
        {"type": "string", "enum": ["nosniff"]},
    ),
    "RateLimit": (
        "Tokens left (r) and seconds until one is back (t), after "
        "draft-ietf-httpapi-ratelimit-headers, for each bucket the request passed: "
        '"default", then "auth" (logins, password changes) or "register".',
        {
            "type": "string",
            "pattern": '^"default";r=[0-9]+;t=[0-9]+(, "[a-z]+";r=[0-9]+;t=[0-9]+)*$',
        },
    ),
    "RateLimit-Policy": (
        "Each bucket's capacity (q) and the seconds it takes to fill (w), in the "
        "order of RateLimit.",
        {
            "type": "string",
            "pattern": '^"default";q=[0-9]+;w=[0-9]+(, "[a-z]+";q=[0-9]+;w=[0-9]+)*$',
        },
    ),
    "ETag": (
        "A strong entity tag of this representation, for If-None-Match and If-Match.",
        {"type": "string", "pattern": '^"[^"]*"$'},
    ),
    "Location": ("The URL of what was created.", {"type": "string"}),
    "Link": ('The next page: `<url>; rel="next"` (RFC 8288).', {"type": "string"}),
    "X-Next-Cursor": (
        "The cursor of the next page; absent on the last.",
        {"type": "string", "pattern": CURSOR_SCHEMA["pattern"]},
    ),
    "Idempotent-Replayed": (
        "The stored answer to an earlier request with this Idempotency-Key.",
        {"type": "string", "enum": ["true"]},
    ),
    "Retry-After": ("Seconds to wait before trying again.", {"type": "integer"}),
    "Allow": ("The methods the resource answers.", {"type": "string"}),
    "Vary": ("The request headers the answer depends on.", {"type": "string"}),
    "Deprecation": ("This version is deprecated (RFC 9745).", {"type": "string"}),
    "Sunset": ("When this version stops being served (RFC 8594).", {"type": "string"}),
    "WWW-Authenticate": (
        'The challenge (RFC 6750): `Bearer realm="refapi"`, with '
        '`error="invalid_token"` when the token or key sent was refused.',
        {"type": "string"},
    ),
    "Set-Cookie": (
        "The session cookie (HttpOnly; SameSite=Lax), set at login and cleared at "
        "logout or when a stale one is refused.",
        {"type": "string"},
    ),
    "Content-Disposition": (
        'Save the body as a file: `attachment; filename="endpoints.csv"`.',
        {"type": "string", "pattern": '^attachment; filename="[^"]+"$'},
    ),
    "Cache-Control": (
        "`no-store` on every answer that carries or depends on a credential.",
        {"type": "string"},
    ),
}
# How a caller proves who it is; a route that needs a credential takes any of them.
SECURITY_SCHEMES = {
    "bearerAuth": {
        "type": "http",
        "scheme": "bearer",
        # The OAuth 2.0 client-credentials token is a Bearer token too. Not an
        # "oauth2" scheme: its tokenUrl must be an absolute URL, which would mean
        # writing the request's Host into the document.
        "description": "`Authorization: Bearer <token>`: a user's token from POST "
        "/api/login, or an OAuth 2.0 client's from POST /oauth/token (client "
        "credentials, RFC 6749 section 4.4).",
    },
    "apiKeyAuth": {
        "type": "apiKey",
        "in": "header",
        "name": "X-API-Key",
        "description": "A key an admin made at POST /api/keys.",
    },
    "sessionCookie": {
        "type": "apiKey",
        "in": "cookie",
        "name": SESSION_COOKIE,
        "description": "The web UI's session; unsafe requests also need X-CSRF-Token.",
    },
}
FORM = "application/x-www-form-urlencoded"


ANY_CREDENTIAL: list[dict[str, list[str]]] = [{name: []} for name in SECURITY_SCHEMES]
_CONDITIONS = {
    "If-None-Match": "Entity tags of copies the client holds: 304 if one is current.",
    # RFC 9110 section 13.1.1: If-Match is "*" or a list of entity tags (#entity-tag,
    # so possibly empty), and the condition is false when no listed tag matches.
    "If-Match": "`*`, or the entity tags the change is based on: 412 unless one is "
    "current. An empty value lists no tag, so it never matches (412).",
}


def document(
    routes: Iterable[Route],
    config: Config,
    prefix: str = "",
    *,
    layers: Sequence[Layer] = (),
) -> dict:
    """The OpenAPI document of the listed ``routes``, served under ``prefix`` by
    the middleware ``layers`` (outermost first, each a class and its options), with
    what each declares."""
    operations = _operations(routes)
    paths: dict[str, dict[str, Any]] = {}
    for (path, method), rows in operations.items():
        paths.setdefault(path, {})[method.lower()] = _operation(rows, config, layers)
    modules = {
        _tag(rows[0]): inspect.getmodule(rows[0].handler)
        for rows in operations.values()
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "refapi", "version": config.version, "description": ABOUT},
        "servers": [{"url": prefix or "/"}],
        "tags": [
            {"name": name, "description": _first_paragraph(module)}
            for name, module in modules.items()
        ],
        "paths": paths,
        "components": {
            "schemas": _components(paths, config),
            "headers": _header_components(paths),
            "securitySchemes": SECURITY_SCHEMES,
        },
    }


def _operations(routes: Iterable[Route]) -> dict[tuple[str, str], list[Route]]:
    """The listed rows by (path, method): one operation each."""
    grouped: dict[tuple[str, str], list[Route]] = {}
    for route in routes:
        if route.listed:
            grouped.setdefault((route.path, route.method), []).append(route)
    return grouped


def _operation(
    rows: list[Route], config: Config, layers: Sequence[Layer]
) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "operationId": "_or_".join(route.name for route in rows),
        "summary": " or ".join(route.name.replace("_", " ") for route in rows),
        "tags": [_tag(rows[0])],
        "parameters": _parameters(rows, config),
    }
    if not operation["parameters"]:
        del operation["parameters"]
    if body := _request_body(rows):
        operation["requestBody"] = body
    if any(route.auth for route in rows):
        operation["security"] = ANY_CREDENTIAL
    operation["responses"] = _responses(rows, layers)
    return operation


def _tag(route: Route) -> str:
    return route.handler.__module__.rpartition(".")[2]


def _first_paragraph(module: object) -> str:
    return " ".join((inspect.getdoc(module) or "").split("\n\n")[0].split())


def _ref(name: str) -> dict[str, str]:
    return {"$ref": _COMPONENT + name}


# Parameters


def _parameters(rows: list[Route], config: Config) -> list[dict[str, Any]]:
    """The parameters of every row; one is required when every row requires it."""
    found: list[dict[str, Any]] = []
    actions = [route.action for route in rows if route.action]
    if actions:
        found.append(
            {
                "name": "action",
                "in": "query",
                "required": True,
                "description": "The operation: "
                + ", ".join(
                    f"`{route.action}` ({route.name.replace('_', ' ')})"
                    for route in rows
                ),
                "schema": {"type": "string", "enum": actions},
            }
        )
    seen: set[tuple[str, str]] = set()
    for route in rows:
        for param in route.params:
            if param.name == "action" or (param.name, param.where) in seen:
                continue
            seen.add((param.name, param.where))
            required = all(
                any(
                    (p.name, p.where, p.required) == (param.name, param.where, True)
                    for p in other.params
                )
                for other in rows
            )
            users = [
                other.action
                for other in rows
                if any(
                    (p.name, p.where) == (param.name, param.where) for p in other.params
                )
            ]
            entry: dict[str, Any] = {
                "name": param.name,
                "in": param.where,
                "required": required,
                "schema": _param_schema(param, config),
            }
            if len(users) < len(rows):
                # Actions that do not take it ignore it, whatever its value: its
                # type and bounds hold only for the others, so the document gives
                # it as text, and says the rest.
                entry["schema"] = {"type": "string"}
                entry["description"] = (
                    "Read by " + ", ".join(f"`{a}`" for a in users) + "; ignored by the"
                    " other actions. " + _bounds_text(_param_schema(param, config))
                ).strip()
            found.append(entry)
    conditions = []
    if rows[0].method == "GET":
        conditions.append("If-None-Match")
    if any(PreconditionFailed in route.errors for route in rows):
        conditions.append("If-Match")
    for name in conditions:
        found.append(
            {
                "name": name,
                "in": "header",
                "required": False,
                "description": _CONDITIONS[name],
                "schema": {"type": "string"},
            }
        )
    return found


def _bounds_text(schema: dict[str, Any]) -> str:
    low, high = schema.get("minimum"), schema.get("maximum")
    bounds = f", from {low} to {high}" if low is not None else ""
    about = f" {schema['description']}" if "description" in schema else ""
    return f"There, {schema['type']}{bounds}.{about}"


def _param_schema(param: Param, config: Config) -> dict[str, Any]:
    if param.schema is not None:
        return dict(param.schema)
    if param.name == "limit":
        return {
            "type": "integer",
            "minimum": 1,
            "maximum": config.page_size_max,
            "default": config.page_size_default,
        }
    if param.type == "integer":  # an id, read by the router as one
        return {"type": "integer", "minimum": 1, "maximum": MAX_ID}
    if param.type.endswith("[]"):
        return {"type": "array", "items": {"type": param.type[:-2]}}
    return {"type": param.type}


def _request_body(rows: list[Route]) -> dict[str, Any] | None:
    forms = [route.form for route in rows if route.form]
    if forms:  # the token endpoint: RFC 6749 sends its parameters as a form
        return {
            "description": f"Sent as {FORM}.",
            "required": True,
            "content": {FORM: {"schema": _ref(forms[0])}},
        }
    with_body = [route for route in rows if route.schema]
    if not with_body:
        return None
    refs = _unique(_ref(route.schema) for route in with_body if route.schema)
    schema = refs[0] if len(refs) == 1 else {"oneOf": refs}
    others = [
        kind
        for kind in _unique(kind for route in with_body for kind in route.body_types)
        if kind != JSON
    ]
    # One media type: generators make a body parameter for each, and the code
    # openapi-python-client writes for two does not run. The others are named.
    also = f"; also accepted as {', '.join(others)}" if others else ""
    return {
        "description": f"Sent as {JSON}{also}.",
        "required": len(with_body) == len(rows),
        "content": {JSON: {"schema": schema}},
    }


def _unique(items: Iterable[Any]) -> list[Any]:
    found: list[Any] = []
    for item in items:
        if item not in found:
            found.append(item)
    return found


# Responses


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


def _responses(rows: list[Route], layers: Sequence[Layer]) -> dict[str, Any]:
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
    return {
        status: _response(status, parts) for status, parts in sorted(by_status.items())
    }


def _parts(route: Route, stack: list[Declared]) -> Iterator[tuple[str, _Part]]:
    """(status, part) for everything the row can answer, and the layers around it
    (``stack``, outermost first)."""
    base = _passed(stack)
    status = route.success_status
    headers = {**base, **dict(route.success_headers)}
    media_types = route.offers or ((JSON,) if route.response else ())
    phrase = HTTPStatus(status).phrase
    # Named for the action where the rows of one operation each have one.
    sample = None if route.sample is None else (route.action or "sample", route.sample)
    yield (
        str(status),
        _Part(phrase, route.response, media_types, headers, None, sample),
    )
    if route.method == "GET":
        current = "Not Modified: the copy the client holds is current."
        yield "304", _Part(current, media_types=(), headers={**base, "ETag": True})
    for error in _errors(route, stack):
        yield str(error.status), _error_part(error, base)
    for index, layer in enumerate(stack):
        for error in layer.raises:
            yield str(error.status), _error_part(error, _passed(stack, index, error))
    for error in BEFORE_THE_APP:
        yield str(error.status), _error_part(error, dict.fromkeys(SERVER_ADDS, True))
    for answer in route.answers:
        headers = {**base, **dict.fromkeys(answer.headers, True)}
        yield answer.status, _Part(answer.description, answer.schema, headers=headers)


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
    if at is None:
        return {name: True for layer in stack for name in layer.adds}
    headers: dict[str, bool] = {}
    for index, layer in enumerate(stack):
        always = index < at or (
            index == at and error is not None and error.status < 500
        )
        headers.update({name: always for name in layer.adds if name not in headers})
    return headers


# What the server (gunicorn, web/gunicorn.py) refuses before the application
# runs, on any path, and the headers it sends (no bucket was asked, so no RateLimit).
# A 408 may also come from the app, for a body that stops arriving (web/body.py).
BEFORE_THE_APP: tuple[type[ApiError], ...] = (
    RequestTimeout,
    UriTooLong,
    RequestHeaderFieldsTooLarge,
)
SERVER_ADDS = ("X-Request-Id", "X-Content-Type-Options")


def _errors(route: Route, stack: list[Declared]) -> list[type[ApiError]]:
    """The errors the router and the handler may answer for the row: what its
    columns imply, what the layers ask the router to answer, then what it names."""
    found = list(route.implied_errors)
    for layer in stack:
        found += layer.router_raises  # a credential sent and refused
    found += route.errors
    return sorted(_unique(found), key=lambda error: error.status)


def _error_part(error: type[ApiError], passed: dict[str, bool]) -> _Part:
    """An error's part: the headers of the layers it passed, and its own."""
    headers = {**passed, **dict.fromkeys(error.carries, True)}
    headers.update({name: False for name in error.may_carry if name not in headers})
    phrase = HTTPStatus(error.status).phrase
    return _Part(phrase, ERROR, headers=headers, error=error)


def _response(status: str, parts: list[_Part]) -> dict[str, Any]:
    """Merge the parts of one status: any of their bodies, headers always sent only
    when every part sends them."""
    descriptions = _unique(part.description for part in parts if not part.error)
    errors = _unique(part.error for part in parts if part.error)
    if errors:
        descriptions.insert(0, HTTPStatus(int(status)).phrase + ".")
        descriptions += [f"- `{error.code}`: {error.message}" for error in errors]
    response: dict[str, Any] = {"description": "\n".join(descriptions)}
    names = _unique(name for part in parts for name in part.headers)
    if names:
        response["headers"] = {
            name: _header(name, all(part.headers.get(name) for part in parts))
            for name in names
        }
    refs = [
        _ref(name) for name in _unique(part.schema for part in parts if part.schema)
    ]
    schema = refs[0] if len(refs) == 1 else {"anyOf": refs}
    # JSON where a part has a schema for it; text (XML, CSV) wherever it is sent.
    types = _unique(
        kind
        for part in parts
        for kind in part.media_types
        if part.schema or not _is_json(kind)
    )
    if types:
        response["content"] = {kind: _media_type(kind, schema, parts) for kind in types}
    return response


def _header(name: str, required: bool) -> dict[str, str]:
    """A reference to the header's component: ``RateLimit`` is always sent,
    ``RateLimit.optional`` may be absent."""
    return {"$ref": _HEADER + (name if required else f"{name}.optional")}


def _header_components(paths: dict[str, Any]) -> dict[str, Any]:
    found = {}
    for key in sorted(set(_refs(paths, _HEADER))):
        name, _, optional = key.partition(".")
        description, schema = HEADERS[name]
        found[key] = {"description": description, "required": not optional}
        found[key]["schema"] = schema
    return found


def _media_type(kind: str, schema: dict, parts: list[_Part]) -> dict[str, Any]:
    if not _is_json(kind):
        # XML and CSV: the same records as text (see web/representations.py).
        return {"schema": {"type": "string"}}
    examples = {
        part.error.code: {
            "summary": part.error.message,
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


def _is_json(media_type: str) -> bool:
    return media_type == JSON or media_type.startswith(VENDOR)


# Components


def _components(paths: dict[str, Any], config: Config) -> dict[str, Any]:
    """Every schema the paths refer to, and every schema those refer to."""
    found: dict[str, Any] = {}
    pending = list(_refs(paths, _COMPONENT))
    while pending:
        name = pending.pop()
        if name not in found:
            schema = _component(schemas.configured(name, vars(config)))
            # Generators name a model by its title; the component's name makes a
            # better class name (ArticleCreate), so the title opens the description.
            about = [schema.pop("title", ""), schema.pop("description", "")]
            found[name] = {"description": ". ".join(filter(None, about)), **schema}
            pending += _refs(found[name], _COMPONENT)
    return dict(sorted(found.items()))


def _refs(node: Any, prefix: str) -> Iterator[str]:
    """The names of the components of one kind (``prefix``) that ``node`` uses."""
    if isinstance(node, dict):
        ref = node.get("$ref", "")
        if ref.startswith(prefix):
            yield ref.removeprefix(prefix)
        for value in node.values():
            yield from _refs(value, prefix)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value, prefix)


def _component(node: Any) -> Any:
    """A schema of ``schemas/`` in the words of OpenAPI 3.1: references between
    files made references between components, ``maxDecimalPlaces`` (ours) made
    ``multipleOf``, our annotations and the dialect (OpenAPI's own) left out."""
    if isinstance(node, list):
        return [_component(value) for value in node]
    if not isinstance(node, dict):
        return node
    converted: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$schema" or key.startswith("x-"):
            continue
        if key == "$ref":
            converted[key] = _COMPONENT + value.removesuffix(".json")
        elif key == "maxDecimalPlaces":
            converted["multipleOf"] = 10**-value
        else:
            converted[key] = _component(value)
    return converted
