"""The contract checks: third-party tools run over the OpenAPI document and a live
server (docs/development.md, "The contract tools").

The tools are npm packages pinned in ``tools/contract/package-lock.json``; ``make
test`` installs them with ``npm ci`` (Node.js from the machine). Without them these
tests skip with the reason, and fail under ``REFAPI_REQUIRE_SERVICES=1`` (as in
CI). They run in ``make test``'s first pass only (``ONCE=yes``, the default):
what they check does not depend on the Python or the backend.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.conftest import skip_or_fail
from tests.e2e.harness import ROOT

TOOLS = ROOT / "tools" / "contract"
BIN = TOOLS / "node_modules" / ".bin"
# A guard against a hang, not a speed check: with two suites at once on two slow
# cores (stop 44's first loaded round; a quiet Python loop of 10^7 additions took
# 1.4 s there), Spectral took over 300 s, where a quiet full suite's took 80 s.
TIMEOUT_S = 600


# Before tests/conftest.py's sort, which orders the costliest first by their marks
# (both try first; the later registered runs first).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(item.path).is_relative_to(Path(__file__).parent):
            item.add_marker(pytest.mark.contract)


def node_tool(name: str) -> Path:
    """The path of one of the pinned tools, or a skip (a failure in CI) without it."""
    path = BIN / name
    if not path.exists():
        skip_or_fail(f"{path} is missing (`make test` runs npm ci in {TOOLS})")
    return path


def run_tool(
    args: Sequence[str | Path], cwd: Path = TOOLS
) -> subprocess.CompletedProcess:
    """Run a tool to its end (bounded), its output kept for the assertion message."""
    return subprocess.run(
        [str(arg) for arg in args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


# The two documents the service serves: the core's and the lab's (docs/lab.md).
DOCUMENTS = ("/openapi.json", "/lab/openapi.json")


@pytest.fixture(scope="session")
def documents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each document a fresh app serves, by its path, written to a file."""
    import webtest

    from refapi import create_app
    from refapi.config import Config

    data = tmp_path_factory.mktemp("openapi")
    config = Config(database_url=f"sqlite:///{data / 'refapi.db'}")
    app = create_app(config)
    try:
        client = webtest.TestApp(app)
        served = {path: client.get(path).json for path in DOCUMENTS}
    finally:
        app.close()
    files = {}
    for path, document in served.items():
        files[path] = data / path.strip("/").replace("/", "-")
        files[path].write_text(json.dumps(document, indent=2))
    return files


@pytest.fixture(scope="session")
def openapi_file(documents: dict[str, Path]) -> Path:
    """The core's document, as a fresh app serves it at /openapi.json."""
    return documents["/openapi.json"]


@pytest.fixture(scope="session")
def lab_openapi_file(documents: dict[str, Path]) -> Path:
    """The lab's document, as a fresh app serves it at /lab/openapi.json."""
    return documents["/lab/openapi.json"]
