"""A start that cannot work stops at once, in one line, before gunicorn listens or
boots a worker (docs/operating.md, "When a start fails"): ``refapi serve`` as a
self-hoster runs it, in a folder of the test's own."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TEST_AUTH, skip_or_fail
from tests.e2e.test_faults import SUBJECT_TO_FILE_MODES

pytestmark = pytest.mark.e2e


def refused_serve(
    work: Path, env: dict[str, str], wrapper: tuple[str, ...] = ()
) -> str:
    """The one line ``refapi serve`` stops with in ``work``, with ``env``."""
    environ = {
        key: value for key, value in os.environ.items()
        if not key.startswith("REFAPI_") and key != "DATABASE_URL"
    }  # fmt: skip
    environ.update(
        REFAPI_WORKERS="1", REFAPI_PASSWORD_HASH=TEST_AUTH["password_hash"], **env
    )
    environ.setdefault("REFAPI_BIND", "127.0.0.1:0")
    done = subprocess.run(
        [*wrapper, sys.executable, "-m", "refapi", "serve"], cwd=work, env=environ,
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    lines = (done.stdout + done.stderr).splitlines()
    assert done.returncode == 1, lines
    # The service's line, after gunicorn's own first one when the refusal comes in
    # its on_starting hook (a setting is refused sooner, as gunicorn reads its
    # configuration): nothing else (no retries, no worker booted, no traceback).
    [said] = [line for line in lines if line.startswith("refapi: ")]
    others = [line for line in lines if line != said]
    assert others in ([], lines[:1]), lines
    assert all("Starting gunicorn" in line for line in others), lines
    return said


def test_a_data_folder_that_is_a_file(tmp_path):
    (tmp_path / "data").write_text("a file where the data folder should be")
    said = refused_serve(tmp_path, {})
    assert said.startswith("refapi: the data folder data (REFAPI_DATA_DIR) is a file")
    assert not (tmp_path / "data.lock").exists()


def test_a_data_folder_this_user_cannot_write(tmp_path):
    if shutil.which("setpriv") is None:
        skip_or_fail("setpriv (util-linux) is needed to run gunicorn bound by modes")
    (tmp_path / "data").mkdir(mode=0o500)
    said = refused_serve(tmp_path, {}, SUBJECT_TO_FILE_MODES)
    assert said.startswith(
        "refapi: the data folder data (REFAPI_DATA_DIR) is not writable by this"
        " user (uid 0)"
    )
    assert list((tmp_path / "data").iterdir()) == []


def test_a_data_folder_on_a_read_only_file_system(tmp_path):
    # Said "not writable by this user: give it to that user (chown)", which no
    # chown mends (an operator's review: a folder outside the systemd unit's
    # ProtectSystem=strict).
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        skip_or_fail("root and unshare (util-linux) are needed to mount read-only")
    data = tmp_path / "data"
    data.mkdir()
    read_only = (
        "unshare", "-m", "sh", "-c",
        f'mount --bind {data} {data} && mount -o remount,bind,ro {data} && exec "$@"',
        "sh",
    )  # fmt: skip
    said = refused_serve(tmp_path, {}, read_only)
    assert said == (
        "refapi: the data folder data (REFAPI_DATA_DIR) is on a read-only file system"
        " (data): set REFAPI_DATA_DIR to a folder on a writable one (under systemd,"
        " one the unit's ReadWritePaths= names)"
    )


def test_a_sqlite_path_under_a_file(tmp_path):
    (tmp_path / "notes.txt").write_text("a file")
    url = "sqlite:///notes.txt/refapi.db"
    said = refused_serve(tmp_path, {"DATABASE_URL": url})
    assert said == (
        "refapi: DATABASE_URL names notes.txt/refapi.db, but notes.txt is a file:"
        " no database can be made there; name a path in a folder"
    )


def test_an_address_in_use(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        said = refused_serve(tmp_path, {"REFAPI_BIND": f"127.0.0.1:{port}"})
    assert said == (
        f"refapi: cannot listen on 127.0.0.1:{port}: another process listens"
        " there; stop it, or set REFAPI_BIND to a free address"
        f" (REFAPI_BIND=127.0.0.1:{port + 1})"
    )


def test_a_sqlite_url_with_one_slash(tmp_path):
    said = refused_serve(tmp_path, {"DATABASE_URL": "sqlite:/data/x.db"})
    assert said.startswith(
        "refapi: DATABASE_URL sqlite:/data/x.db is not a SQLite URL: write"
        " sqlite:////data/x.db"
    )
    assert list(tmp_path.iterdir()) == []
