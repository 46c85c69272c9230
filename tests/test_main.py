"""The ``refapi`` command (``python -m refapi``): its help, its version, reset."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import webtest

from refapi.cli import main as refapi
from refapi.config import VERSION, shown_url
from tests.conftest import ADMIN, bearer


def test_an_unknown_command_is_refused_with_the_usage(capsys):
    with pytest.raises(SystemExit) as exit:
        refapi(["resat"])
    assert exit.value.code == 2
    said = capsys.readouterr().err
    assert said.startswith("usage: refapi [-h] [--version] COMMAND ...\n")
    assert "invalid choice: 'resat'" in said


def test_the_help_lists_each_command(capsys):
    with pytest.raises(SystemExit) as exit:
        refapi(["--help"])
    assert exit.value.code == 0
    said = capsys.readouterr().out
    for command in ("serve", "reset"):
        assert f"    {command} " in said


def test_the_version_is_the_one_healthz_reports(capsys):
    with pytest.raises(SystemExit) as exit:
        refapi(["--version"])
    assert exit.value.code == 0
    assert capsys.readouterr().out == f"refapi {VERSION}\n"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("sqlite:///data/refapi.db", "sqlite:///data/refapi.db"),
        ("postgresql://app@db/refapi", "postgresql://app@db/refapi"),
        (
            "postgresql://app:s3cret@db:5432/refapi",
            "postgresql://app:***@db:5432/refapi",
        ),
        ("postgresql://app:p@ss:w@db/refapi", "postgresql://app:***@db/refapi"),
        ("postgres://:s3cret@db/refapi", "postgres://:***@db/refapi"),
        (
            "postgresql://db/refapi?sslmode=require&password=s3cret&x=1",
            "postgresql://db/refapi?sslmode=require&password=***&x=1",
        ),
    ],
)
def test_a_url_is_shown_without_its_password(url, shown):
    assert shown_url(url) == shown


def test_the_reset_command_names_the_database_without_its_password(
    make_app, database_url, monkeypatch, capsys
):
    make_app()  # the service's first start made the database
    monkeypatch.setenv("DATABASE_URL", database_url)
    assert refapi(["reset"]) == 0
    said = capsys.readouterr().out
    assert said == f"reset {shown_url(database_url)} to the seed\n"


def test_reset_all_leaves_the_first_admin_alone_and_says_so(
    make_app, database_url, monkeypatch, capsys
):
    admin = make_app()  # sends the first admin's token
    ann = {"email": "ann@example.com", "password": "ann's password"}
    admin.post_json("/api/users", ann, status=201)
    admin.get("/api/users", status=200)
    monkeypatch.setenv("DATABASE_URL", database_url)
    assert refapi(["reset", "--all"]) == 0
    assert capsys.readouterr().out == (
        f"reset {shown_url(database_url)} to the seed, with every credential"
        " and every account but the first admin removed\n"
    )
    admin.get("/api/users", status=401)
    again = bearer(admin, ADMIN["email"], ADMIN["password"])  # the same password
    users = admin.get("/api/users", extra_environ=again, status=200).json["data"]
    assert [user["email"] for user in users] == [ADMIN["email"]]
    webtest.TestApp(admin.app).post_json("/api/login", ann, status=401)  # gone


def test_the_reset_command_refuses_a_database_url_no_backend_reads_in_one_line(
    monkeypatch,
):
    monkeypatch.setenv("DATABASE_URL", "mysql://app:s3cret@db/refapi")
    with pytest.raises(SystemExit) as stopped:  # exit status 1, the line on stderr
        refapi(["reset"])
    said = str(stopped.value.code)
    assert said.startswith("refapi: DATABASE_URL has an unknown scheme, 'mysql'")
    assert "\n" not in said and "s3cret" not in said


def test_reset_makes_no_database_only_to_reset_it(tmp_path, monkeypatch, capsys):
    # The service's database is elsewhere (a DATABASE_URL not exported), or was
    # never made: say so, and make nothing (docs/operating.md, "Resetting the data").
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DATABASE_URL", raising=False)
    assert refapi(["reset"]) == 1
    assert capsys.readouterr().err == (
        "refapi: no database at data/refapi.db: set DATABASE_URL to the one the"
        " service uses, or start the service once to make it\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_python_m_refapi_storage_reset_is_the_same_command(make_app, database_url):
    make_app()  # the service's first start made the database
    env = {**os.environ, "DATABASE_URL": database_url}
    done = subprocess.run(
        [sys.executable, "-m", "refapi.storage", "reset"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == f"reset {shown_url(database_url)} to the seed\n"
