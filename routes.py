"""The route table: the one list of what this service answers.

One line per operation: method, path, handler function, request schema, parameters,
response schema and a sample response. The Werkzeug URL map is built from it here;
the CSV catalogue and the OpenAPI document (``openapi/``) are derived from it too,
so none of them can drift from what is served.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from typing import Any, Literal, get_args

from werkzeug.routing import Map, Rule

from . import schemas
from .errors import (
    ApiError,
    Busy,
    Conflict,
    CsrfFailed,
    Forbidden,
    HostNotAllowed,
    IdempotencyKeyInUse,
    IdempotencyKeyInvalid,
    IdempotencyKeyRequired,
    IdempotencyKeyReused,
    InvalidCredentials,
    InvalidCursor,
    InvalidJson,
    LoopDetected,
    MalformedRequest,
    MethodNotAllowed,
    NotAcceptable,
    NotFound,
    PayloadTooLarge,
    PreconditionFailed,
    Simulated,
    Unauthenticated,
    UnknownAction,
    UnsupportedMediaType,
    UpstreamError,
    UpstreamTimeout,
    ValidationError,
)
from .handlers import (
    articles,
    catalogue,
    demo,
    docs,
    explain,
    front,
    guides,
    health,
    items,
    keys,
    lab,
    metrics,
    oauth,
    payments,
    proxy,
    session,
    todos,
    ui,
    users,
)
from .web import idempotency, pagination, ssrf
from .web.auth import UNSAFE_METHODS
from .web.negotiation import CSV, HTML, JSON, VENDOR, XML, vendor_type
from .web.representations import Resource

JSON_BODY = (JSON, VENDOR)
MERGE_PATCH_BODY = (*JSON_BODY, "application/merge-patch+json")
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


@dataclass(frozen=True)
class Answer:
    """An answer besides the success and the error object: a status (or a range,
    ``5XX``) and the schema of its body."""

    status: str
    schema: str | None  # schemas/<name>.json; None: no body (204, 304)
    description: str
    headers: tuple[str, ...] = ()  # what it always carries besides the layers'


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
    # The status of a success, when not the method's usual one (POST 201,
    # DELETE 204, else 200): a login is a POST that creates nothing.
    status: int | None = None
    # The media types a success is sent as, when not JSON (the CSV catalogue).
    produces: tuple[str, ...] = ()
    # One path, many operations (the demo): the ``action`` query value picks the row.
    action: str | None = None
    # False for what is not an API operation (the docs' page and assets, the OpenAPI
    # document): the CSV catalogue and the OpenAPI document leave it out.
    listed: bool = True
    # False for an operation the OpenAPI document describes but the CSV catalogue,
    # a list of the resources' calls, leaves out: the front page, a way in
    # (docs/api.md, "The front page"). What the catalogue reads is ``catalogued``.
    in_catalogue: bool = True
    response: str | None = None  # schemas/<name>.json describes the success body
    # What the OpenAPI document cannot derive from the rest of the row: the errors
    # the handler's own rules raise, and answers of other shapes.
    errors: tuple[type[ApiError], ...] = ()
    answers: tuple[Answer, ...] = ()
    # Response headers a success always carries besides those the row's columns
    # imply (``HEADERS`` in openapi/vocabulary.py describes each).
    headers: tuple[str, ...] = ()
    # Rate-limit buckets every request of the row passes besides the default one
    # (what hashes a password: "auth", "register"), checked by RateLimit before it.
    buckets: tuple[str, ...] = ()
    # The setting without which the row is not served at all (its path is 404 for
    # every method): ``/metrics`` needs ``REFAPI_METRICS`` (config.metrics).
    needs: str | None = None

    def __post_init__(self) -> None:
        # A misspelt role ("admn") would otherwise mean "any credential".
        if self.auth is not None and self.auth not in get_args(Auth):
            raise ValueError(
                f"{self.method} {self.path}: auth is None or one of "
                f"{get_args(Auth)}, not {self.auth!r}"
            )
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

    @property
    def catalogued(self) -> bool:
        """Whether the CSV catalogue has a line for the row: an operation's only."""
        return self.listed and self.in_catalogue

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
        if self.method in ("GET", "PATCH"):
            found["ETag"] = True
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
        unique = list(dict.fromkeys(found))
        return tuple(sorted(unique, key=lambda error: error.status))

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
    def integer_path_params(self) -> tuple[str, ...]:
        return tuple(
            p.name for p in self.params if p.where == "path" and p.type == "integer"
        )

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


