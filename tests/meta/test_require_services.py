"""REFAPI_REQUIRE_SERVICES=1 (set by .ci/run): a run that skipped anything fails.

Each case runs pytest on a small test file in a subprocess, with this suite's
conftest as its own, as CI runs the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each test runs pytest on a sample

ROOT = Path(__file__).resolve().parents[2]
SKIPS = {
    "skip_or_fail": "from tests.conftest import skip_or_fail\n"
    "def test_it():\n    skip_or_fail('no such service')\n",
    "skipif": "import pytest\n@pytest.mark.skipif(True, reason='no such tool')\n"
    "def test_it():\n    pass\n",
    "module-level": "import pytest\npytest.importorskip('no_such_module')\n"
    "def test_it():\n    pass\n",
}


def run_pytest(
    tmp_path: Path, test: str, required: bool
) -> subprocess.CompletedProcess:
    (tmp_path / "conftest.py").write_text("from tests.conftest import *  # noqa\n")
    (tmp_path / "test_it.py").write_text(test)
    (tmp_path / "test_ok.py").write_text("def test_ok():\n    pass\n")
    env = {key: value for key, value in os.environ.items() if key != "PYTEST_ADDOPTS"}
    env.update(PYTHONPATH=str(ROOT), REFAPI_REQUIRE_SERVICES="1" if required else "")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
         "--rootdir", str(tmp_path), str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("test", "said"),
    [
        (SKIPS["skip_or_fail"], "required service missing"),
        (SKIPS["skipif"], "REFAPI_REQUIRE_SERVICES=1: 1 skipped, so the run fails"),
        (SKIPS["module-level"], "REFAPI_REQUIRE_SERVICES=1: 1 skipped"),
    ],
    ids=["skip_or_fail", "skipif", "module-level"],
)
def test_a_skip_fails_the_run_when_services_are_required(tmp_path, test, said):
    result = run_pytest(tmp_path, test, required=True)
    assert result.returncode == pytest.ExitCode.TESTS_FAILED, result.stdout
    assert said in result.stdout


@pytest.mark.parametrize("test", [SKIPS["skip_or_fail"], SKIPS["module-level"]])
def test_a_skip_is_only_a_skip_on_a_laptop(tmp_path, test):
    result = run_pytest(tmp_path, test, required=False)
    assert result.returncode == pytest.ExitCode.OK, result.stdout
    assert "1 passed, 1 skipped" in result.stdout
