"""Authenticate: find who the request's credential speaks for; decide nothing.

It reads a Bearer token (``Authorization: Bearer ...``), an API key (``X-API-Key``)
and the session cookie, looks each up by the digest of its secret, and leaves what
it found in ``refapi.auth`` (an ``Authentication``) for the router,
which enforces what each route needs. It also sets ``refapi.bucket_key``, the key
of the default rate-limit bucket: the caller, the principal's name (``user:7``,
``client:2``) whatever token it came with, so a fresh login buys no fresh bucket,
else the client address (``addr:192.0.2.1``, an IPv6 one by its /64). A request
without any credential costs nothing here. The paths ``exempt`` names, those whose
rows say they read no credential (``routes.credential_free_paths``: ``/healthz``,
and the token endpoint, which authenticates OAuth clients itself, HTTP Basic or its
form, RFC 6749 section 2.3.1), are passed with no credential looked up.

A credential that is present but unusable is refused, never read as "no
credential": an ``Authorization`` header that is not exactly ``Bearer``, one or
more spaces and a token (RFC 6750 section 2.1: a tab, no token, another scheme), an
empty ``X-API-Key``, or a Bearer token and an API key that speak for different
principals. A refused request is keyed on its address, so a bad credential buys
no bucket.

A credential is looked up only while its address may still spend: with ``dry``
(``DryAddresses``, shared with ``RateLimit``, which tells it each address's level),
a request that sends one from an address whose bucket is known to be empty is
answered by it (``429``) before any lookup, so bogus tokens in bulk cost no more
lookups than anonymous requests cost takes (docs/rate-limits.md, "What a bogus
credential costs"). What the order implies: a valid credential from that address
is refused too, until a token is back.

Reads ``Authorization``, ``X-API-Key``, ``Cookie``, ``PATH_INFO`` and the client
address; writes ``refapi.auth`` and ``refapi.bucket_key``, and always both, for the
layers inside it (``RateLimit``) and the router. It needs no other layer, only a
store, whose ``StorageUnavailable`` it lets through for ``Errors`` outside to
answer (``503``); without ``dry`` every credential is looked up.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..errors import Unauthenticated
from ..web.auth import (
    ANONYMOUS,
    SESSION_COOKIE,
    Authentication,
    Principal,
    client_address,
    request_cookie,
    secret_hash,
)
from ..web.environ import AUTH, BUCKET_KEY
from .headers import Declared

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

    from ..storage import Store
    from ..storage.base import Record
    from .rate_limit import DryAddresses

# RFC 6750 section 2.1: credentials = "Bearer" 1*SP b64token; the scheme is
# case-insensitive (RFC 9110 section 11.1). Surrounding spaces and tabs are not
# part of a field's value (RFC 9110 section 5.5).
_BEARER = re.compile(r"bearer +([A-Za-z0-9\-._~+/]+=*)", re.IGNORECASE | re.ASCII)
_OWS = " \t"
KNOWN_HEADERS = 4096  # Authorization values remembered per instance as valid
_MALFORMED = (
    "The Authorization header must be the Bearer scheme, a space and a token"
    " (RFC 6750 section 2.1)."
)


class _Refused(Exception):
    """A credential present but unusable; ``malformed`` when the request cannot be
    read as one credential (RFC 6750 section 3.1, ``invalid_request``)."""

    def __init__(self, why: str, *, malformed: bool = False) -> None:
        super().__init__(why)
        self.malformed = malformed


class Authenticate:
    def __init__(
        self,
        app: WSGIApplication,
        *,
        store: Store,
        clock: Callable[[], float],
        exempt: frozenset[str] = frozenset(),
        dry: DryAddresses | None = None,
    ) -> None:
        self.app = app
        self.store = store
        self.clock = clock
        self.dry = dry
        self.exempt = exempt
        # Authorization value -> its token's digest, for values that named a
        # valid token: parsing and hashing (the regex, SHA-256) are pure functions
        # of the value. Only valid ones, so a flood of bogus tokens cannot fill
        # it; the token's validity is still the store's to say.
        # PERF: a tenth of a remembered token's request, make bench-instructions
        self.digests: dict[str, str] = {}
        # A token's digest -> what the store found and the principal made of it,
        # used while the store hands back that very record (it remembers it:
        # storage/remembered.py), so a remembered token's principal is made once.
        # PERF: 1,000 instructions a request with a token, make bench-layers
        self.principals: dict[str, tuple[Record, Principal]] = {}

    @staticmethod
    def declares(
        path: str, *, exempt: frozenset[str] = frozenset(), **options: object
    ) -> Declared:
        """A credential it refuses is ``401`` wherever it looks (the router
        answers it); the ``429`` of its dry addresses is ``RateLimit``'s, declared
        there."""
        if path in exempt:
            return Declared()
        return Declared(router_raises=(Unauthenticated,))

    def __call__(
        self, environ: WSGIEnvironment, start_response: StartResponse
    ) -> Iterable[bytes]:
        if environ.get("PATH_INFO") not in self.exempt and (
            "HTTP_AUTHORIZATION" in environ
            or "HTTP_X_API_KEY" in environ
            or "HTTP_COOKIE" in environ
        ):
            refusal = self.dry.refusal(environ) if self.dry else None
            if refusal is not None and not self._found_valid_before(environ):
                return refusal(environ, start_response)
            auth = environ[AUTH] = self.identify(environ)
            environ[BUCKET_KEY] = _bucket_key(auth, environ)
        else:  # the common case: no credential, no lookup; the address's bucket
            # PERF: _bucket_key's answer for nobody, without the call: 900
            # instructions a request, make bench-layers
            environ[AUTH] = ANONYMOUS
            environ[BUCKET_KEY] = "addr:" + client_address(environ)
        return self.app(environ, start_response)

    def _found_valid_before(self, environ: WSGIEnvironment) -> bool:
        """Whether the request's one credential is a Bearer token this process
        found valid, so a dry address may not refuse it: its caller is its
        principal, whose own bucket limits it (docs/rate-limits.md, "What a bogus
        credential costs"). Only tokens once valid are remembered, and one that
        fails a lookup is forgotten, so a flood still costs no lookups."""
        return (
            environ.get("HTTP_AUTHORIZATION") in self.digests
            and "HTTP_X_API_KEY" not in environ
            and request_cookie(environ, SESSION_COOKIE) is None
        )

    def identify(self, environ: WSGIEnvironment) -> Authentication:
        """What the request's credentials speak for, each looked up."""
        header = environ.get("HTTP_AUTHORIZATION")
        api_key = environ.get("HTTP_X_API_KEY")
        session, stale = None, False
        value = request_cookie(environ, SESSION_COOKIE)
        if value is not None:
            session = self._token("session", value)
            stale = session is None
        try:
            principal = self._principal(header, api_key)
        except _Refused as refused:
            return Authentication(None, str(refused), session, stale, refused.malformed)
        return Authentication(principal, None, session, stale)

    def _principal(self, header: str | None, api_key: str | None) -> Principal | None:
        """Who the Bearer token and the API key speak for; None if neither was sent."""
        by_token = self._bearer(header) if header is not None else None
        if api_key is None:
            return by_token
        key = api_key.strip(_OWS)
        if not key:
            raise _Refused("The X-API-Key header is empty.", malformed=True)
        by_key = self._api_key(key)
        if by_key is None:
            raise _Refused("The API key is not valid, or was revoked.")
        if by_token is not None and by_token.caller != by_key.caller:
            # Two credentials for two principals: whose request is it? Neither's.
            raise _Refused(
                "The Bearer token and the API key name different callers.",
                malformed=True,
            )
        return by_token or by_key

    def _bearer(self, header: str) -> Principal | None:
        digest = self.digests.get(header)
        if digest is None:
            match = _BEARER.fullmatch(header.strip(_OWS))
            if match is None:
                raise _Refused(_MALFORMED, malformed=True)
            digest = secret_hash(match[1])
        principal = self._found("bearer", digest)
        if principal is None:
            self.digests.pop(header, None)  # no longer passes a dry address
            raise _Refused("The Bearer token is not valid, or has expired.")
        if header.startswith("Bearer ") and len(header) < 128:  # the usual form
            # Only that form: spaces or case changed around one valid token must
            # not each take a place (up to 8 KB apiece).
            if len(self.digests) >= KNOWN_HEADERS:
                self.digests.clear()  # forgetting costs a parse, never a wrong answer
            self.digests[header] = digest
        return principal

    def _token(self, kind: str, secret: str) -> Principal | None:
        return self._found(kind, secret_hash(secret)) if secret else None

    def _found(self, kind: str, digest: str) -> Principal | None:
        found = self.store.find_token(kind, digest, self.clock())
        if found is None:
            return None
        kept = self.principals.get(digest)
        if kept is not None and kept[0] is found:
            return kept[1]
        if len(self.principals) >= KNOWN_HEADERS:
            self.principals.clear()
        principal = principal_from(kind, found)
        self.principals[digest] = (found, principal)
        return principal

    def _api_key(self, secret: str) -> Principal | None:
        user = self.store.find_api_key(secret_hash(secret)) if secret else None
        if user is None:
            return None
        return Principal("user", user["id"], user["role"], "api_key", None, user)


def principal_of(store: Store, kind: str, digest: str, now: float) -> Principal | None:
    """Who the token of ``kind`` (bearer, session) whose hash is ``digest`` speaks
    for at ``now``; None for one unknown, expired or revoked."""
    found = store.find_token(kind, digest, now)
    return None if found is None else principal_from(kind, found)


def principal_from(kind: str, found: Record) -> Principal:
    """Who a token of ``kind`` the store found speaks for."""
    user: dict[str, Any] | None = found["user"]
    if user is not None:
        return Principal("user", user["id"], user["role"], kind, found["login"], user)
    return Principal("client", found["clientId"], "user", kind, found["login"])


def _bucket_key(auth: Authentication, environ: WSGIEnvironment) -> str:
    """The key of the caller's bucket: the principal's, else the address's."""
    principal = None if auth.rejected else auth.principal or auth.session
    return principal.caller if principal else "addr:" + client_address(environ)
