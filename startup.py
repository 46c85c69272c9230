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

A server's start needs more than settings (``check_serving``, the master's too): a
data folder it can write, a folder the SQLite file can be made in, and free
addresses to listen on. Each of these, wrong, stops the start in one line as well
(docs/operating.md, "When a start fails"); once it listens, ``start_lines`` say where
to look.

A service with accounts needs someone who can make the rest, so a start that finds
no admin makes the first one (docs/authentication.md, "The first admin"): from
``REFAPI_ADMIN_EMAIL`` and ``REFAPI_ADMIN_PASSWORD`` when they are set, else
``admin@localhost`` with a random password written to a file in the data folder
(``REFAPI_DATA_DIR``), one per database (``first_admin.py``). Every worker of a
server runs this as it starts; the store's unique email lets one of them win.
"""

from __future__ import annotations

import errno
import logging
import os
import secrets
import socket
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from werkzeug.security import generate_password_hash

from . import schemas
from .config import Config
from .errors import ValidationError
from .first_admin import admin_password_file, file_text
from .storage import Store, check_database, sqlite_file
from .storage.base import EmailTaken

log = logging.getLogger("refapi")


def check_start(
    environ: Mapping[str, str] | None = None, *, connect: bool = True
) -> Config:
    """The configuration of ``environ`` (the process's by default), or exit with
    status 1 and one line on standard error saying what to fix, no traceback.
    ``connect``: on PostgreSQL, also log in once."""
    try:
        config = Config.from_env(environ)
        _check_password_hash(config.password_hash)
        _check_ca_file(config.proxy_ca_file)
        _check_admin(config)
        if connect:
            check_database(config.database_url, timeout=config.db_pool_timeout)
        else:
            sqlite_file(config.database_url)  # the scheme at least
    except ValueError as exc:  # a setting: StorageMisconfigured is one too
        raise SystemExit(f"refapi: {exc}") from None
    return config


def _check_password_hash(method: str) -> None:
    """ValueError naming REFAPI_PASSWORD_HASH unless Werkzeug can hash with
    ``method``: hashing once is the one check that agrees with Werkzeug on every
    method and parameter (a worker met a bogus one with a traceback)."""
    try:
        generate_password_hash("", method)
    except (ValueError, TypeError) as exc:
        raise ValueError(
            f"REFAPI_PASSWORD_HASH {method!r} is not a method werkzeug.security"
            f" can hash with ({exc}); e.g. scrypt, or pbkdf2:sha256:600000"
        ) from None


def _check_admin(config: Config) -> None:
    """ValueError naming REFAPI_ADMIN_EMAIL or REFAPI_ADMIN_PASSWORD unless they are
    what a registration takes (an email address; a password of at least 8
    characters and not a common one): the first admin has no way round the
    rules every account keeps. Never the password in the message."""
    if not config.admin_email:
        return
    body = {"email": config.admin_email, "password": config.admin_password}
    try:
        schemas.validate(body, schemas.load("user-register", vars(config)))
    except ValidationError as exc:
        error = exc.details["errors"][0]
        field = error["field"].lstrip("/")
        raise ValueError(
            f"REFAPI_ADMIN_{field.upper()} {error['message']}, as every account's"
        ) from None


def _check_ca_file(path: str | None) -> None:
    """ValueError naming REFAPI_PROXY_CA_FILE unless it is a file this user may
    read: else every https fetch of the proxy was a 502, with nothing logged."""
    if path is not None and not (os.path.isfile(path) and os.access(path, os.R_OK)):
        raise ValueError(
            f"REFAPI_PROXY_CA_FILE {path} is not a file this user may read: name a"
            " CA bundle (PEM), or leave it unset for the system's"
        )


def check_serving(config: Config, addresses: Iterable[object] = ()) -> None:
    """Exit with status 1 and one line unless a server of ``config`` can start: its
    data folder a folder it may write (or make), its SQLite file's path in a folder
    (not under a file), and each of ``addresses`` (gunicorn's: ``(host, port)`` for
    TCP; a path or a descriptor, which gunicorn handles, are passed over) free.

    A database folder that is not writable is not refused: it is an outage, served
    ``503`` until it is put right (docs/operating.md, "When storage fails")."""
    problem = (
        _data_folder_problem(config.data_dir)
        or database_path_problem(config.database_url)
        or next(filter(None, map(_address_problem, addresses)), None)
    )
    if problem:
        raise SystemExit(f"refapi: {problem}")


def _data_folder_problem(folder: str) -> str | None:
    named = f"the data folder {folder} (REFAPI_DATA_DIR)"
    found, kind = _nearest(Path(folder))
    if kind == "file":
        if found == Path(folder):
            return (
                f"{named} is a file: move it away, or set REFAPI_DATA_DIR to a folder"
            )
        return (
            f"{named} cannot be made: {found} is a file; set REFAPI_DATA_DIR to a"
            " folder"
        )
    if kind != "folder":
        return f"{named} cannot be reached: {kind}"
    if not os.access(found, os.R_OK | os.W_OK | os.X_OK):
        return _unwritable(named, found, found == Path(folder))
    if found != Path(folder):
        # Its first missing folder made and taken away again: what access() allows
        # (root may write anywhere) a file system can still refuse (/proc, a
        # read-only one), and the check leaves nothing behind.
        first = found / Path(folder).relative_to(found).parts[0]
        try:
            first.mkdir(mode=0o700)
        except FileExistsError:
            return None  # made meanwhile, by another start
        except OSError as exc:
            return (
                f"{named} cannot be made: {exc.strerror}; set REFAPI_DATA_DIR to"
                " a folder it may write"
            )
        try:
            first.rmdir()
        except OSError:
            pass  # another start made its folders inside it meanwhile: kept
    return None


def _unwritable(named: str, found: Path, itself: bool) -> str:
    """Why the data folder (``itself``), or ``found``, the nearest folder of its
    path, may not be written, and what to do."""
    user = f"this user (uid {os.geteuid()})"
    if os.statvfs(found).f_flag & os.ST_RDONLY:  # no chown would help
        return (
            f"{named} is on a read-only file system ({found}): set REFAPI_DATA_DIR"
            " to a folder on a writable one (under systemd, one the unit's"
            " ReadWritePaths= names)"
        )
    if itself:
        return (
            f"{named} is not writable by {user}: give it to that user (chown),"
            " or set REFAPI_DATA_DIR to a folder it may write"
        )
    return (
        f"{named} cannot be made: {found} is not writable by {user}; make the"
        " folder, or set REFAPI_DATA_DIR to a folder it may write"
    )


def database_path_problem(url: str) -> str | None:
    """What keeps the SQLite file ``url`` names from being a database: a folder at
    its path, or a file where a folder of its path should be; None when nothing
    does (PostgreSQL, or a path a database can be at)."""
    path = sqlite_file(url)
    if path is None:
        return None
    found, kind = _nearest(Path(path))
    if kind == "folder" and found == Path(path):
        return (
            f"DATABASE_URL names {path}, which is a folder: name the database"
            f" file, e.g. sqlite:///{Path(path) / 'refapi.db'}"
        )
    if kind == "file" and found != Path(path):
        return (
            f"DATABASE_URL names {path}, but {found} is a file: no database can be"
            " made there; name a path in a folder"
        )
    return None


def _nearest(path: Path) -> tuple[Path, str]:
    """The nearest of ``path`` and its parents that exists, and what it is: "file",
    "folder", or why it cannot be looked at."""
    for candidate in (path, *path.parents):
        try:
            is_folder = candidate.is_dir()
            if is_folder or candidate.exists():
                return candidate, "folder" if is_folder else "file"
        except OSError as exc:  # a parent that may not be searched
            return candidate, str(exc)
    return Path("."), "folder"


def _address_problem(address: object) -> str | None:
    if not isinstance(address, tuple) or len(address) != 2 or not address[1]:
        return None  # a Unix socket, a descriptor handed over, or any free port
    host, port = str(address[0]), int(address[1])
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if not 0 < port < 65536:  # else bind's OverflowError, a traceback
        return f"cannot listen on {shown}: a port is 1 to 65535; set REFAPI_BIND"
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # As gunicorn binds: an address a closed connection left waiting is free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            return _bind_refused(shown, exc, host, port)
    return None


def _bind_refused(shown: str, exc: OSError, host: str, port: int) -> str:
    said = f"cannot listen on {shown}"
    if exc.errno == errno.EADDRINUSE:
        free = f"[{host}]:{port + 1}" if ":" in host else f"{host}:{port + 1}"
        return (
            f"{said}: another process listens there; stop it, or set REFAPI_BIND"
            f" to a free address (REFAPI_BIND={free})"
        )
    if exc.errno == errno.EACCES:
        return (
            f"{said}: a port under 1024 needs privileges; set REFAPI_BIND to a"
            " higher port, behind a proxy (docs/operating.md)"
        )
    return (
        f"{said}: {exc.strerror or exc}; set REFAPI_BIND to an address of this machine"
    )


def start_lines(listeners: Sequence[str], mounts: Mapping[str, Config]) -> list[str]:
    """What a server says once it listens (the first start is someone's first
    contact, README): the URLs to open and where each instance's first admin's
    password is. ``listeners``: gunicorn's (``http://127.0.0.1:8000``); ``mounts``:
    each instance's configuration by its mount point ("" for the root)."""
    lines = []
    for listener in listeners:
        if not listener.startswith("http"):
            continue
        # An unspecified address is reached as localhost from this machine.
        url = listener.replace("0.0.0.0", "localhost").replace("[::]", "localhost")
        for prefix in mounts:
            base = f"{url}{prefix}"
            lines.append(f"open {base}/docs (the API) and {base}/ui/ (the web UI)")
    for prefix, config in mounts.items():
        who = f"the admin of {prefix}" if prefix else "the admin"
        if config.admin_email:
            lines.append(f"{who}: {config.admin_email} (REFAPI_ADMIN_EMAIL)")
        else:
            where = admin_password_file(config)
            line = f"{who}: admin@localhost, its password on the second line of {where}"
            if not where.exists() and not _new_sqlite(config):  # none will be written
                line += (
                    " once made (made elsewhere, as by another host, or reset, it is"
                    " not there: refapi admin reset-password admin@localhost)"
                )
            lines.append(line)
    return lines


def _new_sqlite(config: Config) -> bool:
    """Whether ``config``'s database is a SQLite file not made yet, or empty: a
    first start, whose workers make the admin and its password file."""
    path = sqlite_file(config.database_url)
    return path is not None and (not os.path.exists(path) or not os.path.getsize(path))


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
    path = admin_password_file(config, writing=True)
    draft = folder / f".{path.name}.{os.getpid()}"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as file:
            file.write(file_text(email, password, config))
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
