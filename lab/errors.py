"""The lab's own errors: a status asked for, the host's share of slow work taken,
its own challenges, a redirect to a host off its list, a range beyond a body.

They are of the service's error family (``errors.py``), so they are rendered as the
error object by the same ``Errors`` layer, and the explainer finds them by code.
"""

from __future__ import annotations

from typing import Any

from ..errors import ApiError, Header, HostNotAllowed, RateLimited


class Simulated(ApiError):
    """A 4xx or 5xx that ``/lab/status/{codes}`` was asked for (docs/lab.md, "The
    lab"): the status as asked, with the headers it requires or implies, which the
    handler works out. Nothing failed, so it is counted as a request only, never
    as a refusal (``RateLimit`` marks its own) or a fault."""

    code = "SIMULATED"
    may_carry = ("Retry-After", "WWW-Authenticate", "Allow")

    def __init__(
        self,
        status: int,
        phrase: str,
        *,
        retry_after: int | None = None,
        headers: list[Header] | None = None,
    ) -> None:
        details: dict[str, Any] = {"status": status}
        if retry_after is not None:
            details["retry_after"] = retry_after
        super().__init__(f"{phrase}, as asked", details, headers)
        self.status = status


class SlowWorkLimited(RateLimited):
    """The host's share of slow work is taken when a slow route of the lab is asked
    (docs/lab.md, "Delays"): refused at once, not queued, with the seconds until
    the soonest slot should be let go."""

    message = "The server's share of slow work is taken; retry after the time given."


class Challenged(ApiError):
    """401 from one of the lab's own challenges (``/lab/basic-auth``,
    ``/lab/bearer``): its ``WWW-Authenticate``, never the service's, for
    credentials that are the lab's data, not the service's (docs/lab.md,
    "Authentication")."""

    status, code = 401, "UNAUTHENTICATED"
    message = "Send the credentials the lab's challenge asks for."
    may_carry: tuple[str, ...] = ("WWW-Authenticate",)

    def __init__(self, challenge: str, message: str) -> None:
        super().__init__(message, headers=[("WWW-Authenticate", challenge)])


class DigestChallenged(Challenged):
    """401 from the lab's Digest challenge (``/lab/digest-auth``), with the cookie
    httpbin sets on it, which clients' tests look for (docs/lab.md, "Digest
    authentication")."""

    may_carry = ("WWW-Authenticate", "Set-Cookie")

    def __init__(self, challenge: str, message: str, cookie: str) -> None:
        super().__init__(challenge, message)
        self.headers.append(("Set-Cookie", cookie))


class RedirectHostNotAllowed(HostNotAllowed):
    """``/lab/redirect-to`` asked to send the client to a host that is neither the
    request's own nor one of ``REFAPI_LAB_REDIRECT_HOSTS`` (docs/lab.md,
    "Redirects"): the proxy's refusal, for the same reason, a host off a list."""

    message = (
        "The lab redirects only to this host or one REFAPI_LAB_REDIRECT_HOSTS names."
    )


class RangeNotSatisfiable(ApiError):
    """416 from ``/lab/range/{n}``: the one range asked holds no byte of the body
    (RFC 9110 section 15.5.17), with ``Content-Range: bytes */n``, the body's length,
    so the client can ask again within it (docs/lab.md, "Ranges")."""

    status, code = 416, "RANGE_NOT_SATISFIABLE"
    message = "The range asked for holds no byte of the body."
    computed_headers = ("Content-Range",)
    fixed_headers = (("Accept-Ranges", "bytes"),)

    def __init__(self, length: int) -> None:
        super().__init__(
            details={"length": length},
            headers=[("Content-Range", f"bytes */{length}")],
        )


class RunsFull(ApiError):
    """``POST /lab/grade`` when every one of the host's report card runs is live:
    the next may start when the oldest ends, ``Retry-After`` seconds from now. Its
    code is ``BUSY``'s: the host's room is taken, not the caller's bucket."""

    status, code = 503, "BUSY"
    message = (
        "This host keeps 100 report card runs, all of them live; retry after the"
        " time given."
    )
    computed_headers = ("Retry-After",)

    def __init__(self, retry_after: int) -> None:
        super().__init__(
            details={"retry_after": retry_after},
            headers=[("Retry-After", str(retry_after))],
        )
