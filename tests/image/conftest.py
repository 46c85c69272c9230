"""The image's tests' fixtures: a Docker daemon, the base image made once with
debootstrap, and the image ``make image`` builds on it (tests/image/test_image.py
says why each is as it is).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import needs_system_tool, skip_or_fail, without_system_tool
from tests.helpers import building_in_the_checkout

ROOT = Path(__file__).resolve().parents[2]
BASE = "refapi-test-base:bookworm"
# What a make running these tests passes down (tests/meta/test_makefile.py).
INHERITED = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "VENV", "PYTHON"}
# Debian's client (a newer one earlier on PATH may not speak its daemon's API), and
# debootstrap: `make system-tools` installs both (docker.io, debootstrap).
DOCKER = "/usr/bin/docker" if os.path.exists("/usr/bin/docker") else "docker"
DEBOOTSTRAP = "/usr/sbin/debootstrap"


def run(*args: str | Path, timeout: float = 60, **kwargs) -> str:
    """Run a command to its end (bounded); its output, or a failure showing it."""
    done = subprocess.run(
        [str(arg) for arg in args], capture_output=True, text=True,
        timeout=timeout, check=False, **kwargs,
    )  # fmt: skip
    assert done.returncode == 0, f"{args}: {done.stdout}{done.stderr}"
    return done.stdout


def make(*args: str, timeout: float = 60) -> str:
    """make in the checkout, with the environment these tests run in."""
    env = {k: v for k, v in os.environ.items() if k not in INHERITED}
    venv = f"VENV={Path(sys.prefix).name}"
    return run(
        "make", "--no-print-directory", *args, venv, cwd=ROOT, env=env, timeout=timeout
    )


@pytest.fixture(scope="session")
def docker() -> str:
    """The client (``DOCKER``), once a daemon answers it."""
    try:
        subprocess.run([DOCKER, "info"], capture_output=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        without_system_tool(f"a Docker daemon answering `{DOCKER} info`")
    return DOCKER


def debian_mirror() -> str | None:
    """The mirror apt itself uses for bookworm, from its sources (the one-line
    format and deb822's)."""
    folder = Path("/etc/apt")
    for path in [folder / "sources.list", *sorted(folder.glob("sources.list.d/*"))]:
        if path.suffix not in (".list", ".sources"):
            continue
        text = path.read_text() if path.exists() else ""
        for line in text.splitlines():  # deb [options] URI suite components
            words = re.sub(r"\[.*?\]", "", line).split()
            if words[:1] == ["deb"] and words[2:3] == ["bookworm"]:
                return words[1]
        for stanza in text.split("\n\n"):
            fields = dict(re.findall(r"^(\w+):\s*(.*)$", stanza, re.MULTILINE))
            if "bookworm" in fields.get("Suites", "").split():
                return fields.get("URIs", "").split()[0]
    return None


@pytest.fixture(scope="session")
def base_image(docker: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Debian bookworm with python3 and its venv module, made once and kept."""
    with building_in_the_checkout():  # one worker makes it; the others find it
        return _base_image(docker, tmp_path_factory)


def _base_image(docker: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    inspected = subprocess.run([docker, "image", "inspect", BASE], capture_output=True)
    if inspected.returncode == 0:
        return BASE
    debootstrap = needs_system_tool(DEBOOTSTRAP, "debootstrap")
    mirror = debian_mirror()
    if os.geteuid() != 0 or not mirror:
        skip_or_fail("debootstrap makes the base as root, from apt's bookworm mirror")
    root = tmp_path_factory.mktemp("base") / "root"
    try:
        run(
            debootstrap, "--variant=minbase",
            "--include=python3,python3-venv,ca-certificates", "bookworm", root, mirror,
            timeout=600,
        )  # fmt: skip
        # The packages and their lists serve no one in the image.
        for folder in (root / "var/cache/apt/archives", root / "var/lib/apt/lists"):
            for path in folder.glob("*.*"):
                path.unlink()
        with subprocess.Popen(
            ["tar", "--numeric-owner", "-C", root, "-c", "."], stdout=subprocess.PIPE
        ) as tar:
            run(docker, "import", "-", BASE, stdin=tar.stdout, timeout=300)
        assert tar.returncode == 0
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return BASE


@pytest.fixture(scope="session")
def image(docker: str, base_image: str) -> Iterator[str]:
    """The image ``make image`` builds on the base, under a tag of this run's."""
    tag = f"refapi-test:{secrets.token_hex(4)}"
    with building_in_the_checkout():  # the wheels, in build/ and dist/image/
        make("image", f"BASE_IMAGE={base_image}", f"IMAGE={tag}", timeout=600)
    yield tag
    # Its layers stay: the next run's build finds them.
    run(docker, "rmi", "--no-prune", tag)
