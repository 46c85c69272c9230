"""A row of a route table, and the Werkzeug map made from a table.

``Route`` is one operation: method, path, handler, request schema, parameters,
response schema and a sample. A table of them (``routes.py``, the core's; the lab's
own, ``lab/routes.py``) is all that says what an app answers: the router serves
it, and the CSV catalogue and the OpenAPI document are derived from it. This module
imports no table and no handler, so either table, the router and the document
generator can import it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any, Literal, get_args

from werkzeug.routing import Map, Rule

from .. import schemas
from ..errors import (
    ApiError,
    CsrfFailed,
    Forbidden,
    IdempotencyKeyInUse,
    IdempotencyKeyInvalid,
    IdempotencyKeyRequired,
    IdempotencyKeyReused,
    InvalidCursor,
    InvalidJson,
    MalformedRequest,
    MethodNotAllowed,
    NotAcceptable,
    NotFound,
    PayloadTooLarge,
    PreconditionFailed,
    Unauthenticated,
    UnknownAction,
    UnsupportedMediaType,
    ValidationError,
)
from ..storage.base import MAX_ID
from ..web.auth import UNSAFE_METHODS
from ..web.negotiation import CSV, JSON, VENDOR, XML, vendor_type
from ..web.representations import Resource

JSON_BODY = (JSON, VENDOR)
MERGE_PATCH_BODY = (*JSON_BODY, "application/merge-patch+json")
# A row that takes any body, of any media type, and reads it itself (the lab's).
ANY_BODY = ("*/*",)
# Who may call a row that is not public: any valid credential, or an admin's.
Auth = Literal["user", "admin"]


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # as in the catalogue: integer, number, string, string[]
    where: str = "query"  # query | path | header | body (derived from the schema)
    required: bool = False
    # Its JSON Schema in the OpenAPI document, when more than its type: the bounds
    # the code that reads it enforces, kept beside that code.
    schema: Mapping[str, Any] | None = field(default=None, compare=False)
    # A path parameter that takes the rest of the path, slashes included
    # (Werkzeug's path converter): httpbin's /anything/{path}.
    rest: bool = False
    # A path parameter that is a credential (the lab's /basic-auth/{user}/{passwd}):
    # the request's log line writes it [redacted] (``lab.logged_paths``).
    secret: bool = False


@dataclass(frozen=True)
class Answer:
    """An answer besides the success and the error object: a status (or a range,
    ``5XX``) and the schema of its body."""

    status: str
    schema: str | None  # schemas/<name>.json; None: no body (204, 304)
    description: str
    headers: tuple[str, ...] = ()  # what it always carries besides the layers'
    # The media types its body is sent as, when not JSON (the lab's 206: bytes).
    produces: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)  # compared and hashed by identity
class Route:
    method: str
    path: str
    handler: Callable[..., Any]
    schema: str | None = None  # schemas/<name>.json validates the body
    # schemas/<name>.json describes a form body (application/x-www-form-urlencoded)
    # that the handler reads and checks itself: the OAuth token endpoint, whose
    # every refusal is RFC 6749's, not the router's.
    form: str | None = None
    # The largest body the row reads, in bytes: what its schema (or form) accepts
    # written at its longest, every character escaped, and laid out by a
    # pretty-printer; the router takes it, or REFAPI_MAX_BODY_BYTES where that is
    # smaller. A row that reads a body must name one: past it a body is refused
    # unread (413), so a hostile body costs no more than one the row would take
    # (docs/api.md, "Request bodies"; tests/test_routes_limits.py checks each).
    body_limit: int | None = None
    # The deepest a JSON body of the row nests, where its schema allows less than
    # REFAPI_JSON_MAX_DEPTH: deeper is refused by its brackets before it is decoded
    # (docs/api.md, "Request bodies"; tests/test_routes_limits.py checks it).
    body_depth: int | None = None
    params: tuple[Param, ...] = ()
    sample: Any = None  # a success's body, as the document shows it: schemas.sample
    resource: Resource | None = None  # GETs of a resource also speak XML and CSV
    body_types: tuple[str, ...] = JSON_BODY
    # False: the answer does not depend on Accept, because it has no body (204) or
    # because a probe must get it whatever it sends (/healthz).
    negotiated: bool = True
    # Who may call: None (public), "user" (any valid credential) or "admin"
    # (``Auth``, checked when the row is made); the router enforces it.
    # ``sensitive``: the answer carries or depends on a credential, so it is
    # ``Cache-Control: no-store`` (as every authenticated one: ``no_store``).
    auth: Auth | None = None
    sensitive: bool = False
    # Who may change the path's record, where only some callers may (its author,
    # the user themself): a function taking what a handler may take, raising 403,
    # that the router calls after ``auth`` and before the body is read, since
    # authorization comes before the body (docs/api.md, "The order of checks").
    may_change: Callable[..., None] | None = None
    # The status of a success, when not the method's usual one (POST 201,
    # DELETE 204, else 200): a login is a POST that creates nothing.
    status: int | None = None
    # The answer is written as it is made (web/wsgi.py, Streamed): no body to hash,
    # so no ETag, and no 304 (the lab's streams, drip and events).
    streamed: bool = False
    # The media types a success is sent as, when not JSON (the CSV catalogue, the
    # lab's response-headers, whose client picks one).
    produces: tuple[str, ...] = ()
    # One path, many operations (the demo): the ``action`` query value picks the row.
    action: str | None = None
    # False for what is not an API operation (the docs' page and assets, the OpenAPI
    # document): the OpenAPI document leaves it out, and so the CSV catalogue.
    documented: bool = True
    # False for an operation the OpenAPI document describes but the CSV catalogue,
    # a list of the resources' calls, leaves out: the front page, a way in
    # (docs/api.md, "The front page").
    catalogued: bool = True
    response: str | None = None  # schemas/<name>.json describes the success body
    # What the operation does, for the OpenAPI document; else openapi/descriptions.py
    # has it by method and path.
    description: str | None = None
    # What the OpenAPI document cannot derive from the rest of the row: the errors
    # the handler's own rules raise, and answers of other shapes.
    errors: tuple[type[ApiError], ...] = ()
    answers: tuple[Answer, ...] = ()
    # Response headers a success always carries besides those the row's columns
    # imply (``HEADERS`` in openapi/vocabulary.py describes each).
    headers: tuple[str, ...] = ()
    # A success header's schema where the row's differs from the vocabulary's
    # (openapi/vocabulary.py): /lab/etag/{etag}'s ETag is the one its path names.
    header_schemas: Mapping[str, Mapping[str, Any]] = field(
        default_factory=dict, compare=False
    )
    # Rate-limit buckets every request of the row passes besides the default one
    # (what hashes a password: "auth", "register"), checked by RateLimit before it.
    buckets: tuple[str, ...] = ()
    # False where the row reads no credential, so ``Authenticate`` looks none up:
    # the health check answers anyone, and the token endpoint authenticates OAuth
    # clients itself (Basic or its form).
    credentials: bool = True
    # False where no rate limit applies: a load balancer's probes and a monitor's
    # scrapes must not be starved (nor carry RateLimit fields).
    rate_limited: bool = True
    # The setting without which the row is not served at all (its path is 404 for
    # every method): ``/metrics`` needs ``REFAPI_METRICS`` (config.metrics).
    needs: str | None = None

    def __post_init__(self) -> None:
        if not self.documented:  # what the document leaves out is no operation
            object.__setattr__(self, "catalogued", False)
        # A misspelt role ("admn") would otherwise mean "any credential".
        if self.auth is not None and self.auth not in get_args(Auth):
            raise ValueError(
                f"{self.method} {self.path}: auth is None or one of "
                f"{get_args(Auth)}, not {self.auth!r}"
            )
        # Asked of a caller, who a public row has none of (router._authorize).
        if self.may_change is not None and self.auth is None:
            raise ValueError(f"{self.method} {self.path}: may_change needs an auth")
        # Without its own, a row would read bodies up to REFAPI_MAX_BODY_BYTES.
        reads_body = self.schema is not None or self.form is not None
        if reads_body != (self.body_limit is not None) or (self.body_limit or 1) < 1:
            raise ValueError(
                f"{self.method} {self.path}: a row with a schema or a form names a "
                f"positive body_limit, and only such a row: not {self.body_limit!r}"
            )

    @property
    def name(self) -> str:
        return self.handler.__name__

    @cached_property
    def no_store(self) -> bool:
        """Whether the row's answers, refusals included, carry or depend on a
        credential, and so are ``Cache-Control: no-store`` (``errors.NO_STORE``)."""
        return self.auth is not None or self.sensitive

    @cached_property
    def success_status(self) -> int:
        """The status of a success: ``status``, else the method's usual one."""
        return self.status or {"POST": 201, "DELETE": 204}.get(self.method, 200)

    @cached_property
    def success_headers(self) -> tuple[tuple[str, bool], ...]:
        """The headers a success carries besides the layers', each with whether it
        always does: what the columns imply, then those the row names."""
        found: dict[str, bool] = {}
        if self.success_status == 201:
            found["Location"] = True
        # PATCH: the new one's. Not PUT: its answer may carry a validator only
        # when the body was stored as sent (RFC 9110 9.3.4; docs/api.md).
        if (
            self.method in ("GET", "PATCH")
            and self.success_status < 300
            and not (self.streamed)
        ):
            found["ETag"] = True  # not a redirect's: it has no representation
        if any(param.name == "cursor" for param in self.params):
            found.update({"X-Next-Cursor": False, "Link": False})
        if self.idempotency_key is not None:
            found["Idempotent-Replayed"] = False
        if self.offers and self.success_status != 204:
            found["Vary"] = True  # Vary: Accept, from web/representations.py
        if self.no_store:
            found.update({"Cache-Control": True, "Set-Cookie": False})
        found.update(dict.fromkeys(self.headers, True))
        return tuple(found.items())

    @cached_property
    def implied_errors(self) -> tuple[type[ApiError], ...]:
        """The errors the row's columns imply, by status: the router's checks (a
        body: 400, 413, 415; a parameter: 400; an idempotency key: 400, 409, 422;
        Accept: 406; ``auth``: 401, an admin's 403, a session's CSRF 403 on an
        unsafe method) and an id's 404.
        Those of the handler's own rules, the row names (``errors``)."""
        found: list[type[ApiError]] = [*self.body_errors, *self.key_errors]
        for param in self.params:
            if param.name == "cursor":
                found.append(InvalidCursor)
            elif param.where == "query" or param.type == "integer":
                found.append(ValidationError)
            if param.where == "path" or param.name == "id":
                found.append(NotFound)
        if self.offers or self.version:
            found.append(NotAcceptable)
        if self.auth is not None:
            found.append(Unauthenticated)
        if self.auth == "admin":
            found.append(Forbidden)
        if self.auth is not None and self.method in UNSAFE_METHODS:
            found.append(CsrfFailed)  # on the session cookie's authority
        if self.reads_if_match:
            found.append(PreconditionFailed)
        unique = list(dict.fromkeys(found))
        return tuple(sorted(unique, key=lambda error: error.status))

    @cached_property
    def reads_if_match(self) -> bool:
        """Whether the router asks ``If-Match`` of the row's answer: a GET of a
        resource (a record or a page; RFC 9110 section 13.1.1, 412 unless it names
        the answer's tag). Not the lab's, which show it as data, as httpbin's do;
        a write asks it in its transaction (``errors``)."""
        return self.method == "GET" and self.resource is not None

    @cached_property
    def idempotency_key(self) -> Param | None:
        """The row's ``Idempotency-Key`` parameter: where a create takes a key,
        which the router reads (docs/api.md, "Idempotent creates")."""
        return next((p for p in self.params if p.name == "Idempotency-Key"), None)

    @cached_property
    def key_errors(self) -> tuple[type[ApiError], ...]:
        """What an idempotency key may raise: 400 for a bad one (or none, where
        one is required), 409 while its first request runs, 422 for another body."""
        key = self.idempotency_key
        if key is None:
            return ()
        required = (IdempotencyKeyRequired,) if key.required else ()
        return (*required, IdempotencyKeyInvalid, IdempotencyKeyInUse,
                IdempotencyKeyReused)  # fmt: skip

    @cached_property
    def body_errors(self) -> tuple[type[ApiError], ...]:
        """What reading the body may raise: a JSON body's 400s, 413 and 415; a
        form's 413 (its other refusals are RFC 6749's, the row's ``answers``)."""
        if self.schema:
            return (InvalidJson, MalformedRequest, ValidationError, PayloadTooLarge,
                    UnsupportedMediaType)  # fmt: skip
        return (PayloadTooLarge,) if self.form else ()

    @cached_property
    def version(self) -> str | None:
        """The API version the path names (``/v1/...``); None for the others."""
        first = self.path.split("/")[1]
        return first[1:] if first[:1] == "v" and first[1:].isdigit() else None

    @cached_property
    def body_params(self) -> tuple[Param, ...]:
        """The body's members, read from its JSON Schema: the one source of truth."""
        body = self.schema or self.form
        if body is None:
            return ()
        return tuple(
            Param(name, kind, "body", required)
            for name, kind, required in schemas.fields(body)
        )

    @cached_property
    def integer_path_params(self) -> tuple[tuple[str, int, int], ...]:
        """Each integer path parameter with its least and most values: its schema's
        ``minimum`` where it names one (0 for the lab's offset), else 1 (an id),
        and its ``maximum`` (the lab's chain of redirects: 100), else an id's."""
        return tuple(
            (p.name, (p.schema or {}).get("minimum", 1),
             (p.schema or {}).get("maximum", MAX_ID))
            for p in self.params
            if p.where == "path" and p.type == "integer"
        )  # fmt: skip

    @cached_property
    def query_args(self) -> tuple[Param, ...]:
        """Required query parameters the handler takes as arguments (the demo's
        ``id``); ``action`` only picks the row."""
        return tuple(
            p
            for p in self.params
            if p.where == "query" and p.required and p.name != "action"
        )

    @cached_property
    def methods(self) -> tuple[str, ...]:
        """What ``Allow`` names for this operation: HEAD with GET, and OPTIONS."""
        head = ("HEAD",) if self.method == "GET" else ()
        return tuple(sorted({self.method, *head, "OPTIONS"}))

    @cached_property
    def offers(self) -> tuple[str, ...]:
        """The media types a success may be sent as, in our order of preference."""
        if not self.negotiated:
            return ()
        if self.produces:
            return self.produces
        json = (JSON, vendor_type(self.version)) if self.version else (JSON,)
        return (*json, XML, CSV) if self.resource and self.method == "GET" else json


