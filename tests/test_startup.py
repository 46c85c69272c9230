"""Start-up (startup.py): the configuration checked, and the first admin, made by
a start that finds none."""

from __future__ import annotations

import logging
import secrets
import socket
from urllib.parse import urlsplit

import pytest

from refapi import create_app
from refapi.config import Config
from refapi.startup import check_start
from tests.conftest import TEST_AUTH
from tests.postgres import server_url


def test_a_data_folder_that_cannot_be_written_leaves_no_admin_and_says_why(
    tmp_path, database_url, store, clock, caplog
):
    blocked = tmp_path / "data"
    blocked.write_text("a file where the data folder should be")
    config = Config(
        database_url=database_url,
        secret_key=b"k",
        password_hash=TEST_AUTH["password_hash"],
        data_dir=str(blocked),
    )
    with caplog.at_level(logging.WARNING, logger="refapi"):
        create_app(config, store=store, clock=clock)
    assert not store.has_admin()
    [error] = [r for r in caplog.records if r.levelno == logging.ERROR]
    message = error.getMessage()
    assert str(blocked / "admin-password.txt") in message
    assert "REFAPI_ADMIN_EMAIL" in message
    assert list(tmp_path.glob("**/.admin-password.txt.*")) == []


# -- configuration errors stop the start (check_start) ---------------------------


def refused_start(url: str) -> str:
    """What ``check_start`` says as it ends the start, for ``DATABASE_URL=url``."""
    with pytest.raises(SystemExit) as stopped:
        check_start({"DATABASE_URL": url})
    said = str(stopped.value.code)  # a message: exit status 1, printed to stderr
    assert "\n" not in said and "Traceback" not in said
    return said


@pytest.mark.parametrize(
    ("env", "named"),
    [
        (
            {"REFAPI_LAB_MAX_DELAY": "15"},
            "REFAPI_LAB_MAX_DELAY (15) must be under half",
        ),
        ({"REFAPI_WORKER_TIMEOUT": "8"}, "REFAPI_WORKER_TIMEOUT (8)"),
        ({"REFAPI_WORKERS": "many"}, "REFAPI_WORKERS must be an integer"),
    ],
    ids=["a delay as long as half the timeout", "a short timeout", "workers"],
)
def test_a_server_setting_that_cannot_work_stops_the_start_in_one_line(env, named):
    with pytest.raises(SystemExit) as stopped:
        check_start({"DATABASE_URL": "sqlite:///unused.db", **env})
    said = str(stopped.value.code)
    assert said.startswith("refapi: ") and named in said
    assert "\n" not in said and "Traceback" not in said


def postgres_url(user: str, password: str, database: str) -> str:
    server = urlsplit(server_url())
    return f"postgresql://{user}:{password}@{server.hostname}:{server.port}/{database}"


@pytest.mark.parametrize("url", ["mysql://db/refapi", "data/refapi.db"])
def test_a_database_url_no_backend_reads_stops_the_start_in_one_line(url):
    said = refused_start(url)
    assert said.startswith("refapi: DATABASE_URL has ")
    assert "sqlite:///" in said and "postgresql://" in said  # how to fix it


def test_a_postgresql_database_that_does_not_exist_stops_the_start_in_one_line():
    url = postgres_url("postgres", "s3cret", f"missing_{secrets.token_hex(4)}")
    said = refused_start(url)
    assert "does not exist" in said and "createdb missing_" in said
    assert "s3cret" not in said


def test_a_login_postgresql_refuses_stops_the_start_in_one_line():
    url = postgres_url(f"nobody_{secrets.token_hex(4)}", "s3cret", "postgres")
    said = refused_start(url)
    assert "refused the login of 'nobody_" in said and "password" in said
    assert "s3cret" not in said


def test_an_unreachable_postgresql_server_is_an_outage_not_a_setting():
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"postgresql://app@127.0.0.1:{probe.getsockname()[1]}/refapi"
        config = check_start({"DATABASE_URL": url, "REFAPI_DB_POOL_TIMEOUT": "1"})
    assert config.database_url == url


def test_a_sqlite_url_passes_without_touching_the_file(tmp_path):
    url = f"sqlite:///{tmp_path}/refapi.db"
    assert check_start({"DATABASE_URL": url}).database_url == url
    assert list(tmp_path.iterdir()) == []
