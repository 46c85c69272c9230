"""What the tests of a middleware on its own share: ``bare``, a host's app, and
the clients and layers around it.

A host may take any one layer of the stack (docs/embedding.md, "The middleware on
their own"): each must work without the others around it, and say what it reads from
the environ when they are there. Each such test wraps ``bare`` (a few lines answering
``200``) in one layer, or in two in an order ``app.py`` does not use, and drives it
through WebTest, which also lints the WSGI exchange.
"""

from __future__ import annotations

import json

import webtest

from refapi.middleware import (
    RateLimit,
)
from refapi.middleware.rate_limit.policy import RateLimits
from refapi.web.environ import AUTH, BUCKET_KEY

SEEN = ("PATH_INFO", "SCRIPT_NAME", "REMOTE_ADDR", "wsgi.url_scheme", BUCKET_KEY)
ORIGIN = "https://app.example"
ADDRESS = "192.0.2.1"
POST_PREFLIGHT = {"Origin": ORIGIN, "Access-Control-Request-Method": "POST"}


def bare(environ, start_response):
    """A host's own app: 200, and what it was given of the environ, as JSON."""
    auth = environ.get(AUTH)
    seen = {key: environ.get(key) for key in SEEN}
    seen["principal"] = auth.principal.caller if auth and auth.principal else None
    seen["rejected"] = auth.rejected if auth else None
    body = json.dumps(seen).encode()
    start_response(
        "200 OK",
        [("Content-Type", "application/json"), ("Content-Length", str(len(body)))],
    )
    return [body]


def client(app) -> webtest.TestApp:
    """``app`` in WebTest, every request from one client address."""
    return webtest.TestApp(app, extra_environ={"REMOTE_ADDR": ADDRESS})


def raising(error: Exception):
    """A bare app that raises ``error``."""

    def app(environ, start_response):
        raise error

    return app


def limit(app, store, clock, **options):
    """``RateLimit`` around ``app`` on the test's store: 3 tokens, one every 2 s."""
    limits = RateLimits(
        buckets=store.buckets,
        capacity=options.pop("capacity", 3),
        refill=options.pop("refill", 0.5),
        clock=clock,
        policies=options.pop("policies", ()),
    )
    return RateLimit(app, limits=limits, **options)