ID = Param("id", "integer", "path", required=True)
ACTION = Param("action", "string", required=True)
NOTE_ID = Param("id", "integer", required=True)
LIMIT = Param("limit", "integer")
CURSOR = Param("cursor", "string", schema=pagination.CURSOR_SCHEMA)
TAG = Param("tag", "string", schema=articles.tag_filter_schema())
# A create that takes an idempotency key (docs/api.md, "Idempotent creates"): the
# router reads it, and the document lists it, its 409 and 422. Required on payments.
IDEMPOTENCY_KEY = Param(
    "Idempotency-Key", "string", "header", schema=idempotency.KEY_SCHEMA
)
IDEMPOTENCY_KEY_REQUIRED = replace(IDEMPOTENCY_KEY, required=True)

ARTICLE = Resource(
    "article", "articles", ("id", "title", "tags", "author", "createdAt", "updatedAt")
)
TODO = Resource("todo", "todos", ("userId", "id", "title", "completed"))
ITEM = Resource("item", "items", ("id", "name", "createdAt"))
NOTE = Resource("note", "notes", ("id", "text", "createdAt"))
USER = Resource(
    "user",
    "users",
    ("id", "email", "firstName", "lastName", "role", "createdAt", "updatedAt"),
)
PAYMENT = Resource("payment", "payments", ("id", "amount", "currency", "createdAt"))
API_KEY = Resource("apiKey", "apiKeys", ("id", "name", "userId", "createdAt"))
OAUTH_CLIENT = Resource(
    "oauthClient", "oauthClients", ("id", "name", "clientId", "createdAt")
)

# The proxy passes on the upstream's status with its JSON; an answer of ours has
# the same statuses, so a client tells them apart by the body.
_UPSTREAM = tuple(
    Answer(status, "upstream", "The upstream's status, passed on with its JSON.")
    for status in ("2XX", "4XX", "5XX")
)
_UNHEALTHY = Answer(
    "503",
    "health",
    "A check fails: the failing check is named.",
    ("Retry-After", "Cache-Control"),
)
# Article writes: the author or an admin only (403), then If-Match (412).
_AUTHOR_IF_MATCH = (Forbidden, PreconditionFailed)
# The token endpoint's refusals are RFC 6749's, not the error object alone.
_OAUTH_ERRORS = (
    Answer("400", "oauth-error", "invalid_request, unsupported_grant_type or "
           "invalid_scope (RFC 6749 section 5.2)."),
    Answer("401", "oauth-error", "invalid_client: the client failed to authenticate "
           "(a Basic challenge).", ("WWW-Authenticate",)),
)  # fmt: skip
# The lab's status answers any status asked (docs/lab.md, "Statuses").
_SIMULATED = (
    Answer("204", None, "Asked for: no body."),
    Answer("2XX", "lab-status", "The status asked for (no body on 204); 201 with "
           "Location."),
    Answer("304", None, "Asked for: no body."),
    Answer("3XX", "lab-status", "The redirect asked for, to /api/echo (Location); "
           "304 without a body."),
    Answer("4XX", "error", "The status asked for, code SIMULATED (401 with "
           "WWW-Authenticate, 405 with Allow, 429 with Retry-After)."),
    Answer("5XX", "error", "The status asked for, code SIMULATED (503 with "
           "Retry-After)."),
)  # fmt: skip
LAB_CODE = Param("code", "string", "path", True, lab.CODE_SCHEMA)
# Its bounds are the configuration's: the document reads them (openapi/).
SECONDS = Param("seconds", "number", "path", True)
DEMO = "/api/demo.php"
KiB = 1024  # body limits (Route.body_limit) are in bytes

