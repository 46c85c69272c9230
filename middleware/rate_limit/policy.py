"""Token buckets, and the RateLimit fields that tell a client where it stands.

A bucket holds up to ``quota`` tokens and regains ``refill`` a second; a request
takes a token, and an empty bucket refuses it: ``429 RATE_LIMITED`` with
``Retry-After`` (RFC 9110 section 10.2.3, whole seconds rounded up). Every answer
that passed a bucket says so in the fields of draft-ietf-httpapi-ratelimit-headers-11,
lists naming each bucket the request passed, the default first::

    RateLimit-Policy: "default";q=100;w=10, "auth";q=10;w=60
    RateLimit: "default";r=99;t=0, "auth";r=9;t=0

``RateLimits`` are one app's: the default bucket, keyed on the caller, and the named
ones of what hashes a password, keyed on the client address (docs/rate-limits.md).
The ``RateLimit`` layer passes a request's default bucket and its route's named
ones before anything is routed, and leaves what it passed in ``refapi.buckets``, as
plain data: each bucket's policy name, key and tokens left. A request that only
its handler can tell needs one more (a PUT whose body changes a password) is passed
it by the handler, ``limits.take(request, "auth")``, before it hashes anything;
its fields then list every bucket passed, and should the new one refuse, the
default bucket gets its token back. The buckets themselves are kept beside the
data (``storage.base.Buckets``), shared by every worker of a host.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from ...errors import RateLimited
from ...web.auth import client_address
from ...web.environ import BUCKETS, RESPONSE_HEADERS

if TYPE_CHECKING:
    from ...config import Config
    from ...storage.base import Buckets
    from ...web.wsgi import Request

FIELDS = ("RateLimit-Policy", "RateLimit")

# What a request passed (``refapi.buckets``): policy name -> (bucket key, tokens
# left), in the order passed, the default first.
Passed = dict[str, tuple[str, float]]
Headers = list[tuple[str, str]]


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

    # ``RateLimit`` of the bucket alone at a whole number of tokens left, as
    # ``field`` made it: a bucket's level comes back to the same few, its quota or
    # one under it, as a rule (PERF: 600 instructions a request, make
    # bench-instructions).
    left: dict[int, tuple[str, str]] = dataclasses.field(
        default_factory=dict, init=False, repr=False
    )

    def field(self, level: float) -> tuple[str, str]:
        """``RateLimit`` of the bucket alone at ``level`` tokens, kept in ``left``
        for a whole level of one token or more (at most 1,024 of them)."""
        made = ("RateLimit", self.state(level))
        if level >= 1:
            if len(self.left) >= 1024:
                self.left.clear()
            self.left[int(level)] = made
        return made

    def state(self, level: float) -> str:
        """The bucket's item of ``RateLimit`` at ``level`` tokens."""
        if level >= 1:  # most answers: a token left, none to wait for
            return f'"{self.name}";r={int(level)};t=0'
        return f'"{self.name}";r=0;t={self.wait(level)}'

    def wait(self, level: float) -> int:
        """Seconds until the bucket has a token again, 0 while it has one."""
        return 0 if level >= 1 else math.ceil((1 - level) / self.refill)


