"""Log in, log out, and ask who is logged in.

``POST /api/login`` checks the email and password and answers a Bearer token, its
lifetime, the CSRF token and the user, and sets the session cookie the web UI
uses (``HttpOnly; SameSite=Lax``, ``Secure`` over https). Both the token and the
session belong to one login; ``POST /api/logout`` ends the login, so both stop
working at once. ``GET /api/session`` tells a page loaded anew who the session
cookie belongs to, and its CSRF token.

Guessing is slowed per client address and per account: past
``REFAPI_LOGIN_MAX_FAILURES`` failed logins from an address (over all accounts), or
ten times that against an account (from all addresses, so that one address cannot
lock anyone out), a login, even a right one, is ``429 RATE_LIMITED`` until a minute
after the first of them. An IPv6 address counts by its /64, but one customer may
hold a whole /48 of them: so a /48 adds at most ``REFAPI_LOGIN_MAX_FAILURES`` to an
account's count, and is refused that account once it has. Each attempt is
counted before its password is checked and taken back when it was right, so
concurrent guesses never pass a limit; a wrong ``currentPassword`` in a password
change counts the same. A wrong password and an unknown email get the same answer
after the same work: an unknown email's password is checked against a dummy hash,
so the slow hash runs once either way.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Protocol

from werkzeug.security import check_password_hash, generate_password_hash

from ..config import Config
from ..errors import InvalidCredentials, RateLimited, Unauthenticated
from ..storage.base import (
    LoginAttemptStore,
    LoginStore,
    MetaStore,
    UnknownUser,
    UserStore,
)
from ..web import Request, Response, empty_response, json_response
from ..web.auth import (
    cleared_cookie,
    client_address,
    client_site,
    csrf_token,
    new_secret,
    secret_hash,
    session_cookie,
)
from ..web.keys import csrf_key
from ..web.wsgi import Limits

WINDOW_S = 60  # a counter of login attempts lasts a minute from its first


class PasswordLoginStore(UserStore, LoginAttemptStore, LoginStore, MetaStore, Protocol):
    """What a login asks of storage: the user and its password hash, the failed
    logins' counters, the new login's tokens, and the key of its CSRF token."""


# Kept by method, not by instance: it is a hash of a secret nobody holds, so any
# instance that hashes with the method may check against it, and none can learn
# another's state from it. Made at the first login (a slow hash), not at start.
@functools.cache
def _dummy_hash(method: str) -> str:
    """A hash of nothing anyone knows, made with the configured method."""
    return generate_password_hash(new_secret(), method)


def reserve_attempt(
    store: LoginAttemptStore, limit: int, request: Request, email: str, now: float
) -> list[str]:
    """Count a password check against the client address and the account of
    ``email`` before it runs (429 past ``limit`` failures from the address, ten
    times that against the account, ``limit`` against it from one IPv6 /48); the
    keys to release if it passes."""
    account = f"email:{email.casefold()}"
    limits = [
        (f"addr:{client_address(request.environ)}", limit),
        (account, limit * 10),
    ]
    site = client_site(request.environ)
    if site is not None:  # docs/authentication.md, "Login failures"
        limits.append((f"{account} from:{site}", limit))
    wait = store.reserve_login_attempt(limits, now, WINDOW_S)
    if wait:
        raise RateLimited(max(1, math.ceil(wait)))
    return [key for key, _ in limits]


def login(
    request: Request,
    store: PasswordLoginStore,
    config: Config,
    clock: Callable[[], float],
    limits: Limits,
) -> Response:
    email, password = request.payload["email"], request.payload["password"]
    now = clock()
    # The failure count first: while it refuses, its 429 says when it will pass, and
    # no token of "auth" is spent on it (a drained bucket would say sooner, and
    # refuse again). Then the bucket, before anything is hashed (docs/rate-limits.md).
    counted = reserve_attempt(store, config.login_max_failures, request, email, now)
    try:
        limits.take(request, "auth")
    except RateLimited:
        store.release_login_attempt(counted)  # no password was checked
        raise
    found = store.user_login(email)
    stored = found[1] if found else _dummy_hash(config.password_hash)
    if not check_password_hash(stored, password) or found is None:
        raise InvalidCredentials()  # the attempt stays counted: a failure
    store.release_login_attempt(counted)
    user = found[0]
    login_id, token, session = new_secret(), new_secret(), new_secret()
    hashes = {"bearer": secret_hash(token), "session": secret_hash(session)}
    try:
        store.create_tokens(
            login_id, hashes, now + config.token_ttl, user_id=user["id"]
        )
    except UnknownUser:  # deleted since it was read: a fresh start, a DELETE
        raise InvalidCredentials() from None
    body = {
        "token": token,
        "tokenType": "Bearer",
        "expiresIn": config.token_ttl,
        "csrfToken": csrf_token(csrf_key(config, store), login_id),
        "user": user,
    }
    cookie = session_cookie(session, max_age=config.token_ttl, **request.cookie_scope)
    return json_response(body, headers=[("Set-Cookie", cookie)])


def logout(request: Request, store: LoginStore) -> Response:
    principal = request.principal
    if principal is not None and principal.login is not None:
        store.end_login(principal.login)
    cookie = cleared_cookie(**request.cookie_scope)
    return empty_response(headers=[("Set-Cookie", cookie)])


def get_session(request: Request, store: MetaStore, config: Config) -> Response:
    auth = request.auth
    principal = auth.session
    if principal is None or principal.login is None:
        # A protected route (it is on no public list): a stale cookie is cleared,
        # as the router clears it on the others (docs/authentication.md).
        cleared = cleared_cookie(**request.cookie_scope) if auth.stale_session else None
        raise Unauthenticated("No valid session cookie was sent.", clear_cookie=cleared)
    body = {
        "user": principal.user,
        "csrfToken": csrf_token(csrf_key(config, store), principal.login),
    }
    return json_response(body)
