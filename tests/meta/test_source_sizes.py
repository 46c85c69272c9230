"""No source file of the package is over ``MOST`` lines: one that long holds more
than one concern, and a reader cannot keep it in mind (docs/development.md,
"Layout"). The package's files are those the Makefile installs: every ``.py`` git
tracks, or would (a new module not yet added), but the tests', the bench's, the
tools' and the examples'."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MOST = 450
NOT_THE_PACKAGE = ("tests/", "bench/", "tools/", "examples/")


def source_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", "*.py"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    return sorted(
        name
        for name in set(listed)
        if not name.startswith(NOT_THE_PACKAGE) and (ROOT / name).is_file()
    )


def lines(name: str) -> int:
    return len((ROOT / name).read_text().splitlines())


def test_no_source_file_is_over_the_most_lines():
    over = [
        f"{name}: {lines(name)} lines" for name in source_files() if lines(name) > MOST
    ]
    assert not over, f"over {MOST} lines, split each by concern: {'; '.join(over)}"


def test_the_list_holds_the_package_and_nothing_else():
    names = source_files()
    for name in ("app.py", "storage/sqlite/dialect.py", "storage/base.py"):
        assert name in names
    assert not [name for name in names if name.startswith(NOT_THE_PACKAGE)]
    assert "tests/conftest.py" not in names
