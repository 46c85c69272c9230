"""The route table: the one list of what this service answers.

One line per operation: method, path, handler function, request schema, parameters,
response schema and a sample response. The Werkzeug URL map is built from it here;
the CSV catalogue and the OpenAPI document (``openapi.py``) are derived from it too,
so none of them can drift from what is served.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from werkzeug.routing import Map, Rule

from . import schemas
from .errors import (
    ApiError,
    HostNotAllowed,
    IdempotencyKeyInvalid,
    IdempotencyKeyRequired,
    IdempotencyKeyReused,
    PreconditionFailed,
    UpstreamError,
    UpstreamTimeout,
)
from .handlers import articles, docs, health, items, payments, proxy, todos
from .web.negotiation import CSV, JSON, VENDOR, XML, vendor_type
from .web.representations import Resource

JSON_BODY = (JSON, VENDOR)
MERGE_PATCH_BODY = (*JSON_BODY, "application/merge-patch+json")


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # as in the catalogue: integer, number, string, string[]
    where: str = "query"  # query | path | header | body (derived from the schema)
    required: bool = False


@dataclass(frozen=True)
class Answer:
    """An answer besides the success and the error object: a status (or a range,
    ``5XX``) and the schema of its body."""

    status: str
    schema: str  # schemas/<name>.json
    description: str


@dataclass(frozen=True, eq=False)  # compared and hashed by identity
class Route:
    method: str
    path: str
    handler: Callable[..., Any]
    schema: str | None = None  # schemas/<name>.json validates the body
    params: tuple[Param, ...] = ()
    sample: Any = None
    resource: Resource | None = None  # GETs of a resource also speak XML and CSV
    body_types: tuple[str, ...] = JSON_BODY
    # False: the answer does not depend on Accept, because it has no body (204) or
    # because a probe must get it whatever it sends (/healthz).
    negotiated: bool = True
    # One path, many operations (the demo): the ``action`` query value picks the row.
    action: str | None = None
    # False for what is not an API operation (the docs' page and assets, the OpenAPI
    # document): the CSV catalogue and the OpenAPI document leave it out.
    listed: bool = True
    response: str | None = None  # schemas/<name>.json describes the success body
    # What the OpenAPI document cannot derive from the rest of the row: the errors
    # the handler's own rules raise, and answers of other shapes.
    errors: tuple[type[ApiError], ...] = ()
    answers: tuple[Answer, ...] = ()

    @property
    def name(self) -> str:
        return self.handler.__name__

    @cached_property
    def version(self) -> str | None:
        """The API version the path names (``/v1/...``); None for the others."""
        first = self.path.split("/")[1]
        return first[1:] if first[:1] == "v" and first[1:].isdigit() else None

    @cached_property
    def body_params(self) -> tuple[Param, ...]:
        """The body's members, read from its JSON Schema: the one source of truth."""
        if self.schema is None:
            return ()
        return tuple(
            Param(name, kind, "body", required)
            for name, kind, required in schemas.fields(self.schema)
        )

    @cached_property
    def integer_path_params(self) -> tuple[str, ...]:
        return tuple(
            p.name for p in self.params if p.where == "path" and p.type == "integer"
        )

    @cached_property
    def offers(self) -> tuple[str, ...]:
        """The media types a success may be sent as, in our order of preference."""
        if not self.negotiated:
            return ()
        json = (JSON, vendor_type(self.version)) if self.version else (JSON,)
        return (*json, XML, CSV) if self.resource and self.method == "GET" else json


ID = Param("id", "integer", "path", required=True)
LIMIT = Param("limit", "integer")
CURSOR = Param("cursor", "string")

ARTICLE = Resource(
    "article", "articles", ("id", "title", "tags", "createdAt", "updatedAt")
)
TODO = Resource("todo", "todos", ("userId", "id", "title", "completed"))
ITEM = Resource("item", "items", ("id", "name", "createdAt"))
PAYMENT = Resource("payment", "payments", ("id", "amount", "currency", "createdAt"))

