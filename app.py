"""refapi's front door: ``create_app(config)`` returns an ``App``, a WSGI application.

Importing this module builds and connects nothing; ``application``, for WSGI servers
that want a module attribute, is made on first use. Two instances with two
configurations can live in one process (a gateway mapping ``/prod`` and ``/dev``),
because all state hangs off the instance: what a module caches is a pure function of
its arguments (a header, a schema, a key) and keyed by them, so no instance sees
another's.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import FunctionType, MethodType
from typing import TYPE_CHECKING, cast

from . import logs, routes
from .config import Config
from .handlers import docs, guides
from .handlers.payments import new_payment_id
from .hosts import Resolver, default_resolver
from .lab import Lab
from .lab import routes as lab_routes
from .metrics import process_metrics
from .middleware import (
    Authenticate,
    Cors,
    Errors,
    Observe,
    RateLimit,
    RequestId,
    TrustedProxy,
    Versioning,
)
from .middleware.headers import Layer
from .middleware.rate_limit import DryAddresses
from .middleware.rate_limit.policy import RateLimits
from .router import IdGenerator, Router, Services, body_validators, served
from .router.route import Route, rate_limit_buckets, url_map
from .startup import ensure_admin
from .storage import StorageUnavailable, Store

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

log = logging.getLogger("refapi")


class App:
    """One instance of the service, its front door: a WSGI application that owns
    its config and store, and mounts the learner's lab at ``/lab/`` in front of the
    core (the pattern of Werkzeug's ``DispatcherMiddleware``, but ``SCRIPT_NAME``
    stays the instance's prefix: the lab's paths carry their ``/lab/``).

    ``wsgi_app`` is the whole door: the lab mounted in front of ``core`` (``mount``),
    the core's middleware stack around its router (the core alone with
    ``REFAPI_LAB=0``). It is kept apart from ``__call__`` so a host can wrap it
    (``app.wsgi_app = Wrapper(app.wsgi_app)``, as Werkzeug's ``shortly`` example
    and Flask's docs do) and keep serving ``app``. The lab (``lab``, None with
    ``REFAPI_LAB=0``) is handed this door in its constructor (``lab.FrontDoor``):
    the services, ``serve`` for its table, and ``wsgi_app``, which the explainer
    runs a request through, inside the request's hold on the store.
    ``close()`` releases the store, so a host or a test can end an instance cleanly.
    ``make_admin``: the start could not make the first admin (storage was out), so
    requests try again, at most once a second, until one can.
    """

    def __init__(
        self,
        config: Config,
        store: Store,
        clock: Callable[[], float] = time.time,
        new_id: IdGenerator = new_payment_id,
        resolve: Resolver = default_resolver,
        *,
        make_admin: bool = False,
        sleep: Callable[[float], None] = time.sleep,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.config = config
        self.store = store
        self.clock = clock
        self._admin_due = 0.0 if make_admin else None  # when to try again
        self._admin_lock = threading.Lock()
        # A store with no pool is neither held nor let go: two calls that do
        # nothing, a request (storage/base.py, ``pooled``); a host's own store
        # that does not say is held.
        # PERF: 2,000 instructions a SQLite request, make bench-instructions
        self.pooled: bool = getattr(store, "pooled", True)
        self.services = Services.made(config, store, clock, new_id, resolve)
        self.layers = tuple(stack(config, store, clock, self.services.limits))
        core = served(routes.ROUTES, config)
        lab = lab_routes.ROUTES if config.lab else ()
        # Every row this door serves: the catalogue, the front page and the
        # explainer read the lab's too.
        self.routes: tuple[Route, ...] = core + lab
        self.router = Router(self.services, core, self._provided(core, self.layers))
        self.core = wrapped(self.router, self.layers)
        self.lab = Lab(self, sleep=sleep, rand=rand) if config.lab else None
        self.wsgi_app: WSGIApplication = (
            mount(called(self.core), called(self.lab))
            if self.lab is not None
            else self.core
        )

    def __call__(
        self, environ: WSGIEnvironment, start_response: StartResponse
    ) -> Iterable[bytes]:
        if self._admin_due is not None:
            self._make_admin()
        if not self.pooled:  # SQLite: each thread has its own connection
            return self.wsgi_app(environ, start_response)
        # One pooled connection for all of a request's calls (docs/several-hosts.md).
        # PERF: 650 bytecodes a PostgreSQL GET (of 5,514), make bench-instructions
        self.store.hold()
        try:
            return self.wsgi_app(environ, start_response)
        finally:
            self.store.let_go()

    def serve(
        self,
        route_table: tuple[Route, ...],
        layers: Sequence[Layer],
        provided: Mapping[str, object],
    ) -> WSGIApplication:
        """A router for another table with this instance's services, in
        ``layers``: how the lab is served like the core (``provided``: what its
        handlers take besides the services)."""
        given = {**self._provided(route_table, layers), **provided}
        return wrapped(Router(self.services, route_table, given), layers)

    def layers_for(self, path: str) -> Sequence[Layer]:
        """The stack a request for ``path`` meets: the lab's or the core's."""
        if self.lab is not None and lab_routes.mounted(path):
            return self.lab.layers
        return self.layers

    def guide(self, path: str) -> str | None:
        """Where the guides serve the repository's file ``path`` (its URL under
        ``/guides/``), for the explainer's links."""
        return guides.served(path)

    def _provided(
        self, route_table: tuple[Route, ...], layers: Sequence[Layer]
    ) -> dict[str, object]:
        """What a table's handlers take besides the services: every row served,
        and the OpenAPI document of the table behind its layers."""
        return {"routes": self.routes, "document": docs.describe(
            route_table, self.config, layers
        )}  # fmt: skip

    def _make_admin(self) -> None:
        """Make the first admin a start could not, once storage is back, so the
        service recovers without a restart (docs/operating.md, "When storage
        fails")."""
        due = self._admin_due
        if due is None or time.monotonic() < due:
            return
        if not self._admin_lock.acquire(blocking=False):
            return  # another thread is at it
        try:
            ensure_admin(self.store, self.config, self.clock())
            self._admin_due = None
        except StorageUnavailable:
            self._admin_due = time.monotonic() + 1.0
        finally:
            self._admin_lock.release()

    def close(self) -> None:
        # Slots of answers never closed go too (a host that drops an answer
        # unclosed would otherwise hold them for the process's life).
        self.services.slots.release_all()
        self.store.close()


