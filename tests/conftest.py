"""Shared fixtures: a fresh app per test on a fresh database, driven through WebTest.

A test reaches its database through ``database_url`` (or ``database_urls``, for
more than one) and reads and writes it through the API or the storage interface,
so it could run on either backend. It runs on SQLite, once; a test whose outcome
depends on the backend (SQL behaviour: transactions, concurrency, the buckets,
faults, migrations) is marked ``every_backend`` and runs on both, as two tests,
``[sqlite]`` and ``[postgres]``, the second marked ``postgres``
(docs/development.md, "Which backends a test runs on"). The ``backend`` fixture
says which a test has. ``REFAPI_TEST_ALL_ON_POSTGRES=1`` runs every test that
reaches the database on both, but those marked ``sqlite_only`` (about SQLite
itself: its file, its bucket file).

On SQLite each test's database is a copy of one made once per session
(``seeded_databases``): migrated and seeded, and for a test that builds an app,
with the first admin made and logged in. A copy gets its own secret key when
opened and its own rate-limit buckets, as a new database does; so each test
starts from the seed without migrating, seeding and logging in again. On
PostgreSQL each test gets a schema of its own put into the same states
(``seeded_schemas``, tests/seeded_schemas.py), for the same saving.

The suite runs in parallel (pytest-xdist, ``make test``): every test has its own
folder (``tmp_path``), SQLite files, PostgreSQL schema and ports, so none depends
on another's side effects or on the order they run in.

WebTest also runs Werkzeug-independent WSGI lint checks on every call, so a
header or status the stack gets wrong fails here before a real server sees it.

A test that needs an outside service or tool calls ``skip_or_fail`` when it is
missing: a skip with the reason on a laptop (for a program of a system package,
``needs_system_tool``, whose reason names ``make system-tools``). With
``REFAPI_REQUIRE_SERVICES=1`` (``.ci/run`` sets it) every test must run:
``skip_or_fail`` fails, and a run in which anything was skipped all the same (a
``skipif``, an ``importorskip``) fails.

And what the run needs of its tools: bytecode kept where the environment forbids
it (``keep_bytecode``), and pytest-xdist's groups put where its scheduler reads
them (``GroupsInNodeIds``; docs/development.md, "Running the tests").
"""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NoReturn

import pytest
import webtest
from hypothesis import settings as hypothesis_settings

from refapi import create_app
from refapi.config import Config
from refapi.handlers.payments import new_payment_id
from refapi.storage import Store
from refapi.storage.sqlite import SqliteStore
from refapi.web.auth import secret_hash

REQUIRE_SERVICES = os.environ.get("REFAPI_REQUIRE_SERVICES") == "1"
# Every test that reaches the database on PostgreSQL too, not only those marked
# every_backend: for a change to the SQL the marked tests may not reach.
ALL_ON_POSTGRES = os.environ.get("REFAPI_TEST_ALL_ON_POSTGRES") == "1"
# The fixtures through which a test reaches the backend under test.
DATABASE_FIXTURES = frozenset({"database_url", "database_urls"})


# The suite is deterministic: a property test draws the same inputs every run
# (derandomized, from the test's name) and keeps no database of past examples.
# `--hypothesis-profile=explore` draws new ones, for a deeper look by hand
# (docs/development.md, "Tests").
hypothesis_settings.register_profile("suite", derandomize=True, database=None)
hypothesis_settings.register_profile("explore", derandomize=False, database=None)
hypothesis_settings.load_profile("suite")


def skip_or_fail(reason: str) -> NoReturn:
    """Skip on a laptop without the service; fail in CI, where it must be there."""
    if REQUIRE_SERVICES:
        pytest.fail(f"required service missing (REFAPI_REQUIRE_SERVICES=1): {reason}")
    pytest.skip(reason)


def without_system_tool(what: str) -> NoReturn:
    """``skip_or_fail`` for what ``make system-tools`` installs or starts (Debian's
    packages, which ``make test`` never installs): the reason names the target."""
    skip_or_fail(f"{what} missing: run `make system-tools`")


