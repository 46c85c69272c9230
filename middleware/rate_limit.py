"""Rate limiting: a token bucket per caller, shared by every worker of a host."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import RateLimited
from .authenticate import CALLER
from .request_id import RESPONSE_HEADERS

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

# Never limited: a load balancer's probes must not be starved.
UNLIMITED = frozenset({"/healthz"})


class RateLimit:
    """A token bucket per caller (the specification's model), shared by all workers.

    The bucket is the caller's, ``refapi.caller`` as ``Authenticate`` found it: the
    principal of a valid credential, else the client address, ``REMOTE_ADDR``
    (rewritten from ``X-Forwarded-For`` only when a proxy is trusted). Every
    limited response carries the IETF fields of
    draft-ietf-httpapi-ratelimit-headers-11::

        RateLimit-Policy: "default";q=<capacity>;w=<seconds to refill fully>
        RateLimit: "default";r=<tokens remaining>;t=<seconds until one is back>

    An empty bucket is ``429 RATE_LIMITED`` with ``Retry-After`` (RFC 9110 section
    10.2.3, whole seconds rounded up) and the same number in ``details.retry_after``.
    A refused request takes no token. The health check is never limited, so a load
    balancer's probes cannot be starved.
    """

    def __init__(
        self,
        app: WSGIApplication,
        *,
        take: Callable[[str, int, float, float], tuple[bool, float]],
        capacity: int,
        refill: float,
        clock: Callable[[], float],
        exempt: frozenset[str] = UNLIMITED,
    ) -> None:
        self.app = app
        self.take = take
        self.capacity = capacity
        self.refill = refill
        self.clock = clock
        self.exempt = exempt
        window = math.ceil(capacity / refill)
        self.policy = ("RateLimit-Policy", f'"default";q={capacity};w={window}')

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse):
        if environ.get("PATH_INFO") in self.exempt:
            return self.app(environ, start_response)
        caller = environ[CALLER]  # set by Authenticate, just outside this layer
        # Buckets that cannot be used raise StorageUnavailable: a 503, and health
        # says "rateLimit": "unavailable". Failing closed, because serving unlimited
        # would quietly drop the promise to every caller (the fault reported here),
        # and a 503 that health explains takes the host out of rotation until the
        # file is usable again; a merely damaged file is rebuilt, not a 503.
        allowed, level = self.take(caller, self.capacity, self.refill, self.clock())
        wait = 0 if level >= 1 else math.ceil((1 - level) / self.refill)
        environ[RESPONSE_HEADERS] += (
            self.policy,
            ("RateLimit", f'"default";r={int(level)};t={wait}'),
        )
        if not allowed:
            raise RateLimited(max(wait, 1))
        return self.app(environ, start_response)
