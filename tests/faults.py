"""Fault injection shared by the in-process and end-to-end fault tests: backups and
restores as an operator makes them, and a small disk that fills up."""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import skip_or_fail


def backup(db_path: Path, target: Path) -> None:
    """A consistent copy of the live database, as an operator's backup is made."""
    with sqlite3.connect(db_path) as source, sqlite3.connect(target) as copy:
        source.backup(copy)
    source.close()
    copy.close()


def restore(backup_path: Path, db_path: Path) -> None:
    """Put a backup in place the way a careful operator does: copy, then rename."""
    staged = db_path.with_name("restoring.tmp")
    shutil.copy(backup_path, staged)
    os.replace(staged, db_path)


def integrity(db_path: Path) -> str:
    with sqlite3.connect(db_path) as conn:
        result = conn.execute("PRAGMA integrity_check").fetchone()[0]
    conn.close()
    return result


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs mounted for the test (root may mount; else ``skip_or_fail``)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if shutil.which("mount") is None:
        skip_or_fail("no mount command")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        skip_or_fail(f"cannot mount a tmpfs: {mounted.stderr.decode().strip()}")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=True)


def fill(path: Path) -> None:
    """Write ``path`` until its file system has no byte left."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        chunk = 1 << 16
        while chunk:
            try:
                os.write(fd, bytes(chunk))
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                chunk //= 2
    finally:
        os.close(fd)
