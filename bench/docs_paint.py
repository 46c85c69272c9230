"""How soon /docs shows the API: Swagger UI's first paint and its operations drawn.

refapi is started as shipped (``refapi serve``, two workers, a fresh data folder)
and Debian's Chromium, headless through Playwright, opens ``/docs`` in a fresh
browser context each run (no cache): the page, Swagger UI's bundle, then the
OpenAPI document, which Swagger UI parses, resolves and draws. Each run gives

- ``first paint`` and ``first contentful paint``: the browser's own paint timings
  (the Paint Timing API), from the navigation's start;
- ``document's title drawn``: when the document's title is on the page, the first
  thing Swagger UI draws from it;
- ``operations drawn``: when every operation of the document has its row
  (``.opblock``) in the page, the moment a reader can start looking for one;
- the document's size as served, and how long it took to arrive.

The figures are the median and the fastest of ``BENCH_RUNS`` runs (default 7), after
one run that is not counted (the server's first answers). A figure, never a test:
docs/development.md, "The OpenAPI document's size", gives the last ones. Run with
``make bench-docs`` (it needs Chromium at /usr/bin/chromium: ``apt-get install
chromium``, as the browser tests do).
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
RUNS = int(os.environ.get("BENCH_RUNS", "7"))
TIMEOUT_MS = 60_000


def main() -> None:
    if not Path(CHROMIUM).exists():
        sys.exit(f"{CHROMIUM} is missing: apt-get install chromium (Debian's)")
    with tempfile.TemporaryDirectory() as data:
        port = _free_port()
        server = _serve(port, Path(data))
        try:
            base = f"http://127.0.0.1:{port}"
            _wait_healthy(base)
            with urllib.request.urlopen(base + "/openapi.json") as answer:
                document = json.loads(answer.read())
            operations = sum(len(item) for item in document["paths"].values())
            runs = _measure(base, operations)
        finally:
            server.terminate()
            server.wait(timeout=30)
    _report(runs, operations)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _serve(port: int, data: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        "REFAPI_BIND": f"127.0.0.1:{port}",
        "REFAPI_WORKERS": "2",
        "REFAPI_DATA_DIR": str(data),
        "DATABASE_URL": f"sqlite:///{data / 'refapi.db'}",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "refapi", "serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _wait_healthy(base: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _measure(base: str, operations: int) -> list[dict[str, float]]:
    runs = []
    with sync_playwright() as playwright:
        # The flags of the browser tests (tests/browser/conftest.py).
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox"], timeout=30_000
        )
        try:
            for index in range(RUNS + 1):
                run = _one_run(browser, base, operations)
                if index:  # the first warms the server up
                    runs.append(run)
        finally:
            browser.close()
    return runs


def _one_run(browser, base: str, operations: int) -> dict[str, float]:
    context = browser.new_context()
    try:
        page = context.new_page()
        sizes: dict[str, float] = {}

        def finished(request) -> None:
            if request.url.endswith("/openapi.json"):
                timing = request.timing
                sizes["document ms"] = timing["responseEnd"] - timing["requestStart"]
                sizes["document bytes"] = len(request.response().body())

        page.on("requestfinished", finished)
        page.goto(base + "/docs", timeout=TIMEOUT_MS)
        # Functions, not expressions: the page's policy refuses eval.
        page.wait_for_function(
            "() => document.querySelector('.info .title')",
            timeout=TIMEOUT_MS,
            polling="raf",
        )
        titled = page.evaluate("performance.now()")
        page.wait_for_function(
            "n => document.querySelectorAll('.opblock').length >= n",
            arg=operations,
            timeout=TIMEOUT_MS,
            polling="raf",
        )
        drawn = page.evaluate("performance.now()")
        paints = page.evaluate(
            "Object.fromEntries(performance.getEntriesByType('paint')"
            ".map(e => [e.name, e.startTime]))"
        )
        page.wait_for_load_state("networkidle", timeout=TIMEOUT_MS)
        return {
            "first paint ms": paints["first-paint"],
            "first contentful paint ms": paints["first-contentful-paint"],
            "document's title drawn ms": titled,
            "operations drawn ms": drawn,
            **sizes,
        }
    finally:
        context.close()


def _report(runs: list[dict[str, float]], operations: int) -> None:
    print(f"/docs in headless Chromium, {len(runs)} runs, {operations} operations")
    print(f"{'':28} {'median':>12} {'fastest':>12}")
    for name in runs[0]:
        values = [run[name] for run in runs]
        print(f"{name:28} {statistics.median(values):12.0f} {min(values):12.0f}")


if __name__ == "__main__":
    main()
