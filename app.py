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
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from . import logs, routes
from .config import Config
from .handlers.payments import new_payment_id
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
from .middleware.rate_limit import DryAddresses
from .router import IdGenerator, Router
from .startup import ensure_admin
from .storage import StorageUnavailable, Store
from .web.rate_limits import Buckets
from .web.ssrf import Resolver, default_resolver

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

log = logging.getLogger("refapi")


class App:
    """One instance of the service: a WSGI application that owns its config and store.

    ``wsgi_app`` is the middleware stack around the router; it is kept apart from
    ``__call__`` so a host can wrap it (``app.wsgi_app = Wrapper(app.wsgi_app)``, as
    Werkzeug's ``shortly`` example and Flask's docs do) and keep serving ``app``.
    This is the one such pair: the layers and the router are plain WSGI callables.
    ``close()`` releases the store, so a host or a test can end an instance cleanly.
    """

    def __init__(
        self,
        config: Config,
        store: Store,
        clock: Callable[[], float] = time.time,
        new_id: IdGenerator = new_payment_id,
        resolve: Resolver = default_resolver,
    ) -> None:
        self.config = config
        self.store = store
        buckets = Buckets.configured(config, store, clock)
        self.router = Router(
            config, store, clock, new_id, resolve=resolve, buckets=buckets
        )
        self.wsgi_app = _stack(self.router, config, store, clock, buckets)
        self.router.layers = _layers(self.wsgi_app)

    def __call__(
        self, environ: WSGIEnvironment, start_response: StartResponse
    ) -> Iterable[bytes]:
        # One request's storage calls share one connection on PostgreSQL (a pool's
        # checkout each would be two or three a request): docs/several-hosts.md.
        self.store.hold()
        try:
            return self.wsgi_app(environ, start_response)
        finally:
            self.store.let_go()

    def close(self) -> None:
        self.store.close()


def _stack(
    router: Router,
    config: Config,
    store: Store,
    clock: Callable[[], float],
    buckets: Buckets,
) -> WSGIApplication:
    """The middleware around the router, outermost first."""
    # RequestId, so every response and log line has an id. Observe next, so every
    # answer is logged and counted once, a preflight's and an error's included
    # (it reads what the layers below leave in the environ). CORS outside Errors, so
    # every error answer (404, 429, even a 500) is still readable by a browser.
    # Errors, so everything beneath renders as the error object. Authenticate
    # identifies the caller (deciding nothing: the router enforces each route's
    # needs), so RateLimit, next, keys the bucket on the principal, and a credential
    # that fails costs its address; Authenticate asks RateLimit first whether that
    # address's bucket is known empty, so a bogus credential then costs no lookup.
    # RateLimit before routing, so even 404s count. Versioning rewrites prefix-less
    # vendor requests before the router matches them.
    dry = DryAddresses(default=buckets.default, clock=clock)
    limiter = RateLimit(
        Versioning(
            router,
            prefixes=routes.versioned_prefixes(),
            deprecation=config.deprecation,
            sunset=config.sunset,
        ),
        buckets=buckets,
        routes=routes.rate_limit_buckets(),
        dry=dry,
    )
    app: WSGIApplication = RequestId(
        Observe(
            Cors(
                Errors(Authenticate(limiter, store=store, clock=clock, dry=dry)),
                origins=config.cors_origins,
            ),
            metrics=process_metrics() if config.metrics else None,
        )
    )
    if config.trust_proxy:
        # Only behind that many proxies may X-Forwarded-* name the client and the
        # mount point; outermost, so every layer sees the client's view.
        app = TrustedProxy(app, hops=config.trust_proxy)
    return app


def _layers(app: object) -> tuple[object, ...]:
    """The layers of the stack around the router, outermost first."""
    found = []
    while not isinstance(app, Router):
        found.append(app)
        app = app.app  # type: ignore[attr-defined]  # each layer keeps its app
    return tuple(found)


def create_app(
    config: Config | None = None,
    *,
    store: Store | None = None,
    clock: Callable[[], float] = time.time,
    new_id: IdGenerator = new_payment_id,
    resolve: Resolver = default_resolver,
) -> App:
    """Build the whole service; the configuration defaults to the environment's.

    The store, the clock, the id generator and the proxy's resolver (host, port ->
    addresses) can be passed in, so tests and hosts choose them without patching
    anything. A storage outage at start is logged and the instance starts (health
    says 503 until it passes); a bug, such as a migration that fails, is raised, so
    a server's worker fails to boot instead of serving 503s.
    """
    config = config or Config.from_env()
    # First, so what opening the store logs is written as every other line.
    logs.configure(config.log_format)
    store = store or config.open_store()
    try:
        ensure_admin(store, config, clock())
    except StorageUnavailable as exc:
        # As with the database itself: the instance starts, health says 503, and the
        # admin is made by the next start that can write.
        log.warning("could not make the first admin now: %s", exc)
    return App(config, store, clock, new_id, resolve)


def __getattr__(name: str) -> App:
    # ``refapi.app:application`` for WSGI servers, made on first use (PEP 562), so
    # importing this module reads, creates and connects nothing.
    if name == "application":
        made = globals()["application"] = create_app()
        return made
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