def needs_system_tool(path: str | Path, what: str) -> Path:
    """``path``, a program of a package ``make system-tools`` installs, if it is
    there; else a skip naming the target (a failure under REFAPI_REQUIRE_SERVICES=1)."""
    if not os.access(path, os.X_OK):
        without_system_tool(f"{what} ({path})")
    return Path(path)


def keep_bytecode() -> None:
    """Where Python is told to write no bytecode (PYTHONDONTWRITEBYTECODE, as some
    containers set it), the run writes it all the same, in the usual git-ignored
    ``__pycache__`` folders: else each of a run's Python processes (every xdist
    worker, every gunicorn worker, every pytest a test runs) compiles the modules
    it imports again, and pytest rewrites the asserts of every test module again,
    the same work each time (docs/development.md, "Running the tests"). Out of the
    environment, so the processes the run starts write it too."""
    if sys.dont_write_bytecode:
        sys.dont_write_bytecode = False
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


class GroupsInNodeIds:
    """pytest-xdist's ``loadgroup`` tells the scheduler a test's group by a suffix
    of its node id (``tests/e2e/test_http.py::test_x@e2e.test_http``), which its
    3.8 writes where pytest 9.2 no longer reads it (pytest-dev/pytest-xdist#1386):
    each test of a group then went to whichever worker was free, each of those
    starting the module's server again. Where the suffix is missing once xdist
    has tried, this writes it (a worker's hook; the scheduler reads the ids)."""

    @pytest.hookimpl(trylast=True)  # after pytest-xdist's own
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        if not config.getoption("loadgroup", False):  # set in xdist's workers
            return
        for item in items:
            marks = item.iter_markers("xdist_group")
            names = {
                str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                for m in marks
            }
            suffix = "@" + "_".join(sorted(names))
            if names and not item.nodeid.endswith(suffix):
                from _pytest.nodeid import NodeId  # pytest 9.2's structured ids

                item._id = NodeId.parse(item.nodeid + suffix)  # type: ignore[attr-defined]


def pytest_configure(config: pytest.Config) -> None:
    keep_bytecode()
    config.pluginmanager.register(GroupsInNodeIds(), "groups-in-node-ids")
    if "REFAPI_TEST_BACKEND" in os.environ:
        # The suite once ran twice, a backend a run; a script still setting the
        # variable would now run both backends' tests where it meant one.
        raise pytest.UsageError(
            "REFAPI_TEST_BACKEND is gone: a run covers both backends; "
            "`-m postgres` selects the tests on PostgreSQL, "
            "REFAPI_TEST_ALL_ON_POSTGRES=1 puts every database test there too "
            '(docs/development.md, "Which backends a test runs on")'
        )