_ARTICLE_SAMPLE = {
    "id": 1,
    "title": "Hello",
    "tags": ["intro"],
    "createdAt": "2026-11-21T13:45:00Z",
    "updatedAt": "2026-11-21T13:45:00Z",
}
_TODO_SAMPLE = {
    "userId": 1,
    "id": 1,
    "title": "review the cursor #1",
    "completed": False,
}
_ITEMS_SAMPLE = {
    "data": [{"id": 1, "name": "item 0001", "createdAt": "2026-01-01T00:01:00Z"}],
    "nextCursor": "aXRlbXM6MSc25i36CVCaMGmRfzZHMs0",
}
_HEALTH_SAMPLE = {"status": "ok", "checks": {"storage": "ok"}, "version": "1.0.0"}
_PAYMENT_SAMPLE = {
    "id": "pay_5f2b9c0e4d1a7b3c8e6f0a12",
    "amount": 10.5,
    "currency": "EUR",
    "createdAt": "2026-11-21T13:45:00Z",
}

# The proxy passes on the upstream's status with its JSON; an answer of ours has
# the same statuses, so a client tells them apart by the body.
_UPSTREAM = tuple(
    Answer(status, "upstream", "The upstream's status, passed on with its JSON.")
    for status in ("2XX", "4XX", "5XX")
)
_UNHEALTHY = Answer("503", "health", "A check fails: the failing check is named.")
_IF_MATCH = (PreconditionFailed,)

ROUTES: tuple[Route, ...] = (
    Route("GET", "/v1/articles", articles.list_articles,
          params=(LIMIT, CURSOR, Param("tag", "string")), response="article-page",
          sample={"data": [_ARTICLE_SAMPLE], "nextCursor": None}, resource=ARTICLE),
    Route("POST", "/v1/articles", articles.create_article, schema="article-create",
          response="article", sample=_ARTICLE_SAMPLE),
    Route("GET", "/v1/articles/{id}", articles.get_article, params=(ID,),
          response="article", sample=_ARTICLE_SAMPLE, resource=ARTICLE),
    Route("PATCH", "/v1/articles/{id}", articles.update_article, schema="article-patch",
          params=(ID,), response="article", sample=_ARTICLE_SAMPLE,
          body_types=MERGE_PATCH_BODY, errors=_IF_MATCH),
    Route("DELETE", "/v1/articles/{id}", articles.delete_article, params=(ID,),
          negotiated=False, errors=_IF_MATCH),
    Route("GET", "/v1/todos/{id}", todos.get_todo, params=(ID,), resource=TODO,
          response="todo", sample=_TODO_SAMPLE),
    Route("GET", "/v1/items", items.list_items, params=(LIMIT, CURSOR), resource=ITEM,
          response="item-page", sample=_ITEMS_SAMPLE),
    Route("POST", "/v1/payments", payments.create_payment, schema="payment-create",
          params=(Param("Idempotency-Key", "string", "header", True),),
          response="payment", sample=_PAYMENT_SAMPLE,
          errors=(IdempotencyKeyRequired, IdempotencyKeyInvalid, IdempotencyKeyReused)),
    Route("GET", "/v1/payments/{id}", payments.get_payment,
          params=(Param("id", "string", "path", True),), response="payment",
          sample=_PAYMENT_SAMPLE, resource=PAYMENT),
    Route("GET", "/healthz", health.get_health, response="health",
          sample=_HEALTH_SAMPLE, negotiated=False, answers=(_UNHEALTHY,)),
    Route("GET", "/api/proxy.php", proxy.get_proxy,
          params=(Param("url", "string", required=True),), response="upstream",
          sample={"upstream": "JSON, with the upstream status"},
          errors=(HostNotAllowed, UpstreamError, UpstreamTimeout), answers=_UPSTREAM),
    Route("GET", "/openapi.json", docs.get_openapi, listed=False),
)  # fmt: skip


def url_map(routes: tuple[Route, ...] = ROUTES) -> Map:
    """The Werkzeug map; each rule's endpoint is the ``Route`` itself."""
    rules = [
        Rule(route.path.replace("{", "<").replace("}", ">"), methods=[route.method],
             endpoint=route)
        for route in routes
    ]  # fmt: skip
    # No slash merging or redirects: an API answers the URL it was given, or 404.
    return Map(rules, merge_slashes=False, strict_slashes=True, redirect_defaults=False)


def versioned_prefixes(routes: tuple[Route, ...] = ROUTES) -> frozenset[str]:
    """First path segments served under ``/v1`` (``/articles`` for ``/v1/articles``)."""
    return frozenset(
        "/" + route.path.split("/")[2]
        for route in routes
        if route.path.startswith("/v1/")
    )
