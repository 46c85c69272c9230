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

from tests.e2e.harness import GunicornServer, PortTaken, http_pool, launch

PORT_ATTEMPTS = 3


@pytest.fixture
def gunicorn(tmp_path: Path) -> Iterator[Callable[..., GunicornServer]]:
    """A factory: ``gunicorn(workers=4, db_path=None, env=None, ready="healthz",
    extra_args=(), wrapper=(), app="refapi:create_app()", health="/healthz")``, the
    extra arguments going on gunicorn's command line, the wrapper before it.

    ``ready="healthz"`` returns once ``/healthz`` answers 200 and every worker has
    been forked; ``ready="listening"`` as soon as the master accepts connections,
    before any worker has touched the database.
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
    ) -> GunicornServer:
        for _ in range(PORT_ATTEMPTS):
            try:
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
                )
            except PortTaken:
                continue
            started.append(server)
            return server
        pytest.fail(f"no free port after {PORT_ATTEMPTS} attempts")

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def server(gunicorn) -> GunicornServer:
    """Four workers on a fresh database, ready."""
    return gunicorn()


@pytest.fixture
def pool() -> Iterator[urllib3.PoolManager]:
    manager = http_pool()
    yield manager
    manager.clear()