def pytest_report_header(config: pytest.Config) -> str:
    which = "every test on the database" if ALL_ON_POSTGRES else "every_backend"
    return f"backends: sqlite; postgres too for {which}"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test on the database runs on SQLite; one marked ``every_backend`` (or
    any, with REFAPI_TEST_ALL_ON_POSTGRES=1) on PostgreSQL too, but never one
    marked ``sqlite_only``. The PostgreSQL case is marked ``postgres``."""
    if not DATABASE_FIXTURES & set(metafunc.fixturenames):
        return
    definition = metafunc.definition
    if definition.get_closest_marker("sqlite_only") is not None:
        return
    if ALL_ON_POSTGRES or definition.get_closest_marker("every_backend"):
        postgres = pytest.param("postgres", marks=pytest.mark.postgres)
        metafunc.parametrize("backend", ["sqlite", postgres], indirect=True)


# What a test costs, by its marks: the costliest are handed out first, so they start
# at once on separate workers instead of one of them ending the run alone.
COSTLIEST_FIRST = ("slow", "contract", "browser", "e2e")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The costliest first; and the tests of an end-to-end or browser module in one
    group, which pytest-xdist's ``loadgroup`` (pyproject.toml) hands to one worker:
    they share the module's server (tests/e2e/conftest.py), started once."""

    def cost(item: pytest.Item) -> int:
        marked = (item.get_closest_marker(name) for name in COSTLIEST_FIRST)
        return next((n for n, mark in enumerate(marked) if mark), len(COSTLIEST_FIRST))

    items.sort(key=cost)  # stable: in each class, the order of the files
    for item in items:
        if item.get_closest_marker("e2e") or item.get_closest_marker("browser"):
            group = f"{item.path.parent.name}.{item.path.stem}"
            item.add_marker(pytest.mark.xdist_group(group))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """With REFAPI_REQUIRE_SERVICES=1 a run that skipped anything has failed."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if REQUIRE_SERVICES and skipped and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int, config) -> None:
    skipped = terminalreporter.stats.get("skipped", [])
    if REQUIRE_SERVICES and skipped:
        terminalreporter.write_line(
            f"REFAPI_REQUIRE_SERVICES=1: {len(skipped)} skipped, so the run fails",
            red=True,
        )


class FakeClock:
    """A clock the test moves by hand, so no test sleeps or patches time."""

    def __init__(self, start: float = 1_795_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


class PaymentIds:
    """The service's payment ids, each one it hands out kept: a payment can only be
    stored under one of them, so a test finds every payment made (through the API,
    by its id) without reading beneath the storage interface."""

    def __init__(self) -> None:
        self.given: list[str] = []

    def __call__(self, now: float) -> str:
        self.given.append(new_payment_id(now))
        return self.given[-1]


@pytest.fixture
def payment_ids() -> PaymentIds:
    return PaymentIds()


@pytest.fixture
def backend(request) -> str:
    """The backend the test's database is on: ``sqlite`` unless the test is
    parametrized by ``pytest_generate_tests`` onto ``postgres``."""
    return getattr(request, "param", "sqlite")


@pytest.fixture(scope="session")
def seeded_schemas():
    """PostgreSQL's schemas (tests/seeded_schemas.py) in the states of SQLite's
    ``seeded_databases``: ``"plain"``, and ``"admin"``, its admin logged in."""
    from tests.seeded_schemas import SeededSchemas  # psycopg: PostgreSQL runs only

    schemas = SeededSchemas()
    try:
        schemas.add_template("admin", _admin_logged_in)
        yield schemas
    finally:
        schemas.close()


def _template(request) -> str:
    """The seeded state a test starts from: with the admin logged in for a test that
    builds an app (``make_app``), plain for one of the store alone."""
    return "admin" if "make_app" in request.fixturenames else "plain"


def new_database(
    request, backend: str, folder: Path, name: str = "refapi", template="plain"
):
    """A context manager: the URL of a new database on the backend under test, as
    its store finds it at a first start. On SQLite a file ``name``.db in ``folder``,
    not there yet; on PostgreSQL a schema no other test uses while this one runs,
    in the ``template``'s seeded state (tests/seeded_schemas.py)."""
    if backend == "postgres":
        return request.getfixturevalue("seeded_schemas").schema(template)
    return contextlib.nullcontext(f"sqlite:///{folder}/{name}.db")


@pytest.fixture
def database_url(request, backend, tmp_path) -> Iterator[str]:
    """The test's database, new, on the test's ``backend``."""
    with new_database(request, backend, tmp_path, template=_template(request)) as url:
        yield url


@pytest.fixture
def database_urls(request, backend, tmp_path) -> Iterator[Callable[[str], str]]:
    """More databases for one test: each call, a new one (``name`` tells them apart
    on SQLite, where it names the file)."""
    with contextlib.ExitStack() as stack:
        yield lambda name: stack.enter_context(
            new_database(request, backend, tmp_path, name)
        )


# The first admin of every test app, a password hash cheap enough for a test suite
# (the service's default, scrypt, costs about 150 ms a hash), and buckets for
# logins and registrations that the tests, all from one address, never empty
# unless they mean to.
ADMIN = {"email": "admin@example.com", "password": "admin-password"}
TEST_AUTH = {
    "admin_email": ADMIN["email"],
    "admin_password": ADMIN["password"],
    "password_hash": "pbkdf2:sha256:1000",
    "auth_rate_limit": 100_000,
    "register_rate_limit": 100_000,
}


@pytest.fixture
def config(database_url: str) -> Config:
    return Config(database_url=database_url, secret_key=b"test-secret", **TEST_AUTH)


