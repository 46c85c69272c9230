"""The first admin's password file: one per database, never overwritten by another
database's (docs/operating.md, "The first admin's password")."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest
import webtest

from refapi import create_app
from refapi.config import Config, shown_url
from refapi.first_admin import admin_password_file
from refapi.startup import start_lines
from tests.conftest import TEST_AUTH

# On both backends: the first admin is made in the database as it starts.
pytestmark = pytest.mark.every_backend


def first_start(url: str, data: Path, clock) -> tuple[Config, list[str]]:
    """A first start on ``url`` with no admin named and ``data`` as its data
    folder; the configuration, and the file's lines once the start made them."""
    config = Config(
        database_url=url, password_hash=TEST_AUTH["password_hash"], data_dir=str(data)
    )
    create_app(config, clock=clock).close()
    return config, admin_password_file(config).read_text().splitlines()


def logs_in(config: Config, lines: list[str], clock) -> bool:
    app = create_app(config, clock=clock)
    try:
        body = {"email": lines[0], "password": lines[1]}
        status = webtest.TestApp(app).post_json("/api/login", body, expect_errors=True)
        return status.status_int == 200
    finally:
        app.close()


def test_a_start_on_another_database_keeps_the_first_ones_password(
    database_urls, tmp_path, clock
):
    data = tmp_path / "data"  # one data folder, as when DATABASE_URL alone changes
    first, first_lines = first_start(database_urls("first"), data, clock)
    plain = data / "admin-password.txt"
    assert admin_password_file(first) == plain
    assert first_lines[2] == f"database: {shown_url(first.database_url)}"
    before = plain.read_bytes()

    other, other_lines = first_start(database_urls("other"), data, clock)
    assert plain.read_bytes() == before  # never overwritten by another's
    path = admin_password_file(other)
    assert path != plain and path.parent == data
    assert path.name.startswith("admin-password-") and path.suffix == ".txt"
    assert other_lines[2] == f"database: {shown_url(other.database_url)}"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert other_lines[1] != first_lines[1]
    assert logs_in(first, first_lines, clock) and logs_in(other, other_lines, clock)
    # And each start says which file is its database's.
    assert f"the second line of {plain}" in start_lines([], {"": first})[-1]
    assert f"the second line of {path}" in start_lines([], {"": other})[-1]
    # Without the file (another host made the admin; a reset removed the file),
    # it says so, where it said the file held the password.
    path.unlink()
    said = start_lines([], {"": other})[-1]
    assert "reset-password admin@localhost" in said
    assert "reset-password" not in start_lines([], {"": first})[-1]


@pytest.mark.sqlite_only  # a database removed and made again at its path
def test_a_database_made_again_at_its_path_writes_its_own_file_again(tmp_path, clock):
    data = tmp_path / "data"
    url = f"sqlite:///{data}/refapi.db"
    _, before = first_start(url, data, clock)
    for path in data.glob("refapi.db*"):  # to start afresh (docs/operating.md)
        path.unlink()
    config, after = first_start(url, data, clock)
    assert admin_password_file(config) == data / "admin-password.txt"
    assert after[1] != before[1] and logs_in(config, after, clock)


def test_a_file_an_older_release_wrote_is_never_overwritten(
    database_url, tmp_path, clock, caplog
):
    # It names no database: it may be another's, so it is left as it is.
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    older = data / "admin-password.txt"
    older.write_text("admin@localhost\nan older release's password\n")
    config = Config(
        database_url=database_url,
        password_hash=TEST_AUTH["password_hash"],
        data_dir=str(data),
    )
    assert admin_password_file(config) == older  # what a start line names, till then
    with caplog.at_level(logging.WARNING, logger="refapi"):
        create_app(config, clock=clock).close()
    assert older.read_text() == "admin@localhost\nan older release's password\n"
    path = admin_password_file(config)
    assert path != older and f"its password is in {path}" in caplog.text
    assert logs_in(config, path.read_text().splitlines(), clock)


def test_the_start_lines_name_each_instances_urls_and_password_file(tmp_path):
    gateway = tmp_path / "gateway"
    mounts = {
        prefix: Config(
            database_url=f"sqlite:///{gateway}{prefix}/refapi.db",
            data_dir=f"{gateway}{prefix}",
        )
        for prefix in ("/prod", "/dev")
    }
    assert start_lines(["http://0.0.0.0:8000"], mounts) == [
        "open http://localhost:8000/prod/docs (the API) and"
        " http://localhost:8000/prod/ui/ (the web UI)",
        "open http://localhost:8000/dev/docs (the API) and"
        " http://localhost:8000/dev/ui/ (the web UI)",
        f"the admin of /prod: admin@localhost, its password on the second line of"
        f" {gateway}/prod/admin-password.txt",
        f"the admin of /dev: admin@localhost, its password on the second line of"
        f" {gateway}/dev/admin-password.txt",
    ]
    named = Config(admin_email="ada@example.com", admin_password="a password")
    assert start_lines(
        ["http://127.0.0.1:8000", "unix:/run/refapi.sock"], {"": named}
    ) == [
        "open http://127.0.0.1:8000/docs (the API) and"
        " http://127.0.0.1:8000/ui/ (the web UI)",
        "the admin: ada@example.com (REFAPI_ADMIN_EMAIL)",
    ]
