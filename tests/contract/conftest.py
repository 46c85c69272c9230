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
TIMEOUT_S = 300


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


@pytest.fixture(scope="session")
def openapi_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The document a fresh app serves at /openapi.json, written to a file."""
    import webtest

    from refapi import create_app
    from refapi.config import Config

    data = tmp_path_factory.mktemp("openapi")
    config = Config(database_url=f"sqlite:///{data / 'refapi.db'}")
    app = create_app(config)
    try:
        document = webtest.TestApp(app).get("/openapi.json").json
    finally:
        app.close()
    path = data / "openapi.json"
    path.write_text(json.dumps(document, indent=2))
    return path
