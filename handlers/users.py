"""Users: register (public), list and read (any caller with a credential), replace
and delete (the user themself or an admin), and the first admin.

A password is stored only as a salted slow hash (``werkzeug.security``) and never
returned. Emails are unique without regard to case (``409 CONFLICT``). Only an
admin gives a role: anyone else asking for a role other than the one they have is
``403 FORBIDDEN`` and changes nothing (OWASP API3:2023, mass assignment).
"""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path

from werkzeug.security import generate_password_hash

from ..config import Config
from ..errors import Conflict, Forbidden, NotFound
from ..storage import Store
from ..storage.base import EmailTaken, iso
from ..web import Request, Response, empty_response, json_response, pagination
from . import now_iso

log = logging.getLogger("refapi")
ADMIN_PASSWORD_FILE = "admin-password.txt"


def register_user(request: Request) -> Response:
    body = request.payload
    role = body.get("role", "user")
    caller = request.principal
    if role != "user" and (caller is None or caller.role != "admin"):
        raise Forbidden("Only an admin may give a role.")
    try:
        user = request.store.create_user(
            body["email"],
            generate_password_hash(body["password"], request.config.password_hash),
            body.get("firstName", ""),
            body.get("lastName", ""),
            role,
            now_iso(request),
        )
    except EmailTaken:
        raise Conflict("A user with this email exists.", {"field": "email"}) from None
    location = request.link(f"/api/users/{user['id']}")
    return json_response(user, 201, [("Location", location)])


def list_users(request: Request) -> Response:
    after, limit = pagination.window(request, "users")
    records = request.store.list_users(after, limit)
    return pagination.page_response(request, "users", records, limit)


def get_user(request: Request, id: int) -> Response:
    user = request.store.get_user(id)
    if user is None:
        raise NotFound(f"User {id} does not exist.")
    return json_response(user)


def replace_user(request: Request, id: int) -> Response:
    caller = _self_or_admin(request, id)
    current = request.store.get_user(id)
    if current is None:
        raise NotFound(f"User {id} does not exist.")
    body = request.payload
    role = body.get("role", current["role"])
    if role != current["role"] and caller.role != "admin":
        raise Forbidden("Only an admin may change a role.")
    password = body.get("password")
    digest = (
        generate_password_hash(password, request.config.password_hash)
        if password is not None
        else None
    )
    fields = {**body, "role": role}
    try:
        user = request.store.replace_user(id, fields, digest, now_iso(request))
    except EmailTaken:
        raise Conflict("A user with this email exists.", {"field": "email"}) from None
    if user is None:
        raise NotFound(f"User {id} does not exist.")
    return json_response(user)


def delete_user(request: Request, id: int) -> Response:
    _self_or_admin(request, id)
    if not request.store.delete_user(id):
        raise NotFound(f"User {id} does not exist.")
    return empty_response()


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
        log.error("no admin was made: cannot write %s: %s", path, exc)
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
        store.create_user(email, digest, "", "", "admin", iso(now))
    except EmailTaken:
        return False  # another worker made it, or the email is a user's already
    return True
