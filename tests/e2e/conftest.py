"""End-to-end fixtures: a real gunicorn on loopback, started and stopped by the test.

``gunicorn(...)`` starts a server (see ``harness.launch``) and returns it once ready;
every server a test started is stopped at teardown (SIGTERM, then SIGKILL to its
whole process group if it overstays).

``server`` is one server shared by the tests of a module (in each xdist worker
process), unless the test is marked ``fresh_server``: a test whose assertions need a
server nobody else has used (exact counts of records, ids from 1, the whole log)
marks itself so; one that kills, restarts or reconfigures a server calls
``gunicorn(...)`` (docs/development.md, "Tests").
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import urllib3

from tests.e2e.harness import SERVERS, GunicornServer, http_pool, launch

# Login failures count per client address for a minute, and every test calls from
# 127.0.0.1: on a shared server one test's wrong passwords would lock the next
# test's logins out (docs/authentication.md, "Login failures"). A test of that
# limit starts its own server.
SHARED_ENV = {"REFAPI_LOGIN_MAX_FAILURES": "1000000"}


@pytest.fixture
def gunicorn(tmp_path: Path) -> Iterator[Callable[..., GunicornServer]]:
    """A factory: ``gunicorn(workers=4, db_path=None, env=None, ready="healthz",
    extra_args=(), wrapper=(), app="refapi:create_app()", health="/healthz",
    database_url=None, server="gunicorn")``, the extra arguments going on gunicorn's
    command line, the wrapper before it; ``database_url`` serves a PostgreSQL
    database instead of the SQLite file; ``server="granian"`` serves on Granian
    (``refapi serve --server granian``: no extra arguments, settings in ``env``).

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
        server: str = "gunicorn",
    ) -> GunicornServer:
        started_server = launch(
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
            server=server,
        )
        started.append(started_server)
        return started_server

    start.started = started  # type: ignore[attr-defined]
    yield start
    for server in started:
        server.stop()


@pytest.fixture(params=SERVERS)
def server_name(request) -> str:
    """Each server a promise holds on (docs/operating.md, "Two servers"): a test
    that takes this runs once on gunicorn and once on Granian."""
    return request.param


@pytest.fixture(scope="module")
def shared_servers() -> list[GunicornServer]:
    """The servers the tests of this module share, for ``pool`` to find."""
    return []


def shared(
    tmp_path_factory: pytest.TempPathFactory,
    servers: list[GunicornServer],
    **options,
) -> Iterator[GunicornServer]:
    """A server for the tests of a module (``launch``'s ``options``, over
    ``SHARED_ENV``); once they are done, stopped and checked: it is still up with
    the workers it started with (no test killed one) and its logs hold no
    ``FAILURE_MARKERS``, so a failure a test did not look for is still reported."""
    base = tmp_path_factory.mktemp("shared")
    options["env"] = {**SHARED_ENV, **options.get("env", {})}
    server = launch(
        base / "gunicorn", db_path=base / "refapi.db", ready="healthz",
        extra_args=(), **options,
    )  # fmt: skip
    servers.append(server)
    yield server
    servers.remove(server)
    alive = server.alive()
    server.stop()
    assert alive, f"the shared server exited:\n{server.log()[-3000:]}"
    assert len(server.worker_pids()) == server.workers, "a worker was replaced"
    assert server.log_failures() == []


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory, shared_servers) -> Iterator[GunicornServer]:
    """Four workers on a fresh database, for the tests of this module."""
    yield from shared(tmp_path_factory, shared_servers, workers=4)


@pytest.fixture
def server(request, gunicorn) -> GunicornServer:
    """Four workers, ready: the module's ``shared_server``, or, for a test marked
    ``fresh_server``, its own on a fresh database."""
    if request.node.get_closest_marker("fresh_server"):
        return gunicorn()
    return request.getfixturevalue("shared_server")


class AdminPool(urllib3.PoolManager):
    """A pool whose requests to a server this test started (or shares) carry its
    admin's Bearer token, unless the request names its own ``Authorization``."""

    def __init__(self, *servers: list[GunicornServer], **kwargs) -> None:
        super().__init__(**kwargs)
        self.servers = servers  # lists that grow as servers start

    def request(self, method, url, body=None, fields=None, headers=None, **kw):  # type: ignore[override]
        port = urllib3.util.parse_url(url).port
        known = itertools.chain.from_iterable(self.servers)
        server = next((s for s in known if s.port == port), None)
        names = {name.lower() for name in headers or ()}
        if server is not None and "authorization" not in names:
            headers = {**(headers or {}), "Authorization": server.authorization}
        return super().request(method, url, body, fields, headers, **kw)


@pytest.fixture
def pool(gunicorn, shared_servers) -> Iterator[urllib3.PoolManager]:
    """Requests as the admin of the servers this test started or shares (see
    ``AdminPool``)."""
    kwargs = http_pool().connection_pool_kw
    manager = AdminPool(gunicorn.started, shared_servers, **kwargs)
    yield manager
    manager.clear()


@pytest.fixture
def anon_pool() -> Iterator[urllib3.PoolManager]:
    manager = http_pool()
    yield manager
    manager.clear()
