"""What the tests need of the system is installed by `make system-tools` alone:
`make test` installs nothing outside the checkout and starts no daemon of its own
(README, "Quick start"); a test that needs a system package it finds missing is
skipped with the target's name, and fails under ``REFAPI_REQUIRE_SERVICES=1``
(docs/development.md, "What the tests need of the system")."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.meta.test_makefile import make

pytestmark = pytest.mark.slow  # runs pytest on a sample

ROOT = Path(__file__).resolve().parents[2]
# A command that changes the system: a package installed, a daemon started.
SYSTEM_CHANGE = re.compile(r"apt-get|\bapt install|dpkg|dockerd|\bsudo\b")
# Debian's packages the tests need (systemd: systemd-analyze, for the unit's test).
PACKAGES = {"chromium", "docker.io", "docker-compose", "debootstrap", "systemd"}
MISSING = "/nonexistent/refapi-test-tool"
SAID = "missing: run `make system-tools`"


@pytest.mark.parametrize("target", ["test", "image"])
def test_make_test_installs_nothing_outside_the_checkout(target):
    # -n: the commands `make test` would run, its sub-makes' included, none run;
    # the image test runs `make image`.
    commands = make("-n", target)
    assert "bin/pytest" in commands or "build" in commands, commands
    assert SYSTEM_CHANGE.findall(commands) == [], commands


def test_make_system_tools_installs_each_package_and_starts_dockerd():
    commands = make("-n", "system-tools")
    installs = re.findall(r"apt-get -o \S+ install -y -qq ([^>]+)>", commands)
    assert {package for line in installs for package in line.split()} == PACKAGES
    assert "dockerd --bridge=none" in commands


def test_ci_installs_the_system_tools_before_it_tests():
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert lines.index("make system-tools") < lines.index("make test")


def run_pytest(
    tmp_path: Path, *args: str, required: bool
) -> subprocess.CompletedProcess:
    """pytest on ``args`` in the checkout, with every tool these tests name in
    ``TOOLS`` pointed at a path with nothing there (``missing.py``, a plugin)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTEST_ADDOPTS"}
    env.update(
        PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}",
        REFAPI_REQUIRE_SERVICES="1" if required else "",
    )
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
         "-p", "missing", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


# Where each test finds a program of a system package: every module of the suite
# that has one of these names gets it pointed at MISSING.
TOOLS = ("CHROMIUM", "DOCKER", "DOCKER_COMPOSE")
PLUGIN = f"""
import sys

def pytest_collection_finish(session):
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None) or ""
        if path.startswith({str(ROOT / "tests")!r}):
            for name in {TOOLS!r}:
                if hasattr(module, name):
                    kind = type(getattr(module, name))  # a str or a Path
                    setattr(module, name, kind({MISSING!r}))
"""


# Each suite that needs what `make system-tools` installs, and the program it names.
NEEDS = {
    "tests/browser/test_front.py": f"Debian's chromium ({MISSING})",
    "tests/image/test_image.py": f"a Docker daemon answering `{MISSING} info`",
    "tests/image/test_compose.py": "docker-compose or docker compose",
}


def test_a_test_without_its_system_package_names_the_target(tmp_path):
    """Each skips naming the target on a laptop, and fails under
    REFAPI_REQUIRE_SERVICES=1 (the browser's through ``needs_system_tool``, the
    helper every test of a system package's program calls)."""
    (tmp_path / "missing.py").write_text(PLUGIN)
    skipped = run_pytest(tmp_path, *NEEDS, required=False)
    assert skipped.returncode == pytest.ExitCode.OK, skipped.stdout
    reasons = set(re.findall(r"^SKIPPED \[\d+\] \S+ (.*)$", skipped.stdout, re.M))
    assert reasons == {f"{what} {SAID}" for what in NEEDS.values()}, skipped.stdout
    failed = run_pytest(tmp_path, *NEEDS, required=True)
    assert failed.returncode == pytest.ExitCode.TESTS_FAILED, failed.stdout
    for what in NEEDS.values():
        assert f"required service missing (REFAPI_REQUIRE_SERVICES=1): {what}" in (
            failed.stdout
        )
