"""The ``refapi`` command (``python -m refapi``): its help, its version, reset."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest
import webtest

from refapi import create_app
from refapi.cli import main as refapi
from refapi.config import VERSION, Config, shown_url
from refapi.first_admin import admin_password_file
from refapi.storage.sqlite import SqliteStore
from tests.conftest import ADMIN, TEST_AUTH, bearer
from tests.faults import integrity

# On both backends: the command resets and reads each backend.
pytestmark = pytest.mark.every_backend


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


COMMANDS = [["reset"], ["backup", "copy.db"], ["admin", "reset-password", "a@b.co"]]


@pytest.mark.parametrize("argv", COMMANDS, ids=["reset", "backup", "admin"])
@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///"])
def test_a_sqlite_url_without_a_path_is_one_line(url, argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DATABASE_URL", url)
    with pytest.raises(SystemExit) as stopped:  # exit status 1, the line on stderr
        refapi(argv)
    assert str(stopped.value.code) == (
        f"refapi: DATABASE_URL {url} names no file: write sqlite:///data/refapi.db"
        " for data/refapi.db in the working folder, or sqlite:////srv/refapi.db for"
        " an absolute path"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv", COMMANDS, ids=["reset", "backup", "admin"])
def test_a_folder_named_as_the_database_is_said_as_serve_says_it(
    argv, tmp_path, monkeypatch, capsys
):
    # It was "cannot open <folder>: unable to open database file".
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path}")
    assert refapi(argv) == 1
    assert capsys.readouterr().err == (
        f"refapi: DATABASE_URL names {tmp_path}, which is a folder: name the"
        f" database file, e.g. sqlite:///{tmp_path / 'refapi.db'}\n"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("argv", "doing"),
    [(["reset"], "cannot reset now"),
     (["admin", "reset-password", "a@b.co"], "cannot reset the password now")],
    ids=["reset", "admin"],
)  # fmt: skip
def test_a_postgresql_server_out_of_reach_is_one_line(argv, doing, monkeypatch, capsys):
    # libpq's hint came on a second line, after a tab.
    pytest.importorskip("psycopg", reason="the postgres extra is not installed")
    monkeypatch.setenv("DATABASE_URL", "postgresql://nobody@127.0.0.1:1/refapi")
    assert refapi(argv) == 1
    said = capsys.readouterr().err
    assert said.startswith(f"refapi: {doing}: PostgreSQL: ")
    assert "Connection refused" in said
    assert said.count("\n") == 1 and said.endswith("\n") and "\t" not in said


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["reset"], "refapi: DATABASE_URL sqlite:///{db} names {db}, which is not a"
         " SQLite database: name another file, or move this one away"),
        (["backup", "{copy}"], "refapi: cannot back up now: cannot open {db}: file is"
         " not a database"),
        (["admin", "reset-password", "a@b.co"], "refapi: DATABASE_URL sqlite:///{db}"
         " names {db}, which is not a SQLite database: name another file, or move"
         " this one away"),
    ],
    ids=["reset", "backup", "admin"],
)  # fmt: skip
def test_a_file_that_is_no_database_is_one_line(tmp_path, argv, said):
    # The store's warning as it opened came first: two lines. In a process of its
    # own, as an operator's shell runs it (pytest would catch the warning).
    db = tmp_path / "junk.db"
    db.write_text("junk")
    env = {"PATH": os.environ["PATH"], "DATABASE_URL": f"sqlite:///{db}",
           "REFAPI_DATA_DIR": str(tmp_path / "data")}  # fmt: skip
    args = [a.format(copy=tmp_path / "copy.db") for a in argv]
    done = subprocess.run(
        [sys.executable, "-m", "refapi", *args], env=env, capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (1, said.format(db=db) + "\n")
    # Refused before the store opened: no lock file beside it (/etc/passwd.lock).
    assert (argv[0] == "backup") == (tmp_path / "junk.db.lock").exists()


# -- refapi admin reset-password (docs/operating.md, "The first admin's password") --

ANN = {"email": "ann@example.com", "password": "ann's first password"}


@pytest.fixture
def service_environment(database_url, tmp_path, monkeypatch):
    """The environment a command is run in beside the service: its database, its
    data folder (never the checkout's) and its hash method."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("REFAPI_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("REFAPI_PASSWORD_HASH", TEST_AUTH["password_hash"])
    return tmp_path / "data"


def login(app: webtest.TestApp, email: str, password: str, status: int = 200):
    anon = webtest.TestApp(app.app)
    body = {"email": email, "password": password}
    return anon.post_json("/api/login", body, status=status)


def test_reset_password_shows_a_new_password_once_and_ends_every_login(
    make_app, service_environment, capsys
):
    admin = make_app()
    ann = admin.post_json("/api/users", ANN, status=201).json
    key = admin.post_json("/api/keys", {"name": "job", "userId": ann["id"]}).json
    token = login(admin, **ANN).json["token"]
    session = webtest.TestApp(admin.app)  # keeps the session cookie of its login
    session.post_json("/api/login", ANN, status=200)
    session.get("/api/session", status=200)

    assert refapi(["admin", "reset-password", "ANN@example.com"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        "the new password of ann@example.com, shown once (every token and session"
        " of the account ended, its API keys kept):"
    )
    password = out[1]
    assert len(password) >= 20 and password not in out[0]

    anon = webtest.TestApp(admin.app)
    bearer_token = {"Authorization": f"Bearer {token}"}
    anon.get(f"/api/users/{ann['id']}", headers=bearer_token, status=401)
    session.get("/api/session", status=401)
    login(admin, **ANN, status=401)  # the old password
    login(admin, ANN["email"], password)  # the new one
    # API keys stay, as after a password change (docs/authentication.md).
    anon.get(f"/api/users/{ann['id']}", headers={"X-API-Key": key["key"]}, status=200)


def test_reset_password_of_an_unknown_email_says_so_and_changes_nothing(
    make_app, service_environment, capsys
):
    make_app()
    assert refapi(["admin", "reset-password", "nobody@example.com"]) == 1
    said = capsys.readouterr()
    assert said.out == ""
    assert said.err == "refapi: no account has the email nobody@example.com\n"


def test_reset_password_removes_the_first_admins_password_file_it_made_useless(
    service_environment, database_url, clock, capsys
):
    # A first start with no admin named: admin@localhost, its password in the file.
    config = Config(
        database_url=database_url,
        password_hash=TEST_AUTH["password_hash"],
        data_dir=str(service_environment),
    )
    first = webtest.TestApp(create_app(config, clock=clock))
    try:
        path = admin_password_file(config)
        old = path.read_text().splitlines()[1]
        assert refapi(["admin", "reset-password", "admin@localhost"]) == 0
        out = capsys.readouterr().out.splitlines()
        assert out[2] == f"removed {path}, which held the old password"
        assert not path.exists()
        login(first, "admin@localhost", old, status=401)
        login(first, "admin@localhost", out[1])
    finally:
        first.app.close()


# -- refapi backup (docs/operating.md, "Backups and restore") -------------------------


@pytest.mark.sqlite_only  # PostgreSQL's refusal is the next test
def test_backup_copies_the_database_and_never_overwrites_a_file(
    make_app, service_environment, tmp_path, capsys
):
    admin = make_app()
    made = admin.post_json("/v1/articles", {"title": "Kept"}, status=201).json
    copy = tmp_path / "copy.db"
    assert refapi(["backup", str(copy)]) == 0
    assert capsys.readouterr().out == (
        f"backed up {os.environ['DATABASE_URL']} to {copy}\n"
    )
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600  # password hashes, the key
    assert sorted(p.name for p in tmp_path.glob("copy.db*")) == ["copy.db"]
    assert integrity(copy) == "ok"
    restored = SqliteStore(str(copy))
    try:
        assert restored.get_article(made["id"])["title"] == "Kept"
    finally:
        restored.close()
    before = copy.read_bytes()
    assert refapi(["backup", str(copy)]) == 1
    assert capsys.readouterr().err == (
        f"refapi: {copy} exists: a backup goes to a new file, never over one\n"
    )
    assert copy.read_bytes() == before
    assert refapi(["backup", str(tmp_path / "later" / "copy.db")]) == 1
    assert capsys.readouterr().err == (
        f"refapi: {tmp_path / 'later'} is not a folder: make it first\n"
    )
    # PATH named as given, never the draft's own name beside it.
    assert refapi(["backup", ""]) == 1
    assert capsys.readouterr().err == "refapi: PATH is empty: name the new file\n"
    assert refapi(["backup", "/proc/refapi-copy.db"]) == 1
    assert capsys.readouterr().err.startswith(
        "refapi: cannot write /proc/refapi-copy.db: "
    )


def test_backup_on_postgresql_names_pg_dump_and_exits_2(tmp_path, monkeypatch, capsys):
    # No connection is made: the port refuses, and the answer is the same.
    monkeypatch.setenv("DATABASE_URL", "postgresql://app:s3cret@127.0.0.1:1/refapi")
    assert refapi(["backup", str(tmp_path / "copy.db")]) == 2
    said = capsys.readouterr()
    assert said.err == (
        "refapi: backup copies a SQLite database; this one is PostgreSQL's"
        " (postgresql://app:***@127.0.0.1:1/refapi): back it up with pg_dump"
        " (docs/several-hosts.md, 'Backups and restore')\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_backup_without_a_database_makes_none(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DATABASE_URL", raising=False)
    assert refapi(["backup", "copy.db"]) == 1
    assert capsys.readouterr().err == (
        "refapi: no database at data/refapi.db: set DATABASE_URL to the one the"
        " service uses, or start the service once to make it\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_backup_needs_its_path(capsys):
    with pytest.raises(SystemExit) as stopped:
        refapi(["backup"])
    assert stopped.value.code == 2
    assert "the following arguments are required: PATH" in capsys.readouterr().err
