"""End-to-end fixtures: a real gunicorn on loopback, started and stopped by the test.

``gunicorn(...)`` starts a server (see ``harness.launch``) and returns it once ready;
every server a test started is stopped at teardown (SIGTERM, then SIGKILL to its
whole process group if it overstays).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import urllib3

from tests.e2e.harness import GunicornServer, http_pool, launch


@pytest.fixture
def gunicorn(tmp_path: Path) -> Iterator[Callable[..., GunicornServer]]:
    """A factory: ``gunicorn(workers=4, db_path=None, env=None, ready="healthz",
    extra_args=(), wrapper=(), app="refapi:create_app()", health="/healthz",
    database_url=None)``, the extra arguments going on gunicorn's command line, the
    wrapper before it; ``database_url`` serves a PostgreSQL database instead of the
    SQLite file.

    ``ready="healthz"`` returns once every worker has loaded the app and
    ``/healthz`` answers 200; ``ready="booted"`` once every worker has loaded the
    app, whatever health says; ``ready="listening"`` as soon as the master accepts
    connections, before any worker has touched the database.
    """
    started: list[GunicornServer] = []
    counter = itertools.count(1)

    def start(
        *,
        workers: int = 4,
        db_path: Path | None = None,
        env: dict[str, str] | None = None,
        ready: str = "healthz",
        extra_args: tuple[str, ...] = (),
        wrapper: tuple[str, ...] = (),
        app: str = "refapi:create_app()",
        health: str = "/healthz",
        database_url: str | None = None,
    ) -> GunicornServer:
        server = launch(
            tmp_path / f"gunicorn-{next(counter)}",
            workers=workers,
            db_path=db_path or tmp_path / "refapi.db",
            env=env or {},
            ready=ready,
            extra_args=extra_args,
            wrapper=wrapper,
            app=app,
            health=health,
            database_url=database_url,
        )
        started.append(server)
        return server

    start.started = started  # type: ignore[attr-defined]
    yield start
    for server in started:
        server.stop()


@pytest.fixture
def server(gunicorn) -> GunicornServer:
    """Four workers on a fresh database, ready."""
    return gunicorn()


class AdminPool(urllib3.PoolManager):
    """A pool whose requests to a server this test started carry its admin's
    Bearer token, unless the request names its own ``Authorization``."""

    def __init__(self, servers: list[GunicornServer], **kwargs) -> None:
        super().__init__(**kwargs)
        self.servers = servers

    def request(self, method, url, body=None, fields=None, headers=None, **kw):  # type: ignore[override]
        port = urllib3.util.parse_url(url).port
        server = next((s for s in self.servers if s.port == port), None)
        names = {name.lower() for name in headers or ()}
        if server is not None and "authorization" not in names:
            headers = {**(headers or {}), "Authorization": server.authorization}
        return super().request(method, url, body, fields, headers, **kw)


@pytest.fixture
def pool(gunicorn) -> Iterator[urllib3.PoolManager]:
    """Requests as the admin of the servers this test started (see ``AdminPool``)."""
    manager = AdminPool(gunicorn.started, **http_pool().connection_pool_kw)
    yield manager
    manager.clear()


@pytest.fixture
def anon_pool() -> Iterator[urllib3.PoolManager]:
    manager = http_pool()
    yield manager
    manager.clear()
