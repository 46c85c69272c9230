"""Pluggable storage: ``open_store(url)`` picks the backend from ``DATABASE_URL``.

It imports nothing of the rest of the package: no HTTP (web, middleware,
handlers), no configuration object, no command line; what a backend needs comes
in as plain arguments."""

from __future__ import annotations

from .base import StorageMisconfigured, StorageUnavailable, Store

__all__ = [
    "Store", "StorageMisconfigured", "StorageUnavailable", "check_database",
    "mark_served", "open_store", "sqlite_file",
]  # fmt: skip
POSTGRES = ("postgresql", "postgres")


def _no_driver() -> str:
    """What to run to add PostgreSQL's driver to this environment: to a checkout's
    editable install (``make run``'s), the extra added in place, so the install stays
    editable; to an installed wheel, the extra added to it (pip keeps refapi as it
    is and fetches only what the extra adds)."""
    import contextlib  # here: only a start that cannot work needs them
    import json
    import sys
    from importlib.metadata import distributions
    from pathlib import Path
    from urllib.parse import unquote, urlsplit

    pip = Path(sys.executable).with_name("pip")
    found = {}  # how pip installed the first refapi on the path (PEP 610)
    for installed in distributions(name="refapi"):  # a checkout's egg-info has none
        with contextlib.suppress(ValueError):
            found = json.loads(installed.read_text("direct_url.json") or "{}")
        if found:
            break
    if found.get("dir_info", {}).get("editable") and found["url"].startswith("file:"):
        checkout = unquote(urlsplit(found["url"]).path)
        command = (
            f"{pip} install -e '{checkout}[postgres]'"
            " --config-settings editable_mode=strict"
        )
    else:
        command = f"{pip} install 'refapi[postgres]'"
    return (
        "DATABASE_URL names PostgreSQL, whose driver is not installed:"
        f" {command} (docs/several-hosts.md)"
    )


def open_store(
    url: str,
    *,
    pool_max: int = 2,
    pool_timeout: float = 5.0,
    statement_timeout: float = 5.0,
) -> Store:
    """A store for ``sqlite:///relative/path``, ``sqlite:////absolute/path``, or
    ``postgresql://...`` (any libpq URL; ``postgres://`` too). The pool settings
    are PostgreSQL's (docs/configuration.md, "PostgreSQL"); SQLite has no pool."""
    path = sqlite_file(url)
    if path is not None:
        from .sqlite import SqliteStore

        return SqliteStore(path)
    try:
        from .postgres import PostgresStore
    except ImportError as exc:  # the optional extra is not installed
        raise StorageMisconfigured(_no_driver()) from exc
    return PostgresStore(
        url,
        pool_max=pool_max,
        pool_timeout=pool_timeout,
        statement_timeout=statement_timeout,
    )


def mark_served(url: str) -> None:
    """In a server's master, before its workers: what lets a worker respawned
    later tell that its database was deleted under the service, so it makes
    nothing in its place (``sqlite/locks.py``, "A respawned worker knows it is
    late"). PostgreSQL's database is the server's to keep: nothing to mark."""
    path = sqlite_file(url)
    if path is not None:
        from .sqlite.locks import mark_served as mark_file

        mark_file(path)


def sqlite_file(url: str) -> str | None:
    """The path of the SQLite file ``url`` names; None for PostgreSQL."""
    scheme, _, rest = _scheme(url)
    if scheme != "sqlite":
        return None
    return rest[1:] if rest.startswith("/") else rest


def check_database(url: str, *, timeout: float = 5.0) -> None:
    """Raise ``StorageMisconfigured`` unless the backend ``url`` names would take
    it: on PostgreSQL, one connection, waited for ``timeout`` seconds. A server
    that cannot be reached passes: that is an outage, not a setting."""
    scheme, _, _ = _scheme(url)
    path = sqlite_file(url)
    if path is not None:
        _check_sqlite_file(url, path)
    if scheme in POSTGRES:
        try:
            from .postgres.connections import check_login
        except ImportError as exc:
            raise StorageMisconfigured(_no_driver()) from exc
        check_login(url, timeout)


SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every database


def _check_sqlite_file(url: str, path: str) -> None:
    """Raise ``StorageMisconfigured`` when ``path`` holds a file that is not a SQLite
    database: the service would answer 503 for ever, and make its lock and bucket
    files beside it (``/etc/passwd.lock``). An empty file is a database not yet
    made; one that cannot be read is an outage, served 503 until it can."""
    try:
        with open(path, "rb") as file:
            head = file.read(len(SQLITE_HEADER))
    except OSError:
        return  # missing (made at start), a folder (said elsewhere), unreadable
    if head and head != SQLITE_HEADER:
        raise StorageMisconfigured(
            f"DATABASE_URL {url} names {path}, which is not a SQLite database: name"
            " another file, or move this one away"
        )


def _scheme(url: str) -> tuple[str, str, str]:
    """``url`` as (scheme, "://", the rest), for a scheme a backend reads."""
    parts = url.partition("://")
    if not parts[1] and url.startswith("sqlite:"):
        raise StorageMisconfigured(_sqlite_form(url))
    if parts[0] == "sqlite" and parts[2] in ("", "/"):
        raise StorageMisconfigured(
            f"DATABASE_URL {url} names no file: write sqlite:///data/refapi.db for"
            " data/refapi.db in the working folder, or sqlite:////srv/refapi.db for"
            " an absolute path"
        )
    if parts[0] not in ("sqlite", *POSTGRES):
        what = f"an unknown scheme, {parts[0]!r}" if parts[1] else "no scheme"
        raise StorageMisconfigured(
            f"DATABASE_URL has {what}: use sqlite:///path/to/refapi.db or"
            " postgresql://user@host:5432/dbname"
        )
    return parts


def _sqlite_form(url: str) -> str:
    """Why ``url`` (``sqlite:`` without ``//``) is refused, and what to write."""
    path = url.removeprefix("sqlite:")
    relative = path.lstrip("/")
    shown = f"DATABASE_URL {url} is not a SQLite URL: write"
    if path.startswith("/"):
        return (
            f"{shown} sqlite:///{path} for the absolute path {path} (four slashes),"
            f" or sqlite:///{relative} for {relative} in the working folder"
        )
    return f"{shown} sqlite:///{path} for {path} in the working folder"
