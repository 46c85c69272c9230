"""The image tests' base: Debian bookworm with python3 and its venv module, made
with debootstrap from apt's own bookworm mirror and imported into Docker as
``BASE``, once a machine (docs/development.md, "What the tests need of the system").

``make system-tools`` makes it, as root, once dockerd runs: ``python3
tests/image/base.py`` (the standard library alone: it runs before any virtual
environment exists). The image tests' ``base_image`` fixture makes it too where
it is missing, so a run without that target still has it, at the cost of a few
minutes in the run itself.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BASE = "refapi-test-base:bookworm"
# Debian's client (a newer one earlier on PATH may not speak its daemon's API), and
# debootstrap: `make system-tools` installs both (docker.io, debootstrap).
DOCKER = "/usr/bin/docker" if os.path.exists("/usr/bin/docker") else "docker"
DEBOOTSTRAP = "/usr/sbin/debootstrap"


def run(*args: str | Path, timeout: float = 60, **kwargs) -> str:
    """Run a command to its end (bounded); its output, or an error showing it."""
    done = subprocess.run(
        [str(arg) for arg in args], capture_output=True, text=True,
        timeout=timeout, check=False, **kwargs,
    )  # fmt: skip
    if done.returncode != 0:
        raise AssertionError(f"{args}: {done.stdout}{done.stderr}")
    return done.stdout


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


def exists(docker: str = DOCKER) -> bool:
    inspected = subprocess.run([docker, "image", "inspect", BASE], capture_output=True)
    return inspected.returncode == 0


def make(work: Path, mirror: str, docker: str = DOCKER) -> str:
    """Make ``BASE`` with debootstrap in ``work`` (removed after), from ``mirror``."""
    root = work / "root"
    try:
        run(
            DEBOOTSTRAP, "--variant=minbase",
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
        if tar.returncode != 0:
            raise AssertionError(f"tar of {root} failed")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return BASE


def main() -> int:
    """``make system-tools``'s step: the base made where it is missing."""
    if exists():
        return 0
    mirror = debian_mirror()
    if os.geteuid() != 0 or not mirror or not os.access(DEBOOTSTRAP, os.X_OK):
        print(f"{BASE}: making it needs root, {DEBOOTSTRAP} and apt's bookworm mirror")
        return 1
    print(f"making the image tests' base {BASE} with debootstrap (a few minutes)")
    with tempfile.TemporaryDirectory(prefix="refapi-base-") as work:
        make(Path(work), mirror)
    return 0


if __name__ == "__main__":
    sys.exit(main())
