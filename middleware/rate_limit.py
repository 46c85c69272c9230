"""Rate limiting: token buckets per caller, shared by every worker of a host."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from ..errors import RateLimited
from ..web import error_response
from ..web.auth import client_address
from .authenticate import CALLER
from .headers import Headers, response_headers

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

    from ..storage.base import Bucket

# Never limited: a load balancer's probes must not be starved.
UNLIMITED = frozenset({"/healthz"})
_FIELDS = ("RateLimit-Policy", "RateLimit")
# environ: the callable a handler passes a bucket with, ``pass_buckets(names)``.
PASS_BUCKETS = "refapi.pass_buckets"

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
    ``environ["refapi.pass_buckets"]``, before it hashes anything.

    An empty bucket is ``429 RATE_LIMITED`` with ``Retry-After`` (RFC 9110 section
    10.2.3, whole seconds rounded up) and the same number in ``details.retry_after``.
    A request refused by any bucket takes a token from none. The health check is
    never limited, so a load balancer's probes cannot be starved.

    Reads ``refapi.caller`` (set by ``Authenticate`` outside it) and, without one,
    keys the default bucket on the client address; so alone, or outside
    ``Authenticate``, every request counts against its address. Adds the fields to
    the request's response headers (``middleware/headers.py``), starting the list if
    no layer outside did, answers its own 429 (the error object, rendered as
    ``Errors`` renders it), and writes ``environ["refapi.pass_buckets"]`` for the
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
        self.routes = dict(routes or {})
        for names in self.routes.values():
            unknown = set(names) - set(self.policies)
            if unknown:
                raise ValueError(f"no rate-limit policy named {sorted(unknown)}")

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
        if with_default and not names:  # most requests: the default bucket alone
            bucket = (self.caller, default.quota, default.refill)
            allowed, [level] = limiter.take((bucket,), limiter.clock(), None)
            levels[default] = level
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
        allowed, left = limiter.take(buckets, limiter.clock(), refund)
        if refund is not None and not allowed:
            levels[default] = min(default.quota, levels[default] + 1)
        listed = bool(levels)
        levels.update(zip(policies, left, strict=True))
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