def mount(core: WSGIApplication, lab: WSGIApplication) -> WSGIApplication:
    """The lab in front of the core, by path: the pattern of Werkzeug's
    ``DispatcherMiddleware``, but ``SCRIPT_NAME`` stays the instance's prefix, so
    the lab's own paths carry their ``/lab/`` (``lab.routes.mounted`` says which
    paths are the lab's: its own and its old ones).

    PERF: a function, not an object's ``__call__``, and a path whose first five
    characters no lab path starts with asked nothing more: 1,800 instructions a
    request of the core, not 2,600, make bench-instructions."""
    heads = frozenset(path[:5] for path in (*lab_routes.MOUNTED, *lab_routes.EXACT))
    mounted = lab_routes.mounted

    def door(
        environ: WSGIEnvironment, start_response: StartResponse
    ) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        inside = path[:5] in heads and mounted(path)
        return (lab if inside else core)(environ, start_response)

    return door


def wrapped(app: WSGIApplication, layers: Sequence[Layer]) -> WSGIApplication:
    """``app`` in ``layers``, the outermost first: the last wraps it first.

    Each layer is handed what it wraps as a bound ``__call__`` (``called``), so
    its ``self.app(environ, start_response)`` goes straight to the method.
    PERF: an object called as a function goes through its type's slot, which
    packs the arguments in a tuple and looks ``__call__`` up: about 600
    instructions a layer, 4,800 a request, make bench-instructions"""
    for cls, options in reversed(layers):
        app = cls(called(app), **options)
    return app


def called(app: WSGIApplication) -> WSGIApplication:
    """``app``'s bound ``__call__`` when it is an object; a function, or a class
    (PEP 3333 lets an app be one), as it is. The object stays ``__self__`` of what
    is returned (``layer.app.__self__``)."""
    if isinstance(app, FunctionType | MethodType | type):
        return app
    return cast("WSGIApplication", getattr(app, "__call__"))  # noqa: B004, B009