def as_admin(app: webtest.TestApp) -> webtest.TestApp:
    """``app``, every request of which now sends the first admin's Bearer token."""
    app.extra_environ = bearer(app, ADMIN["email"], ADMIN["password"])
    return app


def bearer(app: webtest.TestApp, email: str, password: str) -> dict[str, str]:
    """Log in through the API; the extra_environ that sends its Bearer token."""
    body = {"email": email, "password": password}
    # A client of its own: without the app's token, which may have expired (and
    # would be a 401), and without keeping the session cookie, which would speak
    # for the user on the app's later requests.
    environ = {k: v for k, v in app.extra_environ.items() if k != "HTTP_AUTHORIZATION"}
    login = webtest.TestApp(app.app, extra_environ=environ).post_json(
        "/api/login", body
    )
    return {"HTTP_AUTHORIZATION": f"Bearer {login.json['token']}"}


@dataclass(frozen=True)
class SeededDatabase:
    """A database as it stands after a fresh start, made once per session."""

    # SQLite's whole file, its -wal checkpointed into it, and emptied; empty on
    # PostgreSQL, where a template schema holds it (tests/seeded_schemas.py)
    image: bytes
    authorization: str | None  # ``Bearer <token>`` of its admin, if it has one
    logged_in_at: float  # the clock when that token was made
    token_ttl: int  # and for how long

    def copy_to(self, path: Path) -> None:
        """A new file at ``path`` with the image, of the mode the store gives one."""
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as file:
            file.write(self.image)


def _admin_logged_in(database_url: str, image: bytes = b"") -> SeededDatabase:
    """The admin of the migrated and seeded database at ``database_url`` made by the
    app (``create_app``, as ``make_app`` builds it) and logged in."""
    clock = FakeClock()
    config = Config(database_url=database_url, secret_key=b"test-secret", **TEST_AUTH)
    store = config.open_store()
    try:
        app = webtest.TestApp(create_app(config, store=store, clock=clock))
        login = bearer(app, ADMIN["email"], ADMIN["password"])
    finally:
        store.close()
    authorization = login["HTTP_AUTHORIZATION"]
    return SeededDatabase(image, authorization, clock(), config.token_ttl)


def _seeded_database(path: Path, with_admin: bool) -> SeededDatabase:
    """Migrate and seed a database at ``path``; with its admin made by the app and
    logged in, if ``with_admin``."""
    seeded = SeededDatabase(b"", None, FakeClock()(), 0)
    if with_admin:
        seeded = _admin_logged_in(f"sqlite:///{path}")
    else:
        SqliteStore(str(path)).close()  # opening migrates and seeds
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
        # The next open of each copy makes a new secret key, as a new database gets.
        conn.execute("DELETE FROM meta WHERE key = 'secret_key'")
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        assert busy == 0, "the seeded database is still in use"
    assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0
    return replace(seeded, image=path.read_bytes())


@pytest.fixture(scope="session")
def seeded_databases(tmp_path_factory) -> dict[str, SeededDatabase]:
    """``"plain"``: migrated and seeded; ``"admin"``: and its first admin logged in."""
    folder = tmp_path_factory.mktemp("seeded")
    return {
        name: _seeded_database(folder / name / "refapi.db", name == "admin")
        for name in ("plain", "admin")
    }


def _sqlite_path(database_url: str) -> Path | None:
    scheme, _, rest = database_url.partition("://")
    return Path(rest[1:]) if scheme == "sqlite" and rest.startswith("/") else None


@pytest.fixture
def seeded_copy(config: Config, backend: str, request) -> SeededDatabase | None:
    """What the test's database starts as, copied to its path: the seeded database
    with the admin for a test that builds an app (``make_app``), plain for one of
    the store alone. On PostgreSQL the test's schema is already in that state
    (``database_url``): the admin's login, for a test that builds an app.
    None when the test's database is not a new SQLite file (a file the test made,
    or another URL): then the store makes it as in production."""
    if backend == "postgres":
        admin = request.getfixturevalue("seeded_schemas").added["admin"]
        return admin if _template(request) == "admin" else None
    path = _sqlite_path(config.database_url)
    if path is None or path.exists():
        return None
    seeded = request.getfixturevalue("seeded_databases")[_template(request)]
    seeded.copy_to(path)
    return seeded


