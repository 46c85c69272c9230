"""Users: register (public), list and read (any caller with a credential), replace
and delete (the user themself or an admin).

A password is stored only as a salted slow hash (``werkzeug.security``) and never
returned, and what hashes one is bounded per client address (the "auth" and
"register" buckets): register makes every cheap check, the email being free
included, before it hashes. Emails are unique without regard to case (``409
CONFLICT``). Only an admin gives a role: anyone else asking for a role other than
the one they have is ``403 FORBIDDEN`` and changes nothing (OWASP API3:2023, mass
assignment). The last admin can be neither demoted nor deleted (``409`` with
``details.reason: "last admin"``), so the service is never left without one.

Users changing their own password send ``currentPassword`` too (wrong or missing:
``403``, counted as a failed login when wrong); an admin changing another's does
not. A new password ends every token and session of the user but the caller's
own; API keys stay until revoked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from werkzeug.security import check_password_hash, generate_password_hash

from ..config import Config
from ..errors import Conflict, Forbidden, found
from ..storage.base import (
    EmailTaken,
    LastAdmin,
    LoginAttemptStore,
    PasswordChanged,
    UserStore,
)
from ..web import Request, Response, empty_response, json_response
from ..web.pagination import Pages
from ..web.wsgi import Limits
from .session import reserve_attempt


class PasswordChangeStore(UserStore, LoginAttemptStore, Protocol):
    """What replacing a user asks of storage: the user, and the failed logins'
    counters a wrong ``currentPassword`` counts against."""


def register_user(
    request: Request, store: UserStore, config: Config, clock: Callable[[], float]
) -> Response:
    body = request.payload
    role = body.get("role", "user")
    caller = request.principal
    if role != "user" and (caller is None or caller.role != "admin"):
        raise Forbidden("Only an admin may give a role.")
    # Every cheap check before the slow hash: a taken email costs no hashing.
    if store.user_login(body["email"]) is not None:
        raise _email_taken()
    digest = generate_password_hash(body["password"], config.password_hash)
    try:
        user = store.create_user(
            body["email"],
            digest,
            body.get("firstName", ""),
            body.get("lastName", ""),
            role,
            clock(),
        )
    except EmailTaken:  # taken meanwhile
        raise _email_taken() from None
    location = request.link(f"/api/users/{user['id']}")
    return json_response(user, 201, [("Location", location)])


def list_users(request: Request, store: UserStore, pages: Pages) -> Response:
    return pages.list(request, "users", store.list_users)


def get_user(request: Request, store: UserStore, id: int) -> Response:
    return json_response(found(store.get_user(id), "User", id))


def replace_user(
    request: Request,
    store: PasswordChangeStore,
    config: Config,
    clock: Callable[[], float],
    limits: Limits,
    id: int,
) -> Response:
    body = request.payload
    password = body.get("password")
    if password is not None:
        # A password change hashes: it passes the client address's "auth" bucket
        # before anything is looked up or hashed.
        limits.take(request, "auth")
    caller = request.require_principal()  # the row's may_change passed
    current = found(store.get_user(id), "User", id)
    role = body.get("role", current["role"])
    if role != current["role"] and caller.role != "admin":
        raise Forbidden("Only an admin may change a role.")
    digest, keep_login, checked = None, None, None
    if password is not None:
        if caller.kind == "user" and caller.id == id:
            limit, now = config.login_max_failures, clock()
            checked = _check_current_password(
                store, limit, request, current["email"], now
            )
            keep_login = caller.login  # the caller's own login stays
        digest = generate_password_hash(password, config.password_hash)
    fields = {**body, "role": role}
    try:
        # Only while the password is still the one currentPassword matched: of
        # two changes from one password at once, the second is refused.
        user = store.replace_user(
            id, fields, digest, clock(), keep_login=keep_login, current_hash=checked
        )
    except EmailTaken:
        raise _email_taken() from None
    except LastAdmin:
        raise _last_admin() from None
    except PasswordChanged:
        raise Forbidden(_NOT_YOURS) from None
    return json_response(found(user, "User", id))


def delete_user(request: Request, store: UserStore, id: int) -> Response:
    request.require_principal()  # the row's may_change asked who; never none
    try:
        deleted = store.delete_user(id)
    except LastAdmin:
        raise _last_admin() from None
    found(deleted, "User", id)
    return empty_response()


def _check_current_password(
    store: PasswordChangeStore, limit: int, request: Request, email: str, now: float
) -> str:
    """403 unless ``currentPassword`` is the user's password; a wrong one counts
    as a failed login, against the same limits. The stored hash it matched."""
    given = request.payload.get("currentPassword")
    if given is None:
        raise Forbidden("Changing your own password needs currentPassword.")
    counted = reserve_attempt(store, limit, request, email, now)
    found = store.user_login(email)
    if found is None or not check_password_hash(found[1], given):
        raise Forbidden(_NOT_YOURS)
    store.release_login_attempt(counted)
    return found[1]


_NOT_YOURS = "currentPassword is not your password."


def _email_taken() -> Conflict:
    return Conflict("A user with this email exists.", {"field": "email"})


def _last_admin() -> Conflict:
    return Conflict(
        "This is the last admin: make another user an admin first.",
        {"reason": "last admin"},
    )


def self_or_admin(request: Request, id: int) -> None:
    """Who may change a user (the row's ``may_change``): the user or an admin,
    else 403, told from the path alone, before the body or anything stored is
    read, so another user's record is neither changed nor probed (OWASP API1)."""
    caller = request.require_principal()
    if caller.role != "admin" and not (caller.kind == "user" and caller.id == id):
        raise Forbidden("Only the user themself or an admin may change a user.")
