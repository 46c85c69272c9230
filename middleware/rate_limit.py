"""Rate limiting: token buckets per caller, shared by every worker of a host."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from ..errors import RateLimited, Unavailable
from ..web import error_response
from ..web.auth import client_address
from ..web.environ import CALLER, PASS_BUCKETS
from .headers import Declared, Headers, response_headers

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

    from ..storage.base import Bucket
    from ..web import Response

# Never limited: a load balancer's probes and a monitor's scrapes must not be
# starved (nor carry RateLimit fields).
UNLIMITED = frozenset({"/healthz", "/metrics"})
_FIELDS = ("RateLimit-Policy", "RateLimit")
DRY_ADDRESSES = 4096  # addresses remembered per process as having an empty bucket

Take = Callable[["Sequence[Bucket]", float, "Bucket | None"], tuple[bool, list[float]]]


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: cheap keys
class Policy:
    """A named token bucket: ``quota`` tokens, regained at ``refill`` a second, so
    full again after ``window`` seconds (as the fields say it: whole seconds)."""

    name: str
    quota: int
    refill: float
    window: int

    @classmethod
    def per(cls, name: str, quota: int, seconds: int) -> Policy:
        """``quota`` tokens every ``seconds``."""
        return cls(name, quota, quota / seconds, seconds)

    @cached_property
    def header(self) -> str:
        return f'"{self.name}";q={self.quota};w={self.window}'


class RateLimit:
    """A token bucket per caller (docs/rate-limits.md), shared by all workers.

    The bucket is the caller's, ``refapi.caller`` as ``Authenticate`` found it: the
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
    (a PUT whose body changes a password) is passed it by the handler, through
    ``refapi.pass_buckets``, before it hashes anything.

    An empty bucket is ``429 RATE_LIMITED`` with ``Retry-After`` (RFC 9110 section
    10.2.3, whole seconds rounded up) and the same number in ``details.retry_after``.
    A request refused by any bucket takes a token from none. The health check is
    never limited, so a load balancer's probes cannot be starved.

    A credential that fails its lookup counts against its address (``Authenticate``
    names the address as the caller), and ``refusal`` answers for an address whose
    bucket this process has seen run dry: ``Authenticate`` asks it before it looks a
    credential up, so a flood of bogus tokens costs no more lookups than the bucket
    has tokens (docs/rate-limits.md, "What a bogus credential costs").

    Reads ``refapi.caller`` (set by ``Authenticate`` outside it) and, without one,
    keys the default bucket on the client address; so alone, or outside
    ``Authenticate``, every request counts against its address. Adds the fields to
    the request's response headers (``middleware/headers.py``), starting the list if
    no layer outside did, answers its own 429 (the error object, rendered as
    ``Errors`` renders it), and writes ``refapi.pass_buckets`` for the
    handler. It needs no other layer.
    """

    def __init__(
        self,
        app: WSGIApplication,
        *,
        take: Take,
        capacity: int,
        refill: float,
        clock: Callable[[], float],
        exempt: frozenset[str] = UNLIMITED,
        policies: Sequence[Policy] = (),
        routes: Mapping[tuple[str, str], tuple[str, ...]] | None = None,
    ) -> None:
        self.app = app
        self.take = take
        self.clock = clock
        self.exempt = exempt
        self.default = Policy("default", capacity, refill, math.ceil(capacity / refill))
        self.fields = ("RateLimit-Policy", self.default.header)
        self.policies = {policy.name: policy for policy in policies}
        # Address -> (tokens left, when), for the default buckets of addresses this
        # process last saw below one token. Other takes only lower a bucket, so it
        # can have no token before its refill gives it one: a safe thing to know.
        # (PostgreSQL's buckets refill by the database's clock; this counts the
        # same seconds by ``clock``.)
        self.dry: dict[str, tuple[float, float]] = {}
        self.routes = dict(routes or {})
        for names in self.routes.values():
            unknown = set(names) - set(self.policies)
            if unknown:
                raise ValueError(f"no rate-limit policy named {sorted(unknown)}")

    def declares(self, path: str) -> Declared:
        """Its fields and its 429 on every path it limits; 503 when its buckets
        cannot be used (before it added any field)."""
        if path in self.exempt:
            return Declared()
        return Declared(adds=_FIELDS, raises=(RateLimited, Unavailable))

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse):
        path = environ.get("PATH_INFO")
        if path in self.exempt:
            return self.app(environ, start_response)
        # The caller as Authenticate found it, just outside this layer; without it,
        # the address. The extra buckets are the address's whoever the caller is.
        address = "addr:" + client_address(environ)
        caller = environ.get(CALLER) or address
        headers, start = response_headers(environ, start_response)
        passes = _Passes(self, caller, address, headers)
        # Buckets that cannot be used raise StorageUnavailable: a 503, and health
        # says "rateLimit": "unavailable". Failing closed, because serving unlimited
        # would quietly drop the promise to every caller (the fault reported here),
        # and a 503 that health explains takes the host out of rotation until the
        # file is usable again; a merely damaged file is rebuilt, not a 503.
        names = self.routes.get((environ.get("REQUEST_METHOD", ""), path or ""), ())
        try:
            passes.take(names, with_default=True)
        except RateLimited as refused:
            return error_response(refused)(environ, start)
        environ[PASS_BUCKETS] = passes.take
        return self.app(environ, start)

    def refusal(self, environ: WSGIEnvironment) -> Response | None:
        """The 429 for a request from an address whose bucket this process saw run
        dry, until its next token is due; None otherwise (no bucket is touched)."""
        if not self.dry or environ.get("PATH_INFO") in self.exempt:
            return None
        address = "addr:" + client_address(environ)
        seen = self.dry.get(address)
        if seen is None:
            return None
        default, (level, at) = self.default, seen
        level = min(default.quota, level + (self.clock() - at) * default.refill)
        if level >= 1:
            self.dry.pop(address, None)
            return None
        refused = RateLimited(max(1, _wait(default, level)))
        refused.headers += self.fields, ("RateLimit", _state(default, level))
        return error_response(refused)

    def saw(self, address: str, level: float, now: float) -> None:
        """Remember an address's default bucket below one token; forget it above."""
        if level < 1:
            if len(self.dry) >= DRY_ADDRESSES:
                self.dry.clear()  # forgetting costs lookups, never a wrong 429
            self.dry[address] = (level, now)
        elif self.dry:
            self.dry.pop(address, None)


