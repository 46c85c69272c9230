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
from .middleware.headers import Layer
from .middleware.rate_limit import DryAddresses
from .router import IdGenerator, Router
from .startup import ensure_admin
from .storage import StorageUnavailable, Store
from .web.rate_limits import RateLimits
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
        limits = RateLimits.configured(config, store.buckets, clock)
        layers = stack(config, store, clock, limits)
        # The explainer runs a request through the whole stack (docs/explain.md),
        # but the stack is built around the router, so it does not exist when the
        # router binds its handlers: they get ``whole_stack``, a plain method that
        # finds ``wsgi_app`` when called (a host's wrapping of it included). Handed
        # in as a handler's argument, like the store, not put in the environ.
        self.router = Router(
            config, store, clock, new_id, resolve=resolve, limits=limits,
            layers=layers, stack=self.whole_stack, sleep=sleep, rand=rand,
        )  # fmt: skip
        app: WSGIApplication = self.router
        for cls, options in reversed(layers):
            app = cls(app, **options)
        self.wsgi_app = app

    def __call__(
        self, environ: WSGIEnvironment, start_response: StartResponse
    ) -> Iterable[bytes]:
        # One request's storage calls share one connection on PostgreSQL (a pool's
        # checkout each would be two or three a request): docs/several-hosts.md.
        self.store.hold()
        try:
            if self._admin_due is not None:
                self._make_admin()
            return self.wsgi_app(environ, start_response)
        finally:
            self.store.let_go()

    def whole_stack(
        self, environ: WSGIEnvironment, start_response: StartResponse
    ) -> Iterable[bytes]:
        """``wsgi_app`` as it is now: the stack, inside this request's hold on the
        store (so not ``__call__``, which would take another)."""
        return self.wsgi_app(environ, start_response)

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
        self.router.slots.release_all()
        self.store.close()


def stack(
    config: Config, store: Store, clock: Callable[[], float], limits: RateLimits
) -> list[Layer]:
    """The middleware around the router, outermost first: each layer's class and
    options. ``App`` wraps the router in them, the last first; the OpenAPI document
    reads what each declares."""
    # What Authenticate and RateLimit share: the addresses seen with an empty bucket.
    dry = DryAddresses(default=limits.default, clock=clock)
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
        (Authenticate, {"store": store, "clock": clock, "dry": dry}),
        # Before routing, so even 404s count; it tells ``dry`` each address's level.
        (
            RateLimit,
            {"limits": limits, "routes": routes.rate_limit_buckets(), "dry": dry},
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
    addresses), and the lab's sleep and random source (a number in [0, 1), for
    ``/api/delay`` and ``/api/status``, docs/lab.md) can be passed in, so tests and
    hosts choose them without patching anything (and no test waits). A storage
    outage at start is logged and the instance starts (health says 503 until it
    passes); a bug, such as a migration that fails, is raised, so a server's worker
    fails to boot instead of serving 503s.
    """
    config = config or Config.from_env()
    # First, so what opening the store logs is written as every other line.
    logs.configure(config.log_format)
    store = store or config.open_store()
    try:
        ensure_admin(store, config, clock())
    except StorageUnavailable as exc:
        # As with the database itself: the instance starts, health says 503, and the
        # admin is made by the first request that finds storage back.
        log.warning("could not make the first admin now: %s", exc)
        return App(
            config, store, clock, new_id, resolve, make_admin=True, sleep=sleep,
            rand=rand,
        )  # fmt: skip
    return App(config, store, clock, new_id, resolve, sleep=sleep, rand=rand)


def __getattr__(name: str) -> App:
    # ``refapi.app:application`` for WSGI servers, made on first use (PEP 562), so
    # importing this module reads, creates and connects nothing.
    if name == "application":
        made = globals()["application"] = create_app()
        return made
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