class Actions:
    """The rows of one path told apart by its ``action`` query parameter (the demo).

    The URL map cannot look at the query, so it matches the path to this table for
    any method, and ``pick`` finishes routing in the usual order: a method no
    action answers is 405, then a missing or unknown action is 400
    ``UNKNOWN_ACTION``, then a known action asked with another method is 405 with
    that action's ``Allow``. ``OPTIONS`` names every method of the path
    (``methods``), whatever the action: the OpenAPI document describes the path's
    operations, one per method, and has no way to tell actions apart.
    """

    def __init__(self, rows: list[Route]) -> None:
        self.path = rows[0].path
        self.by_action = {row.action or "": row for row in rows}
        self.allowed = sorted(self.by_action)
        self.methods = sorted({m for row in rows for m in row.methods})

    def pick(self, method: str, actions: list[str]) -> Route:
        """The row for ``method`` and the query's ``action`` values (given once)."""
        if method not in self.methods:
            raise MethodNotAllowed(self.methods)
        if len(actions) != 1 or actions[0] not in self.by_action:
            raise UnknownAction(self.allowed)
        row = self.by_action[actions[0]]
        if method not in row.methods:
            raise MethodNotAllowed(list(row.methods))
        return row


@lru_cache(maxsize=16)
def url_map(routes: tuple[Route, ...]) -> Map:
    """The Werkzeug map; each rule's endpoint is the ``Route`` itself, or the
    ``Actions`` of a path whose rows name actions (then any method matches).

    Made once per route table (compiling its rules costs milliseconds) and shared
    by every app serving that table: each binds its own adapter, and nothing adds
    rules to a map once made."""
    rules = []
    actioned: dict[str, list[Route]] = {}
    for route in routes:
        if route.action is not None:
            actioned.setdefault(route.path, []).append(route)
            continue
        rule_path = route.path.replace("{", "<").replace("}", ">")
        for param in route.params:
            if param.rest:
                rule_path = rule_path.replace(f"<{param.name}>", f"<path:{param.name}>")
        rules.append(Rule(rule_path, methods=[route.method], endpoint=route))
    for path, rows in actioned.items():
        rules.append(Rule(path, endpoint=Actions(rows)))
    # No slash merging or redirects: an API answers the URL it was given, or 404.
    return Map(rules, merge_slashes=False, strict_slashes=True, redirect_defaults=False)


def rate_limit_buckets(
    routes: tuple[Route, ...],
) -> dict[tuple[str, str], tuple[str, ...]]:
    """(method, path) -> the buckets RateLimit checks besides the default one, of a
    table (the core's, the lab's). It runs before routing and matches paths as they
    are, so such a row names none."""
    found = {}
    for route in routes:
        if route.buckets:
            if "{" in route.path:
                raise ValueError(f"{route.path}: a row with buckets has no parameters")
            found[(route.method, route.path)] = route.buckets
    return found