class _Passes:
    """The buckets one request has passed, and the RateLimit fields that say so."""

    __slots__ = ("limiter", "caller", "address", "headers", "levels")

    def __init__(
        self,
        limiter: RateLimit,
        caller: str,
        address: str,
        headers: Headers,
    ) -> None:
        # Not the environ, which will hold this object: no reference cycle.
        self.limiter = limiter
        self.caller = caller
        self.address = address
        self.headers = headers  # the request's response headers
        self.levels: dict[Policy, float] = {}  # the default first, as listed

    def take(self, names: Sequence[str], with_default: bool = False) -> None:
        """Take a token from each bucket named (and the default's), or from none;
        429 when one is empty."""
        limiter, default, levels = self.limiter, self.limiter.default, self.levels
        now = limiter.clock()
        if with_default and not names:  # most requests: the default bucket alone
            bucket = (self.caller, default.quota, default.refill)
            allowed, [level] = limiter.take((bucket,), now, None)
            levels[default] = level
            if self.caller == self.address:
                limiter.saw(self.address, level, now)
            self.headers += limiter.fields, ("RateLimit", _state(default, level))
            if not allowed:
                raise RateLimited(max(1, _wait(default, level)))
            return
        policies, buckets, refund = [], [], None
        if with_default:
            policies.append(default)
            buckets.append((self.caller, default.quota, default.refill))
        elif default in levels:
            # The default bucket gave this request a token: back if these refuse.
            refund = (self.caller, default.quota, default.refill)
        for name in names:
            policy = limiter.policies[name]
            if policy not in levels:
                policies.append(policy)
                buckets.append((f"{name}:{self.address}", policy.quota, policy.refill))
        if not buckets:
            return
        allowed, left = limiter.take(buckets, now, refund)
        if refund is not None and not allowed:
            levels[default] = min(default.quota, levels[default] + 1)
        listed = bool(levels)
        levels.update(zip(policies, left, strict=True))
        if with_default and self.caller == self.address:
            limiter.saw(self.address, levels[default], now)
        headers = self.headers
        if listed:  # a later pass: its fields replace the first's
            headers[:] = [h for h in headers if h[0] not in _FIELDS]
        headers += self._fields()
        if not allowed:
            raise RateLimited(max(1, *[_wait(p, levels[p]) for p in policies]))

    def _fields(self) -> tuple[tuple[str, str], tuple[str, str]]:
        """``RateLimit-Policy`` and ``RateLimit``, naming every bucket passed."""
        policy = ", ".join([p.header for p in self.levels])
        state = ", ".join([_state(p, level) for p, level in self.levels.items()])
        return ("RateLimit-Policy", policy), ("RateLimit", state)


def _state(policy: Policy, level: float) -> str:
    return f'"{policy.name}";r={int(level)};t={_wait(policy, level)}'


def _wait(policy: Policy, level: float) -> int:
    """Seconds until the bucket has a token again, 0 while it has one."""
    return 0 if level >= 1 else math.ceil((1 - level) / policy.refill)
