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
HEAD (a GET without its body), OPTIONS (``Allow``) and the ``/v1`` paths without
their prefix (for the vendor type in ``Accept``) are served too, and declared by
``methods``.

The package reads top to bottom: here the document, its operations, their
parameters and request bodies, and the components; ``responses`` works out each
operation's responses and their headers; ``shared`` says once, as a component, what
several operations give alike; ``vocabulary`` holds what the document says in words
(the description, each header's meaning, the security schemes).

It may import the router's ``Route`` (the rows it describes), the middleware's
declarations (``middleware/headers.py``, the request id's schema), the web helpers'
constants, the error family, ``schemas/`` and the storage's ``MAX_ID``; never a
handler, the route table, the router's dispatch, the app or the lab (the docs'
handler calls it with a table; the lab's document is made by the same calls).
"""

from __future__ import annotations

import inspect
import sys
from collections import Counter
from collections.abc import Callable, Container, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .. import schemas
from ..errors import PreconditionFailed
from ..middleware.headers import Layer
from ..router.route import ANY_BODY
from ..storage.base import MAX_ID
from ..web.negotiation import JSON
from .descriptions import DESCRIPTIONS
from .methods import SERVED_TOO, served_too
from .refs import COMPONENT, ref, refs, unique
from .responses import BEFORE_THE_APP, SERVER_ADDS, header_components, responses
from .shared import share
from .vocabulary import (
    ABOUT,
    ANY_CREDENTIAL,
    CONDITION_SCHEMA,
    CONDITIONS,
    CONTACT,
    ERROR,
    FORM,
    HEADERS,
    LICENSE,
    SECURITY_SCHEMES,
)

if TYPE_CHECKING:
    from ..config import Config
    from ..router.route import Param, Route

# What other modules and hosts may use; the rest is how the document is made.
__all__ = [
    "ABOUT",
    "ANY_CREDENTIAL",
    "BEFORE_THE_APP",
    "ERROR",
    "FORM",
    "HEADERS",
    "SECURITY_SCHEMES",
    "SERVER_ADDS",
    "SERVED_TOO",
    "document",
]


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
    # A handler that serves several methods (the lab's) names each operation
    # with its method too: an operationId is unique in the document.
    served = Counter(route.handler for rows in operations.values() for route in rows)
    shared = {handler for handler, count in served.items() if count > 1}
    paths: dict[str, dict[str, Any]] = {}
    by_path: dict[str, list[Route]] = {}
    for (path, method), rows in operations.items():
        operation = _operation(rows, config, layers, shared)
        paths.setdefault(path, {})[method.lower()] = operation
        by_path.setdefault(path, []).extend(rows)
    paths = served_too(paths, by_path, layers)
    # What several operations give alike, once, referred to (openapi/shared.py).
    common = share(paths)
    modules = dict(_tagged(rows[0]) for rows in operations.values())
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "refapi",
            "version": config.version,
            "description": ABOUT,
            "license": LICENSE,
            "contact": CONTACT,
        },
        # x-internal: the audience of the server, as OWASP's inventory rule asks
        # (docs/development.md, "The contract tools"): the API is public.
        "servers": [{"url": prefix or "/", "x-internal": False}],
        "tags": [
            {"name": name, "description": _first_paragraph(module)}
            for name, module in modules.items()
        ],
        "paths": paths,
        "components": {
            "schemas": _components([paths, common], config),
            **common,
            "headers": header_components([paths, common], layers),
            # The schemes the operations name: the lab's document names none.
            **({"securitySchemes": schemes} if (schemes := _schemes(paths)) else {}),
        },
    }


def _schemes(paths: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Of ``SECURITY_SCHEMES``, those an operation's ``security`` names."""
    named = {
        name
        for item in paths.values()
        for operation in item.values()
        if isinstance(operation, dict)
        for requirement in operation.get("security", ())
        for name in requirement
    }
    return {name: s for name, s in SECURITY_SCHEMES.items() if name in named}


def _operations(routes: Iterable[Route]) -> dict[tuple[str, str], list[Route]]:
    """The listed rows by (path, method): one operation each."""
    grouped: dict[tuple[str, str], list[Route]] = {}
    for route in routes:
        if route.documented:
            grouped.setdefault((route.path, route.method), []).append(route)
    return grouped


def _operation(
    rows: list[Route],
    config: Config,
    layers: Sequence[Layer],
    shared: Container[Callable[..., Any]] = (),
) -> dict[str, Any]:
    names = [
        f"{route.name}_{route.method.lower()}"
        if route.handler in shared
        else route.name
        for route in rows
    ]
    operation: dict[str, Any] = {
        "operationId": "_or_".join(names),
        "summary": " or ".join(route.name.replace("_", " ") for route in rows),
        "description": rows[0].description
        or DESCRIPTIONS[(rows[0].method, rows[0].path)],
        "tags": [_tag(rows[0])],
        "parameters": _parameters(rows, config),
    }
    if not operation["parameters"]:
        del operation["parameters"]
    if body := _request_body(rows):
        operation["requestBody"] = body
    # A public operation says so (an empty list), rather than saying nothing.
    operation["security"] = ANY_CREDENTIAL if any(r.auth for r in rows) else []
    operation["responses"] = responses(rows, layers)
    return operation


def _tag(route: Route) -> str:
    """The handler's module below its wing (``handlers.todos``: ``todos``; the
    lab's ``reflect``), or the package a module of it is in (the lab's report
    card, ``lab.grade.tasks``: ``grade``), so one part of the API is one tag."""
    return _tagged(route)[0]


def _tagged(route: Route) -> tuple[str, object]:
    """The handler's tag and the module whose docstring describes it."""
    name = route.handler.__module__.removeprefix(_ROOT)
    wing, _, rest = name.partition(".")
    part = rest.partition(".")[0] or wing
    # Imported already: the handler's module is in it.
    return part, sys.modules[_ROOT + (f"{wing}.{part}" if rest else wing)]


_ROOT = __name__.removesuffix("openapi")  # "refapi.": the package's own name


def _first_paragraph(module: object) -> str:
    return " ".join((inspect.getdoc(module) or "").split("\n\n")[0].split())


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
    if rows[0].method == "GET" and not rows[0].streamed:
        conditions.append("If-None-Match")
    if any(r.reads_if_match or PreconditionFailed in r.errors for r in rows):
        conditions.append("If-Match")
    for name in conditions:
        found.append(
            {
                "name": name,
                "in": "header",
                "required": False,
                "description": CONDITIONS[name],
                "schema": CONDITION_SCHEMA,
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
            "format": "int32",
            "minimum": 1,
            "maximum": config.page_size_max,
            "default": config.page_size_default,
        }
    if param.type == "integer":  # an id, read by the router as one
        return {"type": "integer", "format": "int64", "minimum": 1, "maximum": MAX_ID}
    if param.type.endswith("[]"):
        return {"type": "array", "items": {"type": param.type[:-2]}}
    return {"type": param.type}


def _request_body(rows: list[Route]) -> dict[str, Any] | None:
    forms = [route.form for route in rows if route.form]
    if forms:  # the token endpoint: RFC 6749 sends its parameters as a form
        return {
            "description": f"Sent as {FORM}.",
            "required": True,
            "content": {
                FORM: {
                    "schema": ref(forms[0]),
                    "example": schemas.document(forms[0])["examples"][0],
                }
            },
        }
    with_body = [route for route in rows if route.schema]
    if not with_body:
        if any(route.body_types == ANY_BODY for route in rows):
            return {
                "description": "Any body, of any media type, or none.",
                "required": False,
                "content": {"*/*": {"schema": {}}},
            }
        return None
    refs = unique(ref(route.schema) for route in with_body if route.schema)
    schema = refs[0] if len(refs) == 1 else {"oneOf": refs}
    others = [
        kind
        for kind in unique(kind for route in with_body for kind in route.body_types)
        if kind != JSON
    ]
    # One media type: generators make a body parameter for each, and the code
    # openapi-python-client writes for two does not run. The others are named.
    also = f"; also accepted as {', '.join(others)}" if others else ""
    media: dict[str, Any] = {"schema": schema}
    names = unique(route.schema for route in with_body if route.schema)
    if len(names) == 1:
        # The schema's own example, where an editor fills in a body (Swagger UI's
        # "Try it out", which made up text to match each pattern: junk stored).
        media["example"] = schemas.document(names[0])["examples"][0]
    return {
        "description": f"Sent as {JSON}{also}.",
        "required": len(with_body) == len(rows),
        "content": {JSON: media},
    }


# Components


def _components(parts: Any, config: Config) -> dict[str, Any]:
    """Every schema ``parts`` refer to, and every schema those refer to."""
    found: dict[str, Any] = {}
    pending = list(refs(parts, COMPONENT))
    while pending:
        name = pending.pop()
        if name not in found:
            schema = _component(schemas.configured(name, vars(config)))
            # Generators name a model by its title; the component's name makes a
            # better class name (ArticleCreate), so the title opens the description.
            about = [schema.pop("title", ""), schema.pop("description", "")]
            found[name] = {"description": ". ".join(filter(None, about)), **schema}
            pending += refs(found[name], COMPONENT)
    return dict(sorted(found.items()))


def _component(node: Any) -> Any:
    """A schema of ``schemas/`` in the words of OpenAPI 3.1: references between
    files made references between components, ``maxDecimalPlaces`` (ours) made
    ``multipleOf``, ``x-no-invisible`` (ours) a ``not`` pattern, our other
    annotations and the dialect (OpenAPI's own) left out."""
    if isinstance(node, list):
        return [_component(value) for value in node]
    if not isinstance(node, dict):
        return node
    converted: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$schema" or (key.startswith("x-") and key != "x-no-invisible"):
            continue
        if key == "$ref":
            converted[key] = COMPONENT + value.removesuffix(".json")
        elif key == "maxDecimalPlaces":
            converted["multipleOf"] = 10**-value
        elif key == "x-no-invisible" and value:
            # Ours, so a client's validator would skip it: said as a pattern too.
            converted["not"] = {"pattern": schemas.invisible.BMP_PATTERN}
        else:
            converted[key] = _component(value)
    return converted
