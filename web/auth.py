"""Who is calling: the principal, the credentials that name one, and the CSRF token.

A request may carry three kinds of credential: a Bearer token (``Authorization:
Bearer <token>``, RFC 6750), an API key (``X-API-Key``) or the UI's session cookie.
Every secret is random (``secrets``, 256 bits), so the store keeps only its SHA-256
and a check is one indexed lookup of that digest: a slow hash, which a password
chosen by a person needs, buys nothing against a random secret.

The CSRF token of a session is an HMAC of the session's login id under the app's
secret key: the page reads it from the login answer or ``GET /api/session`` and
sends it back in ``X-CSRF-Token``; a forged cross-site request cannot know it.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import ipaddress
import secrets
from dataclasses import dataclass, field
from typing import Any

from werkzeug.datastructures import Authorization, ImmutableMultiDict, MultiDict
from werkzeug.http import dump_cookie
from werkzeug.sansio.http import parse_cookie

from ..errors import CsrfFailed
from .origin import same_origin

SESSION_COOKIE = "refapi_session"
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


# Not frozen: a frozen dataclass sets each field through object.__setattr__.
# PERF: about 5% of an authenticated GET, make bench-instructions
@dataclass(slots=True)
class Principal:
    """Who a valid credential speaks for: a user, or an OAuth client (role user)."""

    kind: str  # "user" | "client"
    id: int
    role: str  # "user" | "admin"
    via: str  # "bearer" | "api_key" | "session"
    login: str | None = None  # the login a token or session belongs to
    user: dict[str, Any] | None = None  # the user's record, for a user
    # The caller's name: its default bucket's key, the owner of its payments. Made
    # once, with the principal, which a worker keeps while it remembers the
    # credential (PERF: 700 instructions a request with one, make bench-layers).
    caller: str = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.caller = f"{self.kind}:{self.id}"


@dataclass(slots=True)
class Authentication:
    """What the ``Authenticate`` middleware found; the router decides with it."""

    principal: Principal | None = None  # from a Bearer token or an API key
    rejected: str | None = None  # a Bearer token or API key present but not valid
    session: Principal | None = None  # from a valid session cookie
    stale_session: bool = False  # a session cookie present but not valid
    # ``rejected`` because the request is not one readable credential (a malformed
    # header, an empty key, two callers): RFC 6750's ``invalid_request``.
    malformed: bool = False


ANONYMOUS = Authentication()


def client_address(environ: dict[str, Any]) -> str:
    """The client address every address-keyed limit counts by: an IPv4 address as
    it is, an IPv6 one as its /64, which one subscriber usually holds whole (RFC
    6177), so hopping addresses inside it buys no fresh bucket or count."""
    address: str = environ.get("REMOTE_ADDR", "")
    return address if ":" not in address else _ipv6_network(address, 64)


def client_site(environ: dict[str, Any]) -> str | None:
    """The /48 of an IPv6 client, the most one customer is given (RFC 6177: a /56
    or a /48 is usual), so the most one customer may hop across; None for an IPv4
    client, whose address is the whole of what it holds."""
    address: str = environ.get("REMOTE_ADDR", "")
    if ":" not in address:
        return None
    site = _ipv6_network(address, 48)
    return site if "/" in site else None  # IPv4-mapped, or no address at all


@functools.lru_cache(maxsize=4096)  # a pure function of the address alone
def _ipv6_network(address: str, prefix: int) -> str:
    try:
        parsed = ipaddress.IPv6Address(address)
    except ValueError:
        return address  # not an address a socket gives; counted as it is
    if parsed.ipv4_mapped is not None:
        return str(parsed.ipv4_mapped)  # ::ffff:192.0.2.1 is 192.0.2.1
    return str(ipaddress.IPv6Network((parsed, prefix), strict=False))


def new_secret() -> str:
    return secrets.token_urlsafe(32)


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogateescape")).hexdigest()


def csrf_token(key: bytes, login: str) -> str:
    mac = hmac.new(key, b"csrf:" + login.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


def csrf_valid(key: bytes, login: str, given: str | None) -> bool:
    # compare_digest: the time taken says nothing about how much of it matched.
    return given is not None and hmac.compare_digest(
        csrf_token(key, login).encode(), given.encode("utf-8", "surrogateescape")
    )


FOREIGN_ORIGIN = (
    "A request made with the session cookie must come from this service's own"
    " origin; its Origin names another."
)


def csrf_refusal(
    environ: dict[str, Any], session: Principal, key: bytes
) -> CsrfFailed | None:
    """The 403 of a cookie-authenticated unsafe request that is not the UI's own,
    or None when it is: a foreign ``Origin`` (not the request's own scheme and
    host, as a trusted proxy gives them; ``FOREIGN_ORIGIN``), else a missing or
    wrong CSRF token in ``X-CSRF-Token`` (``CsrfFailed``'s own message)."""
    origin = environ.get("HTTP_ORIGIN")
    if origin is not None and not same_origin(origin, environ):
        return CsrfFailed(FOREIGN_ORIGIN)
    given = environ.get("HTTP_X_CSRF_TOKEN")
    if session.login is not None and csrf_valid(key, session.login, given):
        return None
    return CsrfFailed()


def session_cookie(value: str, *, max_age: int, path: str, secure: bool) -> str:
    """The ``Set-Cookie`` value of a session (Werkzeug writes and quotes it)."""
    return dump_cookie(
        SESSION_COOKIE, value, max_age=max_age, path=path, secure=secure,
        httponly=True, samesite="Lax",
    )  # fmt: skip


def cleared_cookie(*, path: str, secure: bool) -> str:
    """A ``Set-Cookie`` that makes the browser forget the session cookie."""
    return dump_cookie(
        SESSION_COOKIE, "", max_age=0, expires=0, path=path, secure=secure,
        httponly=True, samesite="Lax",
    )  # fmt: skip


_NO_COOKIES: MultiDict[str, str] = ImmutableMultiDict()


def request_cookies(environ: Any) -> MultiDict[str, str]:
    """The request's cookies, by Werkzeug's parser. Its WSGI wrapper decodes the
    header as UTF-8 strictly, and a byte that is not (``Cookie: a=\\xff``) was a
    500 on every route: here it reads as U+FFFD, as a quoted value's does."""
    header = environ.get("HTTP_COOKIE")
    if not header:
        return _NO_COOKIES  # shared, being immutable: a Bearer request makes none
    return parse_cookie(header.encode("latin-1", "replace").decode("utf-8", "replace"))


def request_cookie(environ: Any, name: str) -> str | None:
    """The value of the request's cookie ``name`` (the first, if sent twice); None
    when it sent none of that name."""
    cookies = request_cookies(environ)
    # Looked for before it is read: a MultiDict's get() raises and catches
    # Werkzeug's BadRequestKeyError for a name it lacks, as every Bearer request's
    # look for a session cookie did.
    # PERF: about 10,000 instructions a request with a credential, make bench-layers
    return cookies[name] if name in cookies else None


def parsed_authorization(header: str | None) -> Authorization | None:
    """Werkzeug's reading of an ``Authorization`` header, None when there is none
    or it cannot be read: its Basic decoding raises on a byte that is not ASCII
    (``Basic \\xff``), which was a 500 on the token endpoint and the lab's."""
    try:
        return Authorization.from_header(header)
    except ValueError:
        return None