class RateLimits:
    """One app's token buckets: the default one of each caller (``capacity``
    tokens, ``refill`` a second) and the named ``policies``, kept in ``buckets``
    (the storage's) and taken from at ``clock``'s time."""

    def __init__(
        self,
        *,
        buckets: Buckets,
        capacity: int,
        refill: float,
        clock: Callable[[], float],
        policies: Sequence[Policy] = (),
        name: str = "default",
    ) -> None:
        self.take_tokens = buckets.take
        self.take_one = buckets.take_one  # the default bucket alone
        self.clock = clock
        # A default bucket of another ``name`` (the lab's, docs/lab.md) is kept
        # apart from the app's: its keys carry the name.
        self.default = Policy(name, capacity, refill, math.ceil(capacity / refill))
        self.prefix = "" if name == "default" else f"{name}:"
        self.fields = ("RateLimit-Policy", self.default.header)
        self.policies = {policy.name: policy for policy in policies}
        self.listed = {name: self.default, **self.policies}

    @classmethod
    def configured(
        cls, config: Config, buckets: Buckets, clock: Callable[[], float]
    ) -> RateLimits:
        """The buckets ``config`` sets, in ``buckets``: the default, and what hashes a
        password per client address, logins and password changes a minute
        ("auth") and registrations an hour ("register")."""
        return cls(
            buckets=buckets,
            capacity=config.rate_limit_capacity,
            refill=config.rate_limit_refill,
            clock=clock,
            policies=(
                Policy.per("auth", config.auth_rate_limit, 60),
                Policy.per("register", config.register_rate_limit, 3600),
            ),
        )

    def take(self, request: Request, *names: str) -> None:
        """Pass the named buckets now, ``429`` if one is empty: for a request whose
        need only its handler can tell (a password change), before it hashes
        anything. Without the ``RateLimit`` layer, nothing is limited."""
        environ = request.environ
        passed: Passed | None = environ.get(BUCKETS)
        if passed is None:
            return
        address = "addr:" + client_address(environ)
        headers: Headers = environ.get(RESPONSE_HEADERS, [])
        # Refused, it raises RateLimited, which Errors renders and marks counted.
        self.pass_named(passed, headers, address, names, self.clock())

    def pass_default(
        self, passed: Passed, headers: Headers, caller: str, now: float
    ) -> None:
        """Take a token from the caller's default bucket (most requests pass it
        alone); 429 when it is empty."""
        default, caller = self.default, self.prefix + caller
        allowed, level = self.take_one(caller, default.quota, default.refill, now)
        passed[default.name] = (caller, level)
        left = default.left.get(int(level)) or default.field(level)
        headers += self.fields, left
        if not allowed:
            raise RateLimited(max(1, default.wait(level)))

    def pass_named(
        self,
        passed: Passed,
        headers: Headers,
        address: str,
        names: Sequence[str],
        now: float,
        caller: str | None = None,
    ) -> None:
        """Take a token from each bucket named not passed yet (and from the
        ``caller``'s default bucket, when given), or from none; 429 when one is
        empty."""
        default = self.default
        policies, buckets, refund = [], [], None
        if caller is not None:
            policies.append(default)
            buckets.append((self.prefix + caller, default.quota, default.refill))
        elif default.name in passed:
            # The default bucket gave this request a token: back if these refuse.
            refund = (passed[default.name][0], default.quota, default.refill)
        for name in names:
            policy = self.policies[name]
            if name not in passed:
                policies.append(policy)
                buckets.append((f"{name}:{address}", policy.quota, policy.refill))
        if not buckets:
            return
        allowed, left = self.take_tokens(buckets, now, refund)
        if refund is not None and not allowed:
            key, level = passed[default.name]
            passed[default.name] = (key, min(default.quota, level + 1))
        listed = bool(passed)
        for policy, (key, *_), level in zip(policies, buckets, left, strict=True):
            passed[policy.name] = (key, level)
        if listed:  # a later pass: its fields replace the first's
            headers[:] = [h for h in headers if h[0] not in FIELDS]
        headers += self._fields(passed)
        if not allowed:
            waits = [policy.wait(passed[policy.name][1]) for policy in policies]
            raise RateLimited(max(1, *waits))

    def _fields(self, passed: Passed) -> tuple[tuple[str, str], tuple[str, str]]:
        """``RateLimit-Policy`` and ``RateLimit``, naming every bucket passed."""
        policies = [(self.listed[name], level) for name, (_, level) in passed.items()]
        policy = ", ".join([p.header for p, _ in policies])
        state = ", ".join([p.state(level) for p, level in policies])
        return ("RateLimit-Policy", policy), ("RateLimit", state)
