"""The router: match the route, prepare the request, call the handler.

It is the WSGI app at the bottom of the stack (``app.py`` wraps it in the
middleware). At start-up it filters the route table by the configuration, builds
the Werkzeug map once, compiles each row's request schema and binds each handler to
what it takes by name; per request, ``dispatch`` answers in the order of checks:
routing (404, 405), what ``Authenticate`` found as each route needs it (401, 403),
Accept (406), the body (413, 415, 400), the path and query parameters (400), then
the handler's own rules.

``route.py`` holds the row of a table (``Route``) and the map made from one,
``arguments.py`` what a handler takes (bound once, read per request); the
router may import them, the web helpers, the middleware's types and rate limits, the
schemas, the storage interface, the configuration and the errors; never a handler,
a route table, the OpenAPI generator, the app or the lab (each table is handed in).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from werkzeug.exceptions import MethodNotAllowed as NoSuchMethod
from werkzeug.routing import RequestRedirect
from werkzeug.wsgi import ClosingIterator

from .. import schemas
from ..config import Config
from ..errors import (
    NO_STORE,
    ApiError,
    Forbidden,
    MethodNotAllowed,
    NotFound,
    Unauthenticated,
    ValidationError,
)
from ..hosts import Resolver, default_resolver
from ..middleware.rate_limit.policy import RateLimits
from ..slots import Slots
from ..storage import Store
from ..web import Request, Response, idempotency, read_json
from ..web.auth import (
    UNSAFE_METHODS,
    Authentication,
    cleared_cookie,
    csrf_refusal,
)
from ..web.conditional import not_modified, tag
from ..web.environ import ROUTE, SLOW_WORK
from ..web.keys import csrf_key
from ..web.negotiation import negotiate
from ..web.pagination import Pages
from ..web.representations import represent
from ..web.wsgi import whole_number
from .arguments import bind, numbered, with_query
from .route import Actions, Route, url_map

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIEnvironment


IdGenerator = Callable[[float], str]
Args = Mapping[str, str]  # a path's arguments as matched
Numbers = dict[str, object] | None  # and as a handler takes them, when read


@dataclass(frozen=True)
class Services:
    """What one instance's handlers may be handed besides the request, made once by
    the front door (``app.py``): the configuration, the store, the clock, the id
    generator, the proxy's resolver, the host's slots for slow work and the rate
    limits. A handler takes any of them by parameter name (``bind``)."""

    config: Config
    store: Store
    clock: Callable[[], float]
    new_id: IdGenerator
    resolve: Resolver
    slots: Slots
    limits: RateLimits

    @classmethod
    def made(
        cls,
        config: Config,
        store: Store,
        clock: Callable[[], float],
        new_id: IdGenerator,
        resolve: Resolver = default_resolver,
    ) -> Services:
        """The services of ``config`` on ``store``: the slots and the rate limits
        it sets, with the clock, id generator and resolver given."""
        slots = Slots.configured(config, clock)
        limits = RateLimits.configured(config, store.buckets, clock)
        return cls(config, store, clock, new_id, resolve, slots, limits)


class Router:
    """Match the route, prepare the request, call the handler: the WSGI app at the
    bottom of the stack, one entry (``__call__``) to ``dispatch``.

    ``provided``: what the table's handlers take besides the services, by
    parameter name (the OpenAPI document of the table, the rows served)."""

    def __init__(
        self,
        services: Services,
        route_table: tuple[Route, ...],
        provided: Mapping[str, object] | None = None,
    ) -> None:
        config, store = services.config, services.store
        self.config = config
        # The host's share of slots for slow work (slots.py): handlers take one,
        # and ``__call__`` lets go of it once the answer is closed.
        self.slots = services.slots
        self.csrf_key = functools.partial(csrf_key, config, store)
        route_table = served(route_table, config)
        # One adapter per app, reused, and the answers for recent (path, method)
        # pairs remembered, each with the path as text and its numbers
        # (``routed``): binding and matching per request are most of routing's
        # cost. One cache, so the paths a client sends are held once.
        # PERF: 40,000 to 60,000 instructions a request, and 3,000 more with an
        # id, make bench-layers
        # (A function of the match, not a method: the cache holds no Router.)
        self.match = match = url_map(route_table).bind("localhost", "/").match
        self.routed = functools.lru_cache(4096)(functools.partial(routed, match))
        self.route_table = route_table
        # Paths every route of which carries or depends on a credential: their
        # answers to any method, refusals included, are no-store (docs/api.md).
        no_store: dict[str, bool] = {}
        for route in route_table:
            no_store[route.path] = no_store.get(route.path, True) and route.no_store
        self.no_store_paths = frozenset(
            path for path, all_of in no_store.items() if all_of
        )
        self.validators = body_validators(route_table, config)
        # The body limit of each row that reads one: the row's, or the configured
        # one where that is smaller (docs/configuration.md, REFAPI_MAX_BODY_BYTES).
        self.body_limits = {
            route: min(route.body_limit, config.max_body_bytes)
            for route in route_table
            if route.body_limit is not None
        }
        # The rows that take an idempotency key: the route it is scoped by (the
        # demo's with its action) and whether it is required (docs/api.md,
        # "Idempotent creates").
        self.keyed = {
            route: (_scoped_route(route), route.idempotency_key.required)
            for route in route_table
            if route.idempotency_key is not None
        }
        # What a handler may take besides the request and its route's arguments,
        # by parameter name (docs/development.md, "Follow one request").
        given = {
            **{field.name: getattr(services, field.name) for field in fields(services)},
            "routes": route_table,
            "pages": Pages(config, store),
            **(provided or {}),
        }
        self.handlers = {route: bind(route, given) for route in route_table}
        self.may_change = {
            route: bind(route, given, route.may_change)
            for route in route_table
            if route.may_change is not None
        }

    def __call__(
        self, environ: WSGIEnvironment, start_response: StartResponse
    ) -> Iterable[bytes]:
        try:
            answer = self.dispatch(environ)(environ, start_response)
        except BaseException:
            self.slots.release(environ)
            raise
        if SLOW_WORK not in environ:
            return answer
        # A slot of slow work is held until the server closes the answer
        # (docs/operating.md, "Slow work shares the host").
        return ClosingIterator(answer, functools.partial(self.slots.release, environ))

    def _no_store_path(self, path: str, served_method: str) -> bool:
        """Whether the path's answers carry or depend on a credential, whatever the
        method; ``served_method``, one its routes serve, finds the path's row."""
        endpoint, _ = self.match(path, served_method)
        return endpoint.path in self.no_store_paths

    def dispatch(self, environ: WSGIEnvironment) -> Response:
        """Answer in the order of checks: routing (404, 405, the demo's action),
        Accept (406), the body (413, 415, 400), the path and query parameters (400),
        then the handler's own rules."""
        method, request = environ["REQUEST_METHOD"], Request(environ)
        sent = environ.get("PATH_INFO") or "/"
        try:
            endpoint, raw_args, numbers = self.routed(sent, method)
        except NoSuchMethod as exc:
            valid = list(exc.valid_methods or ())
            return self._options_or_405(request, _routed_path(sent), valid)
        except RequestRedirect:
            # The map would offer /x/ for /x (a rule ending in "/"); it redirects
            # nothing by itself: the redirects served are rows (/ui, /docs/).
            raise NotFound() from None
        environ[ROUTE] = endpoint.path  # the template, for the log and the metrics
        if isinstance(endpoint, Actions):
            if method == "OPTIONS":
                _authenticated(request)
                return _allow(endpoint.methods)
            route = endpoint.pick(method, request.args.getlist("action"))
        else:
            route = endpoint
        if not route.no_store:
            return self.serve(route, request, raw_args, numbers)
        return self._serve_no_store(route, request, raw_args, numbers)

    def _options_or_405(
        self, request: Request, path: str, valid: list[str]
    ) -> Response:
        """A method the path's routes do not serve (``valid`` are those they do):
        OPTIONS answered with ``Allow``, any other refused with 405."""
        # OPTIONS is answered on every routed path, so Allow names it too.
        allowed = sorted({*valid, "OPTIONS"})
        no_store = bool(valid) and self._no_store_path(path, valid[0])
        if request.environ["REQUEST_METHOD"] == "OPTIONS":
            _authenticated(request)  # a refused credential: 401 here too
            answer = _allow(allowed)
            if no_store:
                answer.headers.append(NO_STORE)
            return answer
        refused = MethodNotAllowed(allowed)
        if no_store:
            refused.headers.append(NO_STORE)
        raise refused from None

    def _serve_no_store(
        self, route: Route, request: Request, raw_args: Args, numbers: Numbers = None
    ) -> Response:
        """``serve``, for a row whose answer carries or depends on a credential: no
        cache may keep it, whether it is a success or an error."""
        try:
            response = self.serve(route, request, raw_args, numbers)
        except ApiError as error:
            if NO_STORE not in error.headers:
                error.headers.append(NO_STORE)
            raise
        response.headers.append(NO_STORE)
        return response

    def _authorize(
        self, route: Route, request: Request, auth: Authentication, raw_args: Args
    ) -> None:
        """Enforce a guarded route's ``auth`` with what ``Authenticate`` found
        (``auth``, a credential sent but not valid refused already: 401 on every
        route, so it is never taken for anonymous), set ``request.principal``, then
        ask the row's ``may_change``: both before the body (docs/api.md, "Order of
        checks").

        The session cookie counts only where a
        credential is needed (a stale one is then 401 and cleared), and an unsafe
        request on its authority must carry the session's CSRF token and no foreign
        ``Origin``.
        """
        principal = auth.principal
        if principal is None and auth.session is not None:
            principal = auth.session
            if route.method in UNSAFE_METHODS:
                refusal = csrf_refusal(request.environ, principal, self.csrf_key())
                if refusal is not None:
                    raise refusal
        if principal is None:
            stale = auth.stale_session
            raise Unauthenticated(
                clear_cookie=cleared_cookie(**request.cookie_scope) if stale else None
            )
        if route.auth == "admin" and principal.role != "admin":
            raise Forbidden("This needs an admin.")
        request.principal = principal
        if route.may_change is not None:
            self._may_change(route, request, raw_args)

    def _may_change(
        self, route: Route, request: Request, raw_args: Mapping[str, str]
    ) -> None:
        """May the caller change the path's record (403)? A path argument that is
        no number is left to its own 400, after the body."""
        try:
            args = {
                name: whole_number(name, raw_args[name], least, most)
                for name, least, most in route.integer_path_params
            }
        except ValidationError:
            return
        self.may_change[route](request, **args)

    def serve(
        self, route: Route, request: Request, raw_args: Args, numbers: Numbers = None
    ) -> Response:
        """The rest of the checks, in order, then the handler."""
        environ, method = request.environ, request.environ["REQUEST_METHOD"]
        auth = _authenticated(request)
        if route.auth is None:  # public: whoever the credential names, or nobody
            request.principal = auth.principal
        else:
            self._authorize(route, request, auth, raw_args)
        accept = environ.get("HTTP_ACCEPT", "")
        media_type = request.media_type = negotiate(accept, route.offers, route.version)
        # None where the row reads no body; a form's handler reads its own.
        request.body_limit = limit = self.body_limits.get(route)
        if route.schema and limit is not None:
            depth = self.config.json_max_depth
            if route.body_depth is not None:  # the row's own, where it is smaller
                depth = min(depth, route.body_depth)
            payload = read_json(environ, route.body_types, limit, depth)
            request.payload = schemas.validate(payload, self.validators[route])
        if numbers is None:
            numbers = numbered(route, raw_args)  # a 400 here, in its turn
        args = with_query(route, request, numbers) if route.query_args else numbers
        keyed = self.keyed.get(route)
        if keyed is not None:
            request.idempotency = idempotency.read(request, *keyed)
        response = self.handlers[route](request, **args)
        if media_type is not None:
            response = represent(response, media_type, route.resource)
        if response.status == 200 and method in ("GET", "HEAD") and not route.streamed:
            if_match = environ.get("HTTP_IF_MATCH") if route.reads_if_match else None
            if_none_match = environ.get("HTTP_IF_NONE_MATCH")
            response = not_modified(if_none_match, response, if_match)
        elif response.status == 200 and method == "PATCH":
            # The body is the new representation, as a GET would send it: its tag
            # lets the client's next If-Match follow without a GET first. Not a
            # PUT's: a user's is stored changed (a password hashed, an id added),
            # and RFC 9110 9.3.4 then forbids a validator (docs/api.md,
            # "Conditional requests").
            tag(response)
        return response