ROUTES: tuple[Route, ...] = (
    # The front page: links to the rest, as HTML for a browser, JSON for a client.
    Route("GET", "/", front.get_front_page, response="front",
          sample=schemas.sample("front"),
          produces=(JSON, HTML), headers=("Content-Security-Policy",),
          in_catalogue=False),
    Route("GET", "/v1/articles", articles.list_articles,
          params=(LIMIT, CURSOR, TAG), response="article-page",
          sample=schemas.sample("article-page"), resource=ARTICLE),
    Route("POST", "/v1/articles", articles.create_article, schema="article-create",
          body_limit=16 * KiB, params=(IDEMPOTENCY_KEY,), response="article",
          sample=schemas.sample("article"), auth="user"),
    Route("GET", "/v1/articles/{id}", articles.get_article, params=(ID,),
          response="article", sample=schemas.sample("article"), resource=ARTICLE),
    Route("PATCH", "/v1/articles/{id}", articles.update_article, schema="article-patch",
          body_limit=16 * KiB, params=(ID,), response="article",
          sample=schemas.sample("article"), body_types=MERGE_PATCH_BODY,
          errors=_AUTHOR_IF_MATCH, auth="user"),
    Route("DELETE", "/v1/articles/{id}", articles.delete_article, params=(ID,),
          negotiated=False, errors=_AUTHOR_IF_MATCH, auth="user"),
    Route("GET", "/v1/todos/{id}", todos.get_todo, params=(ID,), resource=TODO,
          response="todo", sample=schemas.sample("todo")),
    Route("GET", "/v1/items", items.list_items, params=(LIMIT, CURSOR), resource=ITEM,
          response="item-page", sample=schemas.sample("item-page")),
    Route("POST", "/v1/payments", payments.create_payment, schema="payment-create",
          body_limit=1 * KiB, params=(IDEMPOTENCY_KEY_REQUIRED,),
          response="payment", sample=schemas.sample("payment"), auth="user"),
    Route("GET", "/v1/payments/{id}", payments.get_payment,
          params=(Param("id", "string", "path", True, payments.ID_SCHEMA),),
          response="payment",
          sample=schemas.sample("payment"), resource=PAYMENT, auth="user"),
    Route("GET", DEMO, demo.list_notes, action="list", params=(ACTION, LIMIT, CURSOR),
          response="note-page", sample=schemas.sample("note-page"),
          resource=NOTE),
    Route("GET", DEMO, demo.get_note, action="detail", params=(ACTION, NOTE_ID),
          response="note-record", sample=schemas.sample("note-record"), resource=NOTE),
    Route("POST", DEMO, demo.create_note, action="create", schema="note",
          body_limit=12 * KiB, params=(ACTION, IDEMPOTENCY_KEY), response="note-record",
          sample=schemas.sample("note-record")),
    Route("PATCH", DEMO, demo.update_note, action="update", schema="note",
          body_limit=12 * KiB, params=(ACTION, NOTE_ID), response="note-record",
          sample=schemas.sample("note-record"), body_types=MERGE_PATCH_BODY),
    Route("DELETE", DEMO, demo.delete_note, action="delete", params=(ACTION, NOTE_ID),
          negotiated=False),
    Route("GET", "/api/download_csv.php", catalogue.download_catalogue, produces=(CSV,),
          sample=",".join(catalogue.HEADER) + "\r\n...",
          headers=("Content-Disposition",)),
    Route("POST", "/api/users", users.register_user, schema="user-register",
          body_limit=20 * KiB, response="user", sample=schemas.sample("user"),
          sensitive=True, errors=(Forbidden, Conflict), buckets=("register",)),
    Route("GET", "/api/users", users.list_users, params=(LIMIT, CURSOR),
          response="user-page", sample=schemas.sample("user-page"),
          resource=USER, auth="user"),
    Route("GET", "/api/users/{id}", users.get_user, params=(ID,), response="user",
          sample=schemas.sample("user"), resource=USER, auth="user"),
    # A PUT that changes a password passes the "auth" bucket too: only the handler
    # can tell from the body, so it passes it (RateLimits.take) before it hashes.
    Route("PUT", "/api/users/{id}", users.replace_user, schema="user-replace",
          body_limit=32 * KiB, params=(ID,), response="user",
          sample=schemas.sample("user"), auth="user", errors=(Forbidden, Conflict)),
    Route("DELETE", "/api/users/{id}", users.delete_user, params=(ID,),
          negotiated=False, auth="user", errors=(Forbidden, Conflict)),
    Route("POST", "/api/login", session.login, schema="login", body_limit=16 * KiB,
          response="login-result",
          sample=schemas.sample("login-result"), sensitive=True,
          errors=(InvalidCredentials,), status=200),
    Route("POST", "/api/logout", session.logout, negotiated=False, auth="user",
          status=204),
    Route("GET", "/api/session", session.get_session, response="session",
          sample=schemas.sample("session"), sensitive=True),
    Route("POST", "/api/keys", keys.create_api_key, schema="api-key-create",
          body_limit=2 * KiB, response="api-key-created",
          sample=schemas.sample("api-key-created"), auth="admin"),
    Route("GET", "/api/keys", keys.list_api_keys, params=(LIMIT, CURSOR),
          response="api-key-page", resource=API_KEY, auth="admin",
          sample=schemas.sample("api-key-page")),
    Route("DELETE", "/api/keys/{id}", keys.delete_api_key, params=(ID,),
          negotiated=False, auth="admin"),
    Route("POST", "/api/oauth-clients", keys.create_oauth_client,
          schema="oauth-client-create", body_limit=2 * KiB,
          response="oauth-client-created",
          sample=schemas.sample("oauth-client-created"), auth="admin"),
    Route("GET", "/api/oauth-clients", keys.list_oauth_clients, params=(LIMIT, CURSOR),
          response="oauth-client-page", resource=OAUTH_CLIENT, auth="admin",
          sample=schemas.sample("oauth-client-page")),
    Route("DELETE", "/api/oauth-clients/{id}", keys.delete_oauth_client, params=(ID,),
          negotiated=False, auth="admin"),
    # Public: the client authenticates itself there, by Basic or in the form.
    Route("POST", "/oauth/token", oauth.issue_token, form=oauth.FORM_SCHEMA,
          body_limit=48 * KiB, response="oauth-token",
          sample=schemas.sample("oauth-token"), sensitive=True, status=200,
          answers=_OAUTH_ERRORS),
    Route("GET", "/healthz", health.get_health, response="health",
          sample=schemas.sample("health"), negotiated=False, answers=(_UNHEALTHY,),
          headers=("Cache-Control",)),
    # Prometheus' text format, for the addresses REFAPI_METRICS names or an admin;
    # not an API operation, and never rate limited.
    Route("GET", "/metrics", metrics.get_metrics, listed=False, negotiated=False,
          sensitive=True, needs="metrics"),
    Route("GET", proxy.PATH, proxy.get_proxy,
          params=(Param("url", "string", required=True, schema=ssrf.URL_SCHEMA),),
          response="upstream",
          sample=schemas.sample("upstream"),
          errors=(HostNotAllowed, UpstreamError, Busy, LoopDetected, UpstreamTimeout),
          answers=_UPSTREAM),
    # The learner's lab (docs/lab.md): every method of lab.METHODS, public, JSON
    # whatever Accept says; 404 with REFAPI_LAB=0. The echo reads its own body.
    *(Route(method, "/api/echo", lab.echo_request, response="echo",
            sample=schemas.sample("echo"), negotiated=False, sensitive=True,
            errors=(MalformedRequest, PayloadTooLarge), status=200, needs="lab")
      for method in lab.METHODS),
    *(Route(method, "/api/status/{code}", lab.answer_status,
            params=(LAB_CODE, Param("seed", "integer")), response="lab-status",
            sample=schemas.sample("lab-status"), negotiated=False,
            errors=(Simulated,), answers=_SIMULATED, status=200, needs="lab")
      for method in lab.METHODS),
    *(Route(method, "/api/delay/{seconds}", lab.delay_response, params=(SECONDS,),
            response="delay", sample=schemas.sample("delay"), negotiated=False,
            errors=(ValidationError, LoopDetected), status=200, needs="lab")
      for method in lab.METHODS),
    # The explainer runs a request
    # through the service as the caller, so its answer depends on the caller's
    # credentials (no-store), and it passes a bucket of its own (docs/explain.md).
    Route("POST", explain.PATH, explain.explain_exchange, schema="explain-form",
          body_limit=64 * KiB, body_depth=3, response="explain",
          sample=schemas.sample("explain"), status=200, sensitive=True,
          buckets=("explain",), errors=(Busy,), needs="lab"),
    Route("GET", "/openapi.json", docs.get_openapi, listed=False),
    # The interactive docs: an HTML page and its files, whatever Accept says.
    Route("GET", "/docs", docs.get_docs, listed=False, negotiated=False),
    # URLs a person may type, /docs/ and /ui: 308 to the pages' one URLs
    # (docs/api.md, "The front page").
    Route("GET", "/docs/", docs.redirect_to_docs, listed=False, negotiated=False),
    Route("GET", "/docs/{name}", docs.get_docs_file,
          params=(Param("name", "string", "path", True),), listed=False,
          negotiated=False),
    # The web UI: its page and files, public (each call it makes is authorized).
    Route("GET", "/ui/", ui.get_ui, listed=False, negotiated=False),
    Route("GET", "/ui", ui.redirect_to_ui, listed=False, negotiated=False),
    Route("GET", "/ui/{name}", ui.get_ui_file,
          params=(Param("name", "string", "path", True),), listed=False,
          negotiated=False),
    # The guides as pages (docs/api.md, "The guides"): public, whatever Accept says.
    Route("GET", "/guides/", guides.get_guides, listed=False, negotiated=False),
    Route("GET", "/guides", guides.redirect_to_guides, listed=False,
          negotiated=False),
    Route("GET", "/guides/{name}", guides.get_guide,
          params=(Param("name", "string", "path", True),), listed=False,
          negotiated=False),
)  # fmt: skip


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
def url_map(routes: tuple[Route, ...] = ROUTES) -> Map:
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
        rules.append(Rule(rule_path, methods=[route.method], endpoint=route))
    for path, rows in actioned.items():
        rules.append(Rule(path, endpoint=Actions(rows)))
    # No slash merging or redirects: an API answers the URL it was given, or 404.
    return Map(rules, merge_slashes=False, strict_slashes=True, redirect_defaults=False)


def rate_limit_buckets(
    routes: tuple[Route, ...] = ROUTES,
) -> dict[tuple[str, str], tuple[str, ...]]:
    """(method, path) -> the buckets RateLimit checks besides the default one. It
    runs before routing and matches paths as they are, so such a row names none."""
    found = {}
    for route in routes:
        if route.buckets:
            if "{" in route.path:
                raise ValueError(f"{route.path}: a row with buckets has no parameters")
            found[(route.method, route.path)] = route.buckets
    return found


def versioned_prefixes(routes: tuple[Route, ...] = ROUTES) -> frozenset[str]:
    """First path segments served under ``/v1`` (``/articles`` for ``/v1/articles``)."""
    return frozenset(
        "/" + route.path.split("/")[2]
        for route in routes
        if route.path.startswith("/v1/")
    )
