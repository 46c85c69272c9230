"""Start-up: what a start checks, and what ``create_app`` does once, before the
first request.

A configuration that cannot work stops the start in one line (``check_start``):
a setting refused, an unknown ``DATABASE_URL`` scheme, a PostgreSQL database that
does not exist or a login it refuses. A server that cannot be reached is an
outage, not a setting: the start goes on and answers 503 until it is back. The
check is the start's, not each worker's (a worker respawned while serving must
meet a dropped database as an outage, not stop the server), so gunicorn's master
runs it before it forks any (``gunicorn.conf.py``), and so does the reset command
(docs/operating.md, "Serving").

A service with accounts needs someone who can make the rest, so a start that finds
no admin makes the first one (docs/authentication.md, "The first admin"): from
``REFAPI_ADMIN_EMAIL`` and ``REFAPI_ADMIN_PASSWORD`` when they are set, else
``admin@localhost`` with a random password written to ``admin-password.txt`` in the
data folder (``REFAPI_DATA_DIR``). Every worker of a server runs this as it starts;
the store's unique email lets one of them win.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from werkzeug.security import generate_password_hash

from .config import Config
from .storage import Store, check_database
from .storage.base import EmailTaken

log = logging.getLogger("refapi")
ADMIN_PASSWORD_FILE = "admin-password.txt"


def check_start(environ: Mapping[str, str] | None = None) -> Config:
    """The configuration of ``environ`` (the process's by default), or exit with
    status 1 and one line on standard error saying what to fix, no traceback."""
    try:
        config = Config.from_env(environ)
        check_database(config.database_url, timeout=config.db_pool_timeout)
    except ValueError as exc:  # a setting: StorageMisconfigured is one too
        raise SystemExit(f"refapi: {exc}") from None
    return config


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
