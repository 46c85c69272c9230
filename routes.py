"""The route table: the one list of what this service answers.

One line per operation: method, path, handler function, request schema, parameters,
response schema and a sample response (a row is a ``router.route.Route``). The
router builds the Werkzeug URL map from it; the CSV catalogue, the OpenAPI document
(``openapi/``) and what the middleware pass untouched (``credential_free_paths``,
``unlimited_paths``) are derived from it too, so none of them can drift from what
is served.
"""

from __future__ import annotations

from dataclasses import replace

from . import schemas
from .errors import (
    Busy,
    Conflict,
    Forbidden,
    HostNotAllowed,
    InvalidCredentials,
    LoopDetected,
    PreconditionFailed,
    UpstreamError,
    UpstreamTimeout,
)
from .handlers import (
    articles,
    catalogue,
    demo,
    docs,
    front,
    guides,
    health,
    items,
    keys,
    metrics,
    oauth,
    payments,
    proxy,
    session,
    todos,
    ui,
    users,
)
from .handlers.proxy import ssrf
from .router.route import MERGE_PATCH_BODY, Answer, Param, Route
from .web import idempotency, pagination
from .web.negotiation import CSV, HTML, JSON
from .web.representations import Resource

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
DEMO = "/api/demo.php"
KiB = 1024  # body limits (Route.body_limit) are in bytes

ROUTES: tuple[Route, ...] = (
    # The front page: links to the rest, as HTML for a browser, JSON for a client.
    Route("GET", "/", front.get_front_page, response="front",
          sample=schemas.sample("front"),
          produces=(JSON, HTML), headers=("Content-Security-Policy",),
          catalogued=False),
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
          errors=_AUTHOR_IF_MATCH, auth="user", may_change=articles.author_or_admin),
    # No may_change: a DELETE reads no body, and its transaction asks the author.
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
          sample=schemas.sample("user"), auth="user", errors=(Forbidden, Conflict),
          may_change=users.self_or_admin),
    Route("DELETE", "/api/users/{id}", users.delete_user, params=(ID,),
          negotiated=False, auth="user", errors=(Forbidden, Conflict),
          may_change=users.self_or_admin),
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
          answers=_OAUTH_ERRORS, credentials=False),
    Route("GET", "/healthz", health.get_health, response="health",
          sample=schemas.sample("health"), negotiated=False, answers=(_UNHEALTHY,),
          headers=("Cache-Control",), credentials=False, rate_limited=False),
    # Prometheus' text format, for the addresses REFAPI_METRICS names or an admin;
    # not an API operation, and never rate limited.
    Route("GET", "/metrics", metrics.get_metrics, documented=False, negotiated=False,
          sensitive=True, needs="metrics", rate_limited=False),
    Route("GET", proxy.PATH, proxy.get_proxy,
          params=(Param("url", "string", required=True, schema=ssrf.URL_SCHEMA),),
          response="upstream",
          sample=schemas.sample("upstream"),
          errors=(HostNotAllowed, UpstreamError, Busy, LoopDetected, UpstreamTimeout),
          answers=_UPSTREAM),
    Route("GET", "/openapi.json", docs.get_openapi, documented=False),
    # The interactive docs: an HTML page and its files, whatever Accept says.
    Route("GET", "/docs", docs.get_docs, documented=False, negotiated=False),
    # URLs a person may type, /docs/ and /ui: 308 to the pages' one URLs
    # (docs/api.md, "The front page").
    Route("GET", "/docs/", docs.redirect_to_docs, documented=False, negotiated=False),
    Route("GET", "/docs/{name}", docs.get_docs_file,
          params=(Param("name", "string", "path", True),), documented=False,
          negotiated=False),
    # The web UI: its page and files, public (each call it makes is authorized).
    Route("GET", "/ui/", ui.get_ui, documented=False, negotiated=False),
    Route("GET", "/ui", ui.redirect_to_ui, documented=False, negotiated=False),
    Route("GET", "/ui/{name}", ui.get_ui_file,
          params=(Param("name", "string", "path", True),), documented=False,
          negotiated=False),
    # The guides as pages (docs/api.md, "The guides"): public, whatever Accept says.
    Route("GET", "/guides/", guides.get_guides, documented=False, negotiated=False),
    Route("GET", "/guides", guides.redirect_to_guides, documented=False,
          negotiated=False),
    Route("GET", "/guides/{name}", guides.get_guide,
          params=(Param("name", "string", "path", True),), documented=False,
          negotiated=False),
)  # fmt: skip


def credential_free_paths(routes: tuple[Route, ...] = ROUTES) -> frozenset[str]:
    """The paths whose rows read no credential: ``Authenticate`` looks none up."""
    return frozenset(route.path for route in routes if not route.credentials)


def unlimited_paths(routes: tuple[Route, ...] = ROUTES) -> frozenset[str]:
    """The paths no rate limit applies to: ``RateLimit`` passes them untouched."""
    return frozenset(route.path for route in routes if not route.rate_limited)


def versioned_prefixes(routes: tuple[Route, ...] = ROUTES) -> frozenset[str]:
    """First path segments served under ``/v1`` (``/articles`` for ``/v1/articles``)."""
    return frozenset(
        "/" + route.path.split("/")[2]
        for route in routes
        if route.path.startswith("/v1/")
    )
