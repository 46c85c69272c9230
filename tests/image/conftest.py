"""The image's tests' fixtures: a Docker daemon, the base image made once with
debootstrap, and the image ``make image`` builds on it (tests/image/test_image.py
says why each is as it is).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import needs_system_tool, skip_or_fail, without_system_tool
from tests.helpers import building_in_the_checkout
from tests.image import base
from tests.image.base import BASE, DOCKER, run

ROOT = Path(__file__).resolve().parents[2]
# What a make running these tests passes down (tests/meta/test_makefile.py).
INHERITED = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "VENV", "PYTHON"}


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


@pytest.fixture(scope="session")
def base_image(docker: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Debian bookworm with python3 and its venv module, made once and kept."""
    with building_in_the_checkout():  # one worker makes it; the others find it
        return _base_image(docker, tmp_path_factory)


def _base_image(docker: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    if base.exists(docker):  # made by `make system-tools`, or by an earlier run
        return BASE
    needs_system_tool(base.DEBOOTSTRAP, "debootstrap")
    mirror = base.debian_mirror()
    if os.geteuid() != 0 or not mirror:
        skip_or_fail("debootstrap makes the base as root, from apt's bookworm mirror")
    return base.make(tmp_path_factory.mktemp("base"), mirror, docker)


@pytest.fixture(scope="session")
def image(docker: str, base_image: str) -> Iterator[str]:
    """The image ``make image`` builds on the base, under a tag of this run's."""
    tag = f"refapi-test:{secrets.token_hex(4)}"
    with building_in_the_checkout():  # the wheels, in build/ and dist/image/
        make("image", f"BASE_IMAGE={base_image}", f"IMAGE={tag}", timeout=600)
    yield tag
    # Its layers stay: the next run's build finds them.
    run(docker, "rmi", "--no-prune", tag)
