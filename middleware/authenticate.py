"""Authenticate: find who the request's credential speaks for; decide nothing.

It reads a Bearer token (``Authorization: Bearer ...``), an API key (``X-API-Key``)
and the session cookie, looks each up by the digest of its secret, and leaves what
it found in ``environ["refapi.auth"]`` (an ``Authentication``) for the router,
which enforces what each route needs. It also sets ``refapi.caller``, the key of
the caller's rate-limit bucket and idempotency scope: the principal (``user:7``,
``client:2``) whatever token it came with, so a fresh login buys no fresh bucket,
else the client address (``addr:192.0.2.1``, an IPv6 one by its /64). A request
without any credential costs nothing here. ``/healthz`` ignores credentials altogether.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from werkzeug.http import parse_cookie

from ..web.auth import (
    ANONYMOUS,
    SESSION_COOKIE,
    Authentication,
    Principal,
    client_address,
    secret_hash,
)

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

    from ..storage import Store

AUTH = "refapi.auth"
CALLER = "refapi.caller"


class Authenticate:
    def __init__(
        self,
        app: WSGIApplication,
        *,
        store: Store,
        clock: Callable[[], float],
        exempt: frozenset[str] = frozenset({"/healthz"}),
    ) -> None:
        self.app = app
        self.store = store
        self.clock = clock
        self.exempt = exempt

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse):
        auth = ANONYMOUS
        if environ.get("PATH_INFO") not in self.exempt:
            auth = self.identify(environ)
        environ[AUTH] = auth
        principal = auth.principal or auth.session
        environ[CALLER] = (
            principal.caller if principal else "addr:" + client_address(environ)
        )
        return self.app(environ, start_response)

    def identify(self, environ: WSGIEnvironment) -> Authentication:
        header = environ.get("HTTP_AUTHORIZATION")
        api_key = environ.get("HTTP_X_API_KEY")
        cookies = environ.get("HTTP_COOKIE")
        if not (header or api_key or cookies):
            return ANONYMOUS  # the common case: no lookup at all
        principal, rejected = None, None
        if header:
            scheme, _, token = header.strip().partition(" ")
            # Other schemes (Basic, at /oauth/token) are not ours to judge here.
            if scheme.lower() == "bearer":
                principal = self._token("bearer", token.strip())
                if principal is None:
                    rejected = "The Bearer token is not valid, or has expired."
        if api_key is not None and rejected is None:
            by_key = self._api_key(api_key.strip())
            if by_key is None:
                rejected = "The API key is not valid, or was revoked."
            principal = principal or by_key
        session, stale = None, False
        value = parse_cookie(cookies).get(SESSION_COOKIE) if cookies else None
        if value is not None:
            session = self._token("session", value)
            stale = session is None
        return Authentication(None if rejected else principal, rejected, session, stale)

    def _token(self, kind: str, secret: str) -> Principal | None:
        if not secret:
            return None
        found = self.store.find_token(kind, secret_hash(secret), self.clock())
        if found is None:
            return None
        user: dict[str, Any] | None = found["user"]
        if user is not None:
            return Principal(
                "user", user["id"], user["role"], kind, found["login"], user
            )
        return Principal("client", found["clientId"], "user", kind, found["login"])

    def _api_key(self, secret: str) -> Principal | None:
        user = self.store.find_api_key(secret_hash(secret)) if secret else None
        if user is None:
            return None
        return Principal("user", user["id"], user["role"], "api_key", None, user)
