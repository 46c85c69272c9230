"""The Makefile as a newcomer meets it: `make` lists the targets, and the first
install says one line instead of pip's and setuptools' output."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The targets a person is told about (README, "Quick start"), each with its line.
TARGETS = [
    "help", "venv", "run", "run-gateway", "test", "lint", "format", "reset",
    "clean", "chromium", "bench", "bench-inproc", "bench-workers",
]  # fmt: skip
HELP_LINE = re.compile(r"  make (?P<target>[a-z-]+) +(?P<what>\S.*)")


# What a make running these tests passes down (`make test VENV=.venv-3.13` sets
# MAKEFLAGS): a newcomer's make has none of it.
INHERITED = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "VENV", "PYTHON"}


def make(*args: str, cwd: Path = ROOT, timeout: float = 30) -> str:
    env = {k: v for k, v in os.environ.items() if k not in INHERITED}
    done = subprocess.run(
        ["make", "--no-print-directory", *args], cwd=cwd, env=env,
        capture_output=True, text=True, timeout=timeout, check=True,
    )  # fmt: skip
    return done.stdout + done.stderr


def test_make_alone_prints_the_help_with_one_line_a_target():
    listed = make()
    assert listed == make("help")
    lines = listed.splitlines()
    matches = [HELP_LINE.fullmatch(line) for line in lines]
    assert all(matches), lines
    targets = [match["target"] for match in matches if match]
    assert len(targets) == len(set(targets))
    assert set(TARGETS) <= set(targets)


@pytest.mark.slow
def test_the_first_install_prints_one_line_and_logs_what_pip_said(tmp_path):
    # A copy of the checkout, so its strict editable link tree (build/) is its own.
    copy = tmp_path / "refapi"
    shutil.copytree(
        ROOT, copy, symlinks=True,
        ignore=shutil.ignore_patterns(
            ".venv*", "build", "data", ".git", "test-output", "*_cache", "__pycache__"
        ),
    )  # fmt: skip
    said = make("venv", cwd=copy, timeout=300)
    log = copy / ".venv" / "install.log"
    assert (
        said == "installing refapi and its tools into .venv (log: .venv/install.log)\n"
    )
    assert "*****" not in said and "Successfully installed" in log.read_text()
    assert (copy / ".venv" / "bin" / "prysk").exists()
