"""Rate limiting: token buckets per caller, shared by every worker of a host.

The layer (``RateLimit``) and what the addresses known dry cost (``DryAddresses``)
here; the policies, the takes and their RateLimit fields beside it (``policy.py``:
``RateLimits``, ``Policy``); the buckets themselves are the storage's
(``storage.base.Buckets``: a file beside SQLite's, rows on PostgreSQL).

It may import the other middleware's ``headers``, the web helpers, the error
family, the configuration and the storage interface (``storage/base.py``); never a
handler, the router, the route table, the app or the lab, which hand it what it
takes (the lab its own policies: ``lab/routes.py``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from ...errors import RateLimited, Unavailable
from ...web import error_response
from ...web.auth import client_address
from ...web.environ import BUCKET_KEY, BUCKETS, RATE_LIMITED, RESPONSE_HEADERS
from ..headers import Declared, response_headers
from .policy import FIELDS, Policy, RateLimits

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

    from ...web import Response
    from .policy import Passed

__all__ = ["DryAddresses", "Policy", "RateLimit", "RateLimits"]

DRY_ADDRESSES = 4096  # addresses remembered per process as having an empty bucket


class RateLimit:
    """A token bucket per caller (docs/rate-limits.md), shared by all workers.

    The bucket is the caller's, ``refapi.bucket_key`` as ``Authenticate`` found it: the
    principal of a valid credential, else the client address, ``REMOTE_ADDR``
    (rewritten from ``X-Forwarded-For`` only when a proxy is trusted; an IPv6
    address counts by its /64). Every limited response carries the IETF fields of
    draft-ietf-httpapi-ratelimit-headers-11::

        RateLimit-Policy: "default";q=<capacity>;w=<seconds to refill fully>
        RateLimit: "default";r=<tokens remaining>;t=<seconds until one is back>

    What hashes a password also passes a bucket of the client address (``policies``,
    e.g. ``"auth"`` for logins, ``"register"`` for registrations), named by
    ``routes`` for a method and path, and checked here with the default one, before
    anything is routed, looked up or hashed. Its answers list every bucket it
    passed, ``RateLimit-Policy: "default";q=100;w=10, "auth";q=10;w=60`` (the
    draft's fields are lists). A request that only its handler can tell needs one
    (a PUT whose body changes a password) is passed it by the handler, with the
    same ``RateLimits`` (``policy.py``, beside this layer), before it hashes anything.

    An empty bucket is ``429 RATE_LIMITED`` with ``Retry-After`` (RFC 9110 section
    10.2.3, whole seconds rounded up) and the same number in ``details.retry_after``.
    A request refused by any bucket takes a token from none. The health check is
    never limited, so a load balancer's probes cannot be starved.

    A credential that fails its lookup counts against its address (``Authenticate``
    names the address as the caller); with ``dry``, the level of an address's own
    bucket is told to ``DryAddresses``, which ``Authenticate`` asks before it looks
    a credential up (docs/rate-limits.md, "What a bogus credential costs").

    Reads ``refapi.bucket_key`` (set by ``Authenticate`` outside it) and, without one,
    keys the default bucket on the client address; so alone, or outside
    ``Authenticate``, every request counts against its address. Adds the fields to
    the request's response headers (``middleware/headers.py``), starting the list if
    no layer outside did, answers its own 429 (the error object, rendered as
    ``Errors`` renders it), and writes ``refapi.buckets`` (what it passed, as
    plain data) for the handler, and ``refapi.rate_limited`` (True) when a bucket
    refuses, for ``Observe`` to count. It needs no other layer.
    """

    def __init__(
        self,
        app: WSGIApplication,
        *,
        limits: RateLimits,
        exempt: frozenset[str] = frozenset(),
        routes: Mapping[tuple[str, str], tuple[str, ...]] | None = None,
        dry: DryAddresses | None = None,
    ) -> None:
        self.app = app
        self.limits = limits
        self.default = limits.default.name  # the key of its bucket in what passed
        self.exempt = exempt
        self.dry = dry
        self.routes = dict(routes or {})
        for names in self.routes.values():
            unknown = set(names) - set(limits.policies)
            if unknown:
                raise ValueError(f"no rate-limit policy named {sorted(unknown)}")

    @staticmethod
    def declares(
        path: str, *, exempt: frozenset[str] = frozenset(), **options: object
    ) -> Declared:
        """Its fields and its 429 on every path it limits; 503 when its buckets
        cannot be used (before it added any field)."""
        if path in exempt:
            return Declared()
        return Declared(adds=FIELDS, raises=(RateLimited, Unavailable))

    def __call__(
        self, environ: WSGIEnvironment, start_response: StartResponse
    ) -> Iterable[bytes]:
        path = environ.get("PATH_INFO")
        if path in self.exempt:
            return self.app(environ, start_response)
        # The bucket key as Authenticate found it, just outside this layer: a
        # principal's, or addr:<the client address>, read once there; without it,
        # the address. The extra buckets are the address's whoever calls.
        caller = environ.get(BUCKET_KEY) or "addr:" + client_address(environ)
        # The list an outer layer started, as a rule (PERF: no call, 600
        # instructions a request, make bench-instructions)
        headers, start = environ.get(RESPONSE_HEADERS), start_response
        if headers is None:
            headers, start = response_headers(environ, start_response)
        passed: Passed = {}
        # Buckets that cannot be used raise StorageUnavailable: a 503, and health
        # says "rateLimit": "unavailable". Failing closed, because serving unlimited
        # would quietly drop the promise to every caller (the fault reported here),
        # and a 503 that health explains takes the host out of rotation until the
        # file is usable again; a merely damaged file is rebuilt, not a 503.
        names = self.routes.get((environ.get("REQUEST_METHOD", ""), path or ""), ())
        limits, now = self.limits, self.limits.clock()
        by_address = caller.startswith("addr:")
        refused = None
        try:
            if names:
                address = caller if by_address else "addr:" + client_address(environ)
                limits.pass_named(passed, headers, address, names, now, caller)
            else:  # most requests: the default bucket alone
                limits.pass_default(passed, headers, caller, now)
        except RateLimited as error:
            refused = error
        # Told the level of an address's own default bucket, refused or not; a
        # principal's is no address's. Above a token, with no address remembered
        # dry, there is nothing to tell (PERF: 400 instructions a request, make
        # bench-instructions).
        dry, level = self.dry, passed[self.default][1]
        if by_address and dry is not None and (level < 1 or dry.seen):
            dry.saw(caller, level, now)
        if refused is not None:
            environ[RATE_LIMITED] = True  # a refusal, for Observe to count
            return error_response(refused)(environ, start)
        environ[BUCKETS] = passed  # for a handler that passes more (RateLimits.take)
        return self.app(environ, start)


class DryAddresses:
    """The addresses whose default bucket this process has seen run dry, and the
    429 that refuses them until their next token is due.

    ``app.py`` makes one and hands it to both layers that share it: ``RateLimit``
    tells it an address's level after each take, and ``Authenticate`` asks it
    before it looks a credential up, so a flood of bogus tokens costs no more
    lookups than the bucket has tokens (docs/rate-limits.md, "What a bogus
    credential costs"). What it knows is safe to know: other takes only lower a
    bucket, so it can have no token before its refill gives it one. (PostgreSQL's
    buckets refill by the database's clock; this counts the same seconds by
    ``clock``.)
    """

    def __init__(
        self,
        *,
        default: Policy,
        clock: Callable[[], float],
        exempt: frozenset[str] = frozenset(),
    ) -> None:
        self.default = default
        self.clock = clock
        self.exempt = exempt
        self.fields = ("RateLimit-Policy", default.header)
        # Address -> (tokens left, when), for the default buckets of addresses
        # this process last saw below one token.
        self.seen: dict[str, tuple[float, float]] = {}

    def refusal(self, environ: WSGIEnvironment) -> Response | None:
        """The 429 for a request from an address whose bucket this process saw run
        dry, until its next token is due; None otherwise (no bucket is touched)."""
        if not self.seen or environ.get("PATH_INFO") in self.exempt:
            return None
        address = "addr:" + client_address(environ)
        seen = self.seen.get(address)
        if seen is None:
            return None
        default, (level, at) = self.default, seen
        level = min(default.quota, level + (self.clock() - at) * default.refill)
        if level >= 1:
            self.seen.pop(address, None)
            return None
        refused = RateLimited(max(1, default.wait(level)))
        refused.headers += self.fields, ("RateLimit", default.state(level))
        environ[RATE_LIMITED] = True  # a refusal, for Observe to count
        return error_response(refused)

    def saw(self, address: str, level: float, now: float) -> None:
        """Remember an address's default bucket below one token; forget it above."""
        if level < 1:
            if len(self.seen) >= DRY_ADDRESSES:
                self.seen.clear()  # forgetting costs lookups, never a wrong 429
            self.seen[address] = (level, now)
        elif self.seen:
            self.seen.pop(address, None)