def stack(
    config: Config, store: Store, clock: Callable[[], float], limits: RateLimits
) -> list[Layer]:
    """The core's middleware around its router, outermost first: each layer's
    class and options. ``App`` wraps the router in them, the last first; the
    OpenAPI document reads what each declares, and the lab takes its first ones."""
    # What Authenticate and RateLimit share: the addresses seen with an empty bucket.
    unlimited = routes.unlimited_paths()
    dry = DryAddresses(default=limits.default, clock=clock, exempt=unlimited)
    behind_proxies = (
        [(TrustedProxy, {"hops": config.trust_proxy})] if config.trust_proxy else []
    )
    return [
        # Only behind that many proxies may X-Forwarded-* name the client and the
        # mount point; outermost, so every layer sees the client's view.
        *behind_proxies,
        # So every response and log line has an id.
        (RequestId, {}),
        # Next, so every answer is logged and counted once, a preflight's and an
        # error's included; it reads what the layers below leave in the environ.
        (
            Observe,
            {
                "lines": logs.request_lines(),
                "metrics": process_metrics() if config.metrics else None,
            },
        ),
        # Outside Errors, so every error answer (404, 429, even a 500) is still
        # readable by a browser.
        (Cors, {"origins": config.cors_origins}),
        # So everything beneath renders as the error object.
        (Errors, {}),
        # Identifies the caller, deciding nothing (the router enforces each route's
        # needs); outside RateLimit, so the bucket is the principal's and a
        # credential that fails costs its address. A credential from an address
        # whose bucket is known empty is refused before its lookup.
        (
            Authenticate,
            {
                "store": store,
                "clock": clock,
                "dry": dry,
                "exempt": routes.credential_free_paths(),
            },
        ),
        # Before routing, so even 404s count; it tells ``dry`` each address's level.
        (
            RateLimit,
            {
                "limits": limits,
                "routes": rate_limit_buckets(routes.ROUTES),
                "dry": dry,
                "exempt": unlimited,
            },
        ),
        # Rewrites prefix-less vendor requests before the router matches them.
        (
            Versioning,
            {
                "prefixes": routes.versioned_prefixes(),
                "deprecation": config.deprecation,
                "sunset": config.sunset,
            },
        ),
    ]


def create_app(
    config: Config | None = None,
    *,
    store: Store | None = None,
    clock: Callable[[], float] = time.time,
    new_id: IdGenerator = new_payment_id,
    resolve: Resolver = default_resolver,
    sleep: Callable[[float], None] = time.sleep,
    rand: Callable[[], float] = random.random,
) -> App:
    """Build the whole service; the configuration defaults to the environment's.

    The store, the clock, the id generator, the proxy's resolver (host, port ->
    addresses), and the lab's sleep and random source (a number in [0, 1), for its
    delays, drips and weighted statuses, docs/lab.md) can be passed in, so tests
    and hosts choose them without patching anything (and no test waits). A storage
    outage at start is logged and the instance starts (health says 503 until it
    passes); a bug, such as a migration that fails, is raised, so a server's worker
    fails to boot instead of serving 503s.
    """
    config = config or Config.from_env()
    # First, so what opening the store logs is written as every other line.
    logs.configure(config.log_format)
    store = store or config.open_store()
    make_admin = False
    try:
        ensure_admin(store, config, clock())
    except StorageUnavailable as exc:
        # As with the database itself: the instance starts, health says 503, and the
        # admin is made by the first request that finds storage back.
        log.warning("could not make the first admin now: %s", exc)
        make_admin = True
    return App(
        config, store, clock, new_id, resolve, make_admin=make_admin, sleep=sleep,
        rand=rand,
    )  # fmt: skip


def prepare_for_workers(config: Config) -> None:
    """Make, in a server's master before it forks its workers, what every app of
    ``config`` makes alike and then keeps for the process: the route tables'
    compiled maps and the body schemas' validators (module caches, keyed by what
    they are made of). Each worker still makes its own app, with its own store and
    state; it forks with these made, and with the modules imported, so it neither
    makes them again nor touches the code that does: that code's pages are never a
    worker's (docs/benchmarks.md, "Made once, in the master")."""
    for table in (routes.ROUTES, lab_routes.ROUTES if config.lab else ()):
        rows = served(table, config)
        url_map(rows)  # what each Router binds
        body_validators(rows, config)  # and what it validates bodies with


def __getattr__(name: str) -> App:
    # ``refapi.app:application`` for WSGI servers, made on first use (PEP 562), so
    # importing this module reads, creates and connects nothing.
    if name == "application":
        made = globals()["application"] = create_app()
        return made
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