@pytest.fixture
def store(config: Config, seeded_copy):
    store = config.open_store()
    yield store
    store.close()


@pytest.fixture
def down_store(config: Config, backend: str, tmp_path) -> Iterator[Store]:
    """A store whose database cannot be reached, on the backend under test: on
    SQLite its folder is a plain file; on PostgreSQL its server's port refuses
    connections (a socket bound there, not listening)."""
    with contextlib.ExitStack() as stack:
        if backend == "postgres":
            refusing = stack.enter_context(socket.socket())
            refusing.bind(("127.0.0.1", 0))
            port = refusing.getsockname()[1]
            url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        else:
            (tmp_path / "blocker").write_text("not a folder")
            url = f"sqlite:///{tmp_path}/blocker/refapi.db"
        # A short wait for a connection: the wait is not what these tests are about.
        store = replace(config, database_url=url, db_pool_timeout=0.5).open_store()
        stack.callback(store.close)
        yield store


@pytest.fixture
def sqlite_store() -> Iterator[Callable[[Path], SqliteStore]]:
    """Open SQLite stores at the paths given; each is closed when the test ends."""
    opened: list[SqliteStore] = []

    def open_at(path: Path) -> SqliteStore:
        opened.append(SqliteStore(str(path)))
        return opened[-1]

    yield open_at
    for store in opened:
        store.close()


@pytest.fixture
def own_metrics_folder(monkeypatch, tmp_path_factory) -> Path:
    """A metrics folder of the test's own (``REFAPI_METRICS_DIR``), for the
    instances it makes. Otherwise a worker's instances share one folder for its
    life, with the figures of every process that inherited it, and the health gauge
    is the lowest of them: another test's storage outage read as this one's."""
    from refapi import metrics

    folder = tmp_path_factory.mktemp("metrics")
    monkeypatch.setenv(metrics.FOLDER, str(folder))
    return folder


@pytest.fixture
def make_app(
    config, store, clock, payment_ids, seeded_copy
) -> Callable[..., webtest.TestApp]:
    """Build a TestApp over the test's store with any config fields overridden."""
    seeded_token_unused = True  # each further app logs in: a token of its own

    def make(anonymous: bool = False, **overrides) -> webtest.TestApp:
        """Unless ``anonymous``, every request sends the admin's Bearer token."""
        configured = replace(config, **overrides)
        # The lab's delays move the test's clock: no test waits (docs/lab.md).
        app = webtest.TestApp(
            create_app(
                configured,
                store=store,
                clock=clock,
                new_id=payment_ids,
                sleep=clock.advance,
            )
        )
        if anonymous:
            return app
        nonlocal seeded_token_unused
        if seeded_token_unused and _token_as_if_logged_in_now(
            seeded_copy, store, configured, clock()
        ):
            seeded_token_unused = False
            app.extra_environ = {"HTTP_AUTHORIZATION": seeded_copy.authorization}
            return app
        return as_admin(app)

    return make


def _token_as_if_logged_in_now(
    seeded: SeededDatabase | None, store, config: Config, now: float
) -> bool:
    """Is the seeded database's admin token the one a login now would give: made at
    this time, for this long, for the admin this configuration makes, still live?"""
    if seeded is None or seeded.authorization is None or now != seeded.logged_in_at:
        return False
    if config.token_ttl != seeded.token_ttl:
        return False
    if any(getattr(config, name) != value for name, value in TEST_AUTH.items()):
        return False
    token = seeded.authorization.removeprefix("Bearer ")
    found = store.find_token("bearer", secret_hash(token), now)
    return found is not None and found["user"]["email"] == ADMIN["email"]


@pytest.fixture
def app(make_app) -> webtest.TestApp:
    """The app as its admin: every request carries the admin's Bearer token."""
    return make_app()


@pytest.fixture
def anon(make_app) -> webtest.TestApp:
    """The same app with no credential."""
    return make_app(anonymous=True)


@pytest.fixture
def article_app(app):
    """``app`` with one article (title ``A & B``, tags x and y) beside the seeded."""
    app.post_json("/v1/articles", {"title": "A & B", "tags": ["x", "y"]}, status=201)
    return app
