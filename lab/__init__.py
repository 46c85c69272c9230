"""The learner's lab: a WSGI app of its own, mounted by the front door at ``/lab/``.

It holds the echo (``/lab/anything``) with its notes on the request
(``request_notes.py``), httpbin's request endpoints (``reflect.py``), redirects
(``redirects.py``), challenges (``challenges.py``), bodies (``bodies.py``),
ranges (``ranges.py``) and caches (``caching.py``), the statuses, the delays, the
explainer with its annotations and the report card for clients (``grade/``)
(docs/lab.md, docs/explain.md): its own route table (``routes.py``), served by the
same router as the core's, behind its own list of the same middleware classes. It
reads no credential (no ``Authenticate``: what a request carries is the lab's
data), passes its own bucket per client address (``REFAPI_LAB_RATE_LIMIT``)
instead of the core's default one, allows any header a preflight asks for and
exposes every header of its answers.

The front door (``app.py``) hands itself in (``FrontDoor``): its services, a router
for the lab's table, and the whole door (``wsgi_app``, a host's wrapping of it
included), which the explainer runs a request through, the core's paths and the
lab's alike. The core imports nothing from here.

It may import, of the core: the middleware (the rate-limit buckets' policy
included), the error family, the configuration, the declared environ keys, the web
helpers (requests, bodies, keys, entity tags, media types; each module named in
``tests/lab/test_wing.py``, which reads the imports), the router's ``Route`` and
the schemas its rows name their bodies by. The tables of HTTP fields and statuses
the explainer annotates with stay in ``web/``: the core's status lines and its
OpenAPI document read the same lines, so the two cannot say two things.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from werkzeug.http import HTTP_STATUS_CODES

from ..middleware import Cors, Errors, Observe, RateLimit, RequestId, TrustedProxy
from ..middleware.rate_limit.policy import Policy, RateLimits
from ..router.route import rate_limit_buckets
from ..web.statuses import STATUS_LINES
from .routes import ROUTES

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

    from ..config import Config
    from ..middleware.headers import Layer
    from ..router.route import Route
    from ..storage import Store

# Explanations a minute per client address (bucket "explain"): each runs one more
# request through the service, which takes its own tokens (docs/explain.md,
# "Guards"); 30 is one every two seconds, more than a person at the form sends.
EXPLAIN_PER_MINUTE = 30
# Delays a minute per client address: besides the host's share of slow work, so
# one address cannot keep that share to itself (docs/lab.md, "Delays").
DELAYS_A_MINUTE = 10
# The layers of the core's stack that the lab takes as they are, with their
# options: who is the client, the request id, the log line and the metrics.
SHARED = (TrustedProxy, RequestId, Observe)
# httpbin's status lines, as Werkzeug, which serves httpbin, writes them: its
# phrase, in upper case ("401 UNAUTHORIZED", "416 REQUESTED RANGE NOT
# SATISFIABLE"), where the rest of the service writes RFC 9110's. The lab's
# answers are httpbin's, and clients' suites compare the line (docs/lab.md,
# "Conventions"); a client acts on the code alone (RFC 9112 section 4).
HTTPBIN_LINES = {
    line: f"{code} {HTTP_STATUS_CODES.get(code, 'Unknown').upper()}"
    for code, line in STATUS_LINES.items()
}


class FrontDoor(Protocol):
    """What the lab reads of the front door that mounts it (``app.App``)."""

    config: Config
    store: Store
    clock: Callable[[], float]
    routes: tuple[Route, ...]  # every row served, the core's and the lab's
    layers: tuple[Layer, ...]  # the core's stack, outermost first

    def serve(
        self,
        route_table: tuple[Route, ...],
        layers: Sequence[Layer],
        provided: Mapping[str, object],
    ) -> WSGIApplication: ...

    wsgi_app: WSGIApplication  # the whole door, read when a request runs

    def layers_for(self, path: str) -> Sequence[Layer]: ...

    def guide(self, path: str) -> str | None: ...


class Lab:
    """The lab as a WSGI app: its stack around the router of its table."""

    def __init__(
        self,
        front: FrontDoor,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rand: Callable[[], float] = random.random,
    ) -> None:
        config = front.config
        limits = RateLimits(
            buckets=front.store.buckets,
            capacity=config.lab_rate_limit,
            refill=config.lab_rate_limit / 60,
            clock=front.clock,
            policies=(
                # Each delay holds a worker (docs/lab.md, "Delays").
                Policy.per("delay", DELAYS_A_MINUTE, 60),
                Policy.per("explain", EXPLAIN_PER_MINUTE, 60),
            ),
            name="lab",
        )
        self.routes = ROUTES
        self.layers = stack(front.layers, config, limits)
        # The sleep and the random source are passed in, as the clock is, so no
        # test waits (docs/lab.md).
        provided = {"front": front, "limits": limits, "sleep": sleep, "rand": rand}
        self.wsgi_app = front.serve(ROUTES, self.layers, provided)

    def __call__(
        self, environ: WSGIEnvironment, start_response: StartResponse
    ) -> Iterable[bytes]:
        def start(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Callable[[bytes], object]:
            return start_response(HTTPBIN_LINES.get(status, status), headers, exc_info)

        return self.wsgi_app(environ, start)


def stack(core: Sequence[Layer], config: Config, limits: RateLimits) -> list[Layer]:
    """The lab's middleware, outermost first: the core's first layers as they are
    (``SHARED``), then its own CORS, errors and bucket; no ``Authenticate`` and no
    ``Versioning``."""
    return [
        # Observe's line writes a password in the path [redacted] (the lab's
        # challenges take one there, as httpbin's do).
        *(
            (cls, {**options, "logged_path": logged_paths(ROUTES)})
            if cls is Observe
            else (cls, options)
            for cls, options in core
            if cls in SHARED
        ),  # fmt: skip
        # Any header a preflight asks for; every header of an answer readable.
        (Cors, {"origins": config.cors_origins, "any_header": True, "expose": "*"}),
        (Errors, {}),
        (RateLimit, {"limits": limits, "routes": rate_limit_buckets(ROUTES)}),
    ]


def logged_paths(routes: tuple[Route, ...]) -> Callable[[str], str] | None:
    """What a table's request lines write of a path (``PATH_INFO``): each segment a
    row's secret path parameter holds ``[redacted]`` (docs/operating.md, "Logs":
    no credential in a log line); None when no row has one. It reads paths as they
    are, whatever the router made of them, so ``Observe`` writes every answer's
    line with it: a ``405``'s, a preflight's, and a ``404``'s of a path that only
    begins as a row's does, by its segments in any case, its dot segments resolved
    (a doubled slash, a trailing one, ``/./``, ``/x/../``), since a typo must not
    log a password either; with segments past the row's (a password holding a
    slash, sent ``%2F``), all from its first secret one on is hidden."""
    rows = []  # each row's segments (None for a parameter), and its secret ones
    for route in routes:
        secret = {f"{{{param.name}}}" for param in route.params if param.secret}
        if secret:
            parts = [part for part in route.path.split("/") if part]
            rows.append((
                [None if part.startswith("{") else part.casefold() for part in parts],
                [n for n, part in enumerate(parts) if part in secret],
            ))  # fmt: skip
    if not rows:
        return None

    def logged(path: str) -> str:
        spans: list[tuple[int, int]] = []  # each segment's, its dot segments resolved
        for found in _SEGMENT.finditer(path):
            if found[0] == "..":
                spans = spans[:-1]
            elif found[0] != ".":
                spans.append(found.span())
        segments = [path[start:end].casefold() for start, end in spans]
        begun = [  # the rows the path begins as
            (parts, secret)
            for parts, secret in rows
            if len(segments) >= len(parts)
            and all(
                part in (None, got)
                for part, got in zip(parts, segments[: len(parts)], strict=True)
            )
        ]
        hidden = {n for parts, secret in begun if len(parts) == len(segments)
                  for n in secret}  # fmt: skip
        if begun and not hidden:  # segments past every row's: hide the rest
            return (
                path[: min(spans[secret[0]][0] for _, secret in begun)] + "[redacted]"
            )
        for n in sorted(hidden, reverse=True):  # from the right: the spans hold
            start, end = spans[n]
            path = f"{path[:start]}[redacted]{path[end:]}"
        return path

    return logged


_SEGMENT = re.compile("[^/]+")