def served(route_table: tuple[Route, ...], config: Config) -> tuple[Route, ...]:
    """The rows ``config`` serves: a row that ``needs`` a setting is left out
    without it (``/metrics`` without ``REFAPI_METRICS``)."""
    return tuple(
        route
        for route in route_table
        if route.needs is None or getattr(config, route.needs)
    )


def body_validators(
    route_table: tuple[Route, ...], config: Config
) -> dict[Route, schemas.Schema]:
    """The compiled schema of each row that reads a body, as ``config`` fills it
    in (``schemas.load``: compiled once a process, whichever app asks first)."""
    return {
        route: schemas.load(route.schema, vars(config))
        for route in route_table
        if route.schema
    }


def _scoped_route(route: Route) -> str:
    """The route an idempotency key is scoped by: its template, with the action
    that picks the row where several share the path (the demo's)."""
    return route.path + (f"?action={route.action}" if route.action else "")


def _authenticated(request: Request) -> Authentication:
    """What ``Authenticate`` found; a Bearer token or API key sent but not valid
    is 401 on every route."""
    auth = request.auth
    if auth.rejected:
        raise Unauthenticated(auth.rejected, invalid=True, malformed=auth.malformed)
    return auth


def _allow(methods: list[str]) -> Response:
    """The answer to ``OPTIONS`` that is not a CORS preflight (RFC 9110 9.3.7)."""
    return Response(b"", 204, [("Allow", ", ".join(methods))])


def routed(
    match: Callable[[str, str], tuple[Route | Actions, Args]], sent: str, method: str
) -> tuple[Route | Actions, Args, Numbers]:
    """``match``'s answer for the path as sent, and the route's arguments read
    (kept, never changed); None for one not a number (``serve``'s 400) or an
    action's route."""
    endpoint, raw_args = match(_routed_path(sent), method)
    with contextlib.suppress(ValidationError):
        if isinstance(endpoint, Route):
            return endpoint, raw_args, numbered(endpoint, raw_args)
    return endpoint, raw_args, None


def _routed_path(path: str) -> str:
    """The path to match, as text, of the path as sent; 404 for one the map would
    wrongly accept."""
    if not path.isascii():
        # PEP 3333 carries the raw path as latin-1; the URL itself is UTF-8.
        path = path.encode("latin-1").decode("utf-8", "replace")
    if path.startswith("//"):
        # Werkzeug's matcher drops leading slashes; the map merges none elsewhere.
        raise NotFound()
    return path
