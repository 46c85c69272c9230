"""Shared fixtures: a fresh SQLite-backed app per test, driven through WebTest.

WebTest also runs Werkzeug-independent WSGI lint checks on every call, so a
header or status the stack gets wrong fails here before a real server sees it.

A test that needs an outside service or tool calls ``skip_or_fail`` when it is
missing: a skip with the reason on a laptop. With ``REFAPI_REQUIRE_SERVICES=1``
(``.ci/run`` sets it) every test must run: ``skip_or_fail`` fails, and a run in
which anything was skipped all the same (a ``skipif``, an ``importorskip``) fails.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

import pytest
import webtest

from refapi import create_app
from refapi.config import Config
from refapi.storage import open_store
from refapi.storage.sqlite import SqliteStore

REQUIRE_SERVICES = os.environ.get("REFAPI_REQUIRE_SERVICES") == "1"


def skip_or_fail(reason: str) -> NoReturn:
    """Skip on a laptop without the service; fail in CI, where it must be there."""
    if REQUIRE_SERVICES:
        pytest.fail(f"required service missing (REFAPI_REQUIRE_SERVICES=1): {reason}")
    pytest.skip(reason)


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


@pytest.fixture
def database_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path}/refapi.db"


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
    # Without the app's own token, which may have expired (and would be a 401).
    no_token = {"HTTP_AUTHORIZATION": ""}
    token = app.post_json("/api/login", body, extra_environ=no_token).json["token"]
    app.cookiejar.clear()  # the session cookie too would speak for the user
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


@pytest.fixture
def store(config: Config):
    store = open_store(config.database_url)
    yield store
    store.close()


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
def make_app(store, clock) -> Callable[..., webtest.TestApp]:
    """Build a TestApp over the test's store with any config fields overridden."""

    def make(anonymous: bool = False, **overrides) -> webtest.TestApp:
        """Unless ``anonymous``, every request sends the admin's Bearer token."""
        config = Config(
            database_url=store.path,
            secret_key=b"test-secret",
            **{**TEST_AUTH, **overrides},
        )
        app = webtest.TestApp(create_app(config, store=store, clock=clock))
        return app if anonymous else as_admin(app)

    return make


@pytest.fixture
def app(make_app) -> webtest.TestApp:
    """The app as its admin: every request carries the admin's Bearer token."""
    return make_app()


@pytest.fixture
def anon(make_app) -> webtest.TestApp:
    """The same app with no credential."""
    return make_app(anonymous=True)
