"""The tests' PostgreSQL: the server in ``REFAPI_TEST_DATABASE_URL``, a schema a test.

``make test`` starts the machine's cluster when it is stopped (docs/development.md,
"PostgreSQL"). A test on PostgreSQL gets a schema of its own, named in its URL's
``search_path`` (libpq's ``options``), so the store under test migrates and seeds
it as it would a new database, and dropping it leaves the server as it was.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from urllib.parse import quote

import psycopg

from tests.conftest import skip_or_fail

SERVER_URL = os.environ.get(
    "REFAPI_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
_reachable: bool | None = None


def server_url() -> str:
    """The tests' server once it answered; else a skip (a failure in CI)."""
    global _reachable
    if _reachable is None:
        try:
            with psycopg.connect(SERVER_URL, connect_timeout=3) as conn:
                conn.execute("SELECT 1")
            _reachable = True
        except psycopg.OperationalError as exc:
            _reachable = False
            reason = f"PostgreSQL not reachable at {SERVER_URL}: {exc}".strip()
            skip_or_fail(reason)
    if not _reachable:
        skip_or_fail(f"PostgreSQL not reachable at {SERVER_URL}")
    return SERVER_URL


def in_schema(url: str, schema: str) -> str:
    """``url`` with every connection's ``search_path`` set to ``schema``."""
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}options={quote(f'-c search_path={schema}')}"


@contextlib.contextmanager
def fresh_schema(prefix: str = "t") -> Iterator[str]:
    """The URL of a new, empty schema on the tests' server, dropped afterwards
    (with whatever the test left in it)."""
    url = server_url()
    schema = f"{prefix}_{secrets.token_hex(6)}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield in_schema(url, schema)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
