"""Browser fixtures: Debian's Chromium, driven by Playwright, against a real gunicorn.

Playwright never downloads a browser here: it launches ``/usr/bin/chromium``, which
``make system-tools`` installs (never ``make test``). Without it these tests skip,
naming that target, and fail under ``REFAPI_REQUIRE_SERVICES=1`` (as in CI).

Every wait is bounded (``TIMEOUT_MS``). The server is mounted at ``/prod``, as a
gateway would map it, so each test also shows the UI working under a mount point.
Chromium starts once per worker process; the server is one per module (per worker
process), each test in a browser context of its own, unless the test is marked
``fresh_server`` (tests/e2e/conftest.py says when).
Screenshots go to ``test-output/screenshots/`` (git-ignored), one per screen.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from playwright.sync_api import (
    Browser,
    BrowserContext,
    ConsoleMessage,
    Page,
    expect,
    sync_playwright,
)

from tests.conftest import needs_system_tool
from tests.e2e.conftest import (  # noqa: F401  (the real server)
    gunicorn,
    pool,
    shared,
    shared_servers,
)
from tests.e2e.harness import ROOT, GunicornServer

CHROMIUM = Path("/usr/bin/chromium")
TIMEOUT_MS = 5_000
# Swagger UI draws the whole document, then an operation opened, in one go on the
# page's one thread, and its OpenAPI 3.1 resolver (ApiDOM) is most of that: /docs
# takes 3.5-6 s to its first operation on a quiet 2-core machine (a CPU profile:
# ApiDOM's visitors and clones on top), so under a full suite, six workers on two
# cores, a draw took over 10 s (CI, stop 43). A draw gets six quiet draws' time.
DRAW_MS = 6 * TIMEOUT_MS
MOUNT = "/prod"
SCREENSHOTS = ROOT / "test-output" / "screenshots"

expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    chromium = needs_system_tool(CHROMIUM, "Debian's chromium")
    with sync_playwright() as playwright:
        # --no-sandbox: Chromium's sandbox refuses to start as root, as CI runs.
        launched = playwright.chromium.launch(
            executable_path=str(chromium), args=["--no-sandbox"], timeout=30_000
        )
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def server_env() -> dict[str, str]:
    """What a module's servers add to their environment (a module may override)."""
    return {}


@pytest.fixture(scope="module")
def shared_server(
    tmp_path_factory,
    shared_servers,  # noqa: F811
    server_env,
) -> Iterator[GunicornServer]:
    """The app under ``/prod``, two workers, for the tests of this module."""
    yield from shared(
        tmp_path_factory, shared_servers, workers=2,
        env={"SCRIPT_NAME": MOUNT, **server_env}, health=f"{MOUNT}/healthz",
    )  # fmt: skip


@pytest.fixture
def server(request, gunicorn, server_env) -> GunicornServer:  # noqa: F811
    """The app under ``/prod``, two workers: the UI's calls land on either. The
    module's ``shared_server``, or, for a test marked ``fresh_server``, its own."""
    if request.node.get_closest_marker("fresh_server"):
        return gunicorn(
            workers=2, env={"SCRIPT_NAME": MOUNT, **server_env},
            health=f"{MOUNT}/healthz",
        )  # fmt: skip
    return request.getfixturevalue("shared_server")


@dataclass
class Tab:
    """A page of a fresh browser profile, and what went wrong in it: uncaught
    script errors and anything the Content-Security-Policy refused."""

    page: Page
    server: GunicornServer
    shots: Path
    problems: list[str] = field(default_factory=list)

    def open_ui(self, fragment: str = "") -> None:
        self.page.goto(self.server.url(f"{MOUNT}/ui/{fragment}"))

    def screenshot(self, name: str) -> None:
        # A whole long guide is many screens to paint: with four Chromiums on two
        # cores it can take over TIMEOUT_MS. Still bounded; nothing is timed here.
        self.page.screenshot(
            path=self.shots / f"{name}.png", full_page=True, timeout=4 * TIMEOUT_MS
        )

    def log_in(self, email: str, password: str) -> None:
        self.open_ui("#/login")
        self.page.get_by_label("Email").fill(email)
        self.page.get_by_label("Password").fill(password)
        self.page.get_by_role("button", name="Log in").click()
        expect(self.page.locator("#who")).to_contain_text(f"Logged in as {email}")

    def call(self, method: str, path: str, headers: dict | None = None) -> dict:
        """``fetch`` from the page, with its cookie: ``{"status", "body"}``."""
        return self.page.evaluate(
            """async ([method, url, headers]) => {
                const response = await fetch(url, {
                    method, headers, credentials: "same-origin" });
                const text = await response.text();
                return { status: response.status, body: text && JSON.parse(text) };
            }""",
            [method, MOUNT + path, headers or {}],
        )


def open_tab(
    browser: Browser, server: GunicornServer, name: str, bypass_csp: bool = False
) -> tuple[BrowserContext, Tab]:
    """A page in a browser context of its own: a fresh profile, bounded waits."""
    context = browser.new_context(bypass_csp=bypass_csp)
    context.set_default_timeout(TIMEOUT_MS)
    context.set_default_navigation_timeout(2 * TIMEOUT_MS)
    shots = SCREENSHOTS / name
    shots.mkdir(parents=True, exist_ok=True)
    opened = Tab(context.new_page(), server, shots)

    def console(message: ConsoleMessage) -> None:
        if "Content Security Policy" in message.text:
            opened.problems.append(message.text)

    opened.page.on("console", console)
    opened.page.on("pageerror", lambda error: opened.problems.append(str(error)))
    return context, opened


@pytest.fixture
def tab(browser: Browser, server: GunicornServer, request) -> Iterator[Tab]:
    context, opened = open_tab(browser, server, request.node.name)
    yield opened
    context.close()


@dataclass
class SecondOrigin:
    """A tiny web server on another loopback port: another origin than the API's."""

    base_url: str
    pages: dict[str, tuple[str, str]]  # path -> (content type, text)


@pytest.fixture
def second_origin() -> Iterator[SecondOrigin]:
    pages: dict[str, tuple[str, str]] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = pages.get(self.path.split("?")[0])
            body = (found[1] if found else json.dumps({"missing": self.path})).encode()
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", found[0] if found else "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass  # quiet: the test reads the API's log, not this one's

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield SecondOrigin(f"http://127.0.0.1:{httpd.server_address[1]}", pages)
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)


Register = Callable[..., dict]


@pytest.fixture
def register(pool, server) -> Register:  # noqa: F811
    """Register a user through the API (as the admin); the user's record."""

    def make(email: str, password: str = "password-1", **fields) -> dict:
        body = json.dumps({"email": email, "password": password, **fields})
        response = pool.request(
            "POST", server.url(f"{MOUNT}/api/users"), body=body,
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        assert response.status == 201, response.data
        return response.json()

    return make
