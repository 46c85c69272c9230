"""The benchmark's PostgreSQL: a schema a server, made and filled by refapi's store.

Each benchmarked server on PostgreSQL gets a schema of its own on one server (the
SQLite servers each get a copy of one file), named in its URL's ``search_path``
(libpq's ``options``), so refapi's migrations and seed fill it as they would a new
database; every schema is dropped at the end, with what the run wrote in it.

    BENCH_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres   (the default)
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from urllib.parse import quote

import psycopg
from bench_db import ARTICLES, DEEP_ID

from refapi.storage import open_store
from refapi.web.pagination import encode_cursor

SERVER_URL = os.environ.get(
    "BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


def unreachable() -> str | None:
    """Why the server cannot be used, or None when it answers."""
    try:
        with psycopg.connect(SERVER_URL, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        reason = " ".join(str(exc).split())  # libpq's message spans lines
        return f"PostgreSQL not reachable at {SERVER_URL}: {reason}"
    return None


def in_schema(schema: str) -> str:
    """The server's URL with every connection's ``search_path`` set to ``schema``."""
    joiner = "&" if "?" in SERVER_URL else "?"
    return f"{SERVER_URL}{joiner}options={quote(f'-c search_path={schema}')}"


@contextlib.contextmanager
def schemas(count: int) -> Iterator[list[str]]:
    """``count`` new, empty schemas' URLs, each dropped afterwards."""
    names = [f"bench_{secrets.token_hex(6)}" for _ in range(count)]
    if not names:
        yield []
        return
    with psycopg.connect(SERVER_URL, autocommit=True) as conn:
        for name in names:
            conn.execute(f"CREATE SCHEMA {name}")
    try:
        yield [in_schema(name) for name in names]
    finally:
        with psycopg.connect(SERVER_URL, autocommit=True) as conn:
            for name in names:
                conn.execute(f"DROP SCHEMA {name} CASCADE")


def prepare(url: str) -> str:
    """Migrate and seed the schema of ``url``, as ``bench_db.prepare`` does a file,
    and return refapi's cursor for the page after item ``DEEP_ID``."""
    store = open_store(url)
    try:
        for n in range(ARTICLES):
            store.create_article(f"article {n}", ["bench"], 1_795_000_000.0)
        return encode_cursor(store.secret_key(), "items", DEEP_ID, store.reset_epoch())
    finally:
        store.close()
