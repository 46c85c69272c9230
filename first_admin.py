"""The first admin's password file, one per database (docs/operating.md, "The first
admin's password"), and a new password for any account when one is lost.

A first start with no admin named makes ``admin@localhost`` and writes its password
to a file of mode 0600 in the data folder (``REFAPI_DATA_DIR``): the email on the
first line, the password on the second, and on the third the database it is the
admin of (``database: sqlite:///data/refapi.db``, a password in the URL hidden).
The file is ``admin-password.txt``, unless that one names another database, or
none (an older release wrote it, and it may be another's): then it is
``admin-password-<name>-<8 hex digits>.txt``, after the database's name (the SQLite
file's, PostgreSQL's database) and its URL. So a file that names another database
is never overwritten, and ``DATABASE_URL`` alone changed on one data folder keeps
each database's password. Which file it is, each start says.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from pathlib import Path
from typing import NamedTuple
from urllib.parse import parse_qs, urlsplit

from werkzeug.security import generate_password_hash

from .config import Config, shown_url
from .storage import StorageMisconfigured, Store, sqlite_file

PLAIN = "admin-password.txt"
DATABASE = "database: "  # how the third line starts


def admin_password_file(config: Config, *, writing: bool = False) -> Path:
    """The file that holds (or will hold) the password of the first admin of
    ``config``'s database; ``writing``, the one a start that makes it writes to."""
    folder = Path(config.data_dir)
    own = folder / f"admin-password-{_label(config.database_url)}.txt"
    if own.exists():
        return own
    named = database_named(folder / PLAIN)
    if named is None or same_database(named, config.database_url):
        return folder / PLAIN
    if named == "" and not writing:  # an older release's: most likely this one's
        return folder / PLAIN
    return own


def file_text(email: str, password: str, config: Config) -> str:
    return f"{email}\n{password}\n{DATABASE}{shown_url(config.database_url)}\n"


def database_named(path: Path) -> str | None:
    """The database URL the file at ``path`` names; "" for a file that names none
    (or cannot be read); None when there is no file."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, UnicodeDecodeError):
        return ""
    if len(lines) >= 3 and lines[2].startswith(DATABASE):
        return lines[2].removeprefix(DATABASE)
    return ""


def same_database(shown: str, url: str) -> bool:
    """Whether ``shown`` (a URL as a password file shows it) names ``url``'s database:
    on SQLite the same file, however the path is written; else the same URL."""
    try:
        one, other = sqlite_file(shown), sqlite_file(url)
    except StorageMisconfigured:
        return False
    if one is not None and other is not None:
        return os.path.abspath(one) == os.path.abspath(other)
    return shown == shown_url(url)


def _label(url: str) -> str:
    """``<name>-<8 hex digits>``: the database's name, for a person, and its URL's
    digest, so two databases of one name have files of their own."""
    try:
        path = sqlite_file(url)
    except StorageMisconfigured:
        path = None
    if path is not None:
        name = Path(path).stem
    else:
        parts = urlsplit(url)
        name = parts.path.strip("/") or parse_qs(parts.query).get("dbname", [""])[0]
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.")[:40] or "database"
    digest = hashlib.sha256(shown_url(url).encode()).hexdigest()[:8]
    return f"{name}-{digest}"


class UnknownEmail(Exception):
    pass


class NewPassword(NamedTuple):
    email: str  # the account's, as stored
    password: str
    removed: Path | None  # the first admin's password file, which held the old one


def reset_password(store: Store, config: Config, email: str, now: float) -> NewPassword:
    """Give the account of ``email`` (any case) a new random password and end every
    token and session of it (API keys stay, as after a password change); the first
    admin's password file of this database goes if it held the account's old one.
    Raises ``UnknownEmail``."""
    password = secrets.token_urlsafe(18)
    digest = generate_password_hash(password, config.password_hash)
    user = store.set_password(email, digest, now)
    if user is None:
        raise UnknownEmail(email)
    path = admin_password_file(config)
    named = database_named(path)
    if named and same_database(named, config.database_url):
        if path.read_text(encoding="utf-8").splitlines()[0] == user["email"]:
            path.unlink()
            return NewPassword(user["email"], password, path)
    return NewPassword(user["email"], password, None)
