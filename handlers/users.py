"""Users: register (public), list and read (any caller with a credential), replace
and delete (the user themself or an admin), and the first admin.

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

import logging
import os
import secrets
from pathlib import Path

from werkzeug.security import check_password_hash, generate_password_hash

from ..config import Config
from ..errors import Conflict, Forbidden, found
from ..storage import Store
from ..storage.base import EmailTaken, LastAdmin
from ..web import Request, Response, empty_response, json_response, pagination
from .session import reserve_attempt

log = logging.getLogger("refapi")
ADMIN_PASSWORD_FILE = "admin-password.txt"


def register_user(request: Request) -> Response:
    body = request.payload
    role = body.get("role", "user")
    caller = request.principal
    if role != "user" and (caller is None or caller.role != "admin"):
        raise Forbidden("Only an admin may give a role.")
    store = request.store
    # Every cheap check before the slow hash: a taken email costs no hashing.
    if store.user_login(body["email"]) is not None:
        raise _email_taken()
    digest = generate_password_hash(body["password"], request.config.password_hash)
    try:
        user = store.create_user(
            body["email"],
            digest,
            body.get("firstName", ""),
            body.get("lastName", ""),
            role,
            request.clock(),
        )
    except EmailTaken:  # taken meanwhile
        raise _email_taken() from None
    location = request.link(f"/api/users/{user['id']}")
    return json_response(user, 201, [("Location", location)])


def list_users(request: Request) -> Response:
    return pagination.list_page(request, "users", request.store.list_users)


def get_user(request: Request, id: int) -> Response:
    return json_response(found(request.store.get_user(id), "User", id))


def replace_user(request: Request, id: int) -> Response:
    body = request.payload
    password = body.get("password")
    if password is not None:
        # A password change hashes: it passes the client address's "auth" bucket
        # before anything is looked up or hashed.
        request.pass_buckets("auth")
    caller = _self_or_admin(request, id)
    current = found(request.store.get_user(id), "User", id)
    role = body.get("role", current["role"])
    if role != current["role"] and caller.role != "admin":
        raise Forbidden("Only an admin may change a role.")
    digest, keep_login = None, None
    if password is not None:
        if caller.kind == "user" and caller.id == id:
            _check_current_password(request, current["email"], body)
            keep_login = caller.login  # the caller's own login stays
        digest = generate_password_hash(password, request.config.password_hash)
    fields = {**body, "role": role}
    try:
        user = request.store.replace_user(
            id, fields, digest, request.clock(), keep_login=keep_login
        )
    except EmailTaken:
        raise _email_taken() from None
    except LastAdmin:
        raise _last_admin() from None
    return json_response(found(user, "User", id))


def delete_user(request: Request, id: int) -> Response:
    _self_or_admin(request, id)
    try:
        deleted = request.store.delete_user(id)
    except LastAdmin:
        raise _last_admin() from None
    found(deleted, "User", id)
    return empty_response()


def _check_current_password(request: Request, email: str, body: dict) -> None:
    """403 unless ``currentPassword`` is the user's password; a wrong one counts
    as a failed login, against the same limits."""
    given = body.get("currentPassword")
    if given is None:
        raise Forbidden("Changing your own password needs currentPassword.")
    counted = reserve_attempt(request, email)
    found = request.store.user_login(email)
    if found is None or not check_password_hash(found[1], given):
        raise Forbidden("currentPassword is not your password.")
    request.store.release_login_attempt(counted)


def _email_taken() -> Conflict:
    return Conflict("A user with this email exists.", {"field": "email"})


def _last_admin() -> Conflict:
    return Conflict(
        "This is the last admin: make another user an admin first.",
        {"reason": "last admin"},
    )


def _self_or_admin(request: Request, user_id: int):
    """The caller, when it may change user ``user_id``: 403 before anything is
    read, so another user's record is neither changed nor probed (OWASP API1)."""
    caller = request.require_principal()
    if caller.role != "admin" and not (caller.kind == "user" and caller.id == user_id):
        raise Forbidden("Only the user themself or an admin may change a user.")
    return caller


def ensure_admin(store: Store, config: Config, now: float) -> None:
    """Make the first admin on first start, unless one exists.

    From ``REFAPI_ADMIN_EMAIL``/``REFAPI_ADMIN_PASSWORD`` when set; otherwise
    ``admin@localhost`` with a random password written to a file of mode 0600 in
    the data folder, whose path (never the password) is logged. The file is written
    before the account is made, so a password is never lost; workers starting
    together race on the unique email, and only the winner's file is kept.
    """
    if store.has_admin():
        return
    email, password = config.admin_email, config.admin_password
    if email:
        _create_admin(store, config, email, password, now)
        return
    email, password = "admin@localhost", secrets.token_urlsafe(18)
    folder = Path(config.data_dir)
    path = folder / ADMIN_PASSWORD_FILE
    draft = folder / f".{ADMIN_PASSWORD_FILE}.{os.getpid()}"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as file:
            file.write(f"{email}\n{password}\n")
    except OSError as exc:
        log.error(
            "no admin: cannot write its password to %s (%s); make the folder"
            " writable, or set REFAPI_ADMIN_EMAIL and REFAPI_ADMIN_PASSWORD,"
            " and start again",
            path,
            exc,
        )
        return
    if _create_admin(store, config, email, password, now):
        os.replace(draft, path)
        log.warning("created the admin %s; its password is in %s", email, path)
    else:
        draft.unlink(missing_ok=True)


def _create_admin(
    store: Store, config: Config, email: str, password: str, now: float
) -> bool:
    digest = generate_password_hash(password, config.password_hash)
    try:
        store.create_user(email, digest, "", "", "admin", now)
    except EmailTaken:
        if not store.has_admin():  # not another worker's admin: a user's email
            log.error(
                "no admin: the email %s belongs to a user who is not an admin, so"
                " no admin can be made with it; set REFAPI_ADMIN_EMAIL (and"
                " REFAPI_ADMIN_PASSWORD) to an email no user has, and start again",
                email,
            )
        return False
    return True
