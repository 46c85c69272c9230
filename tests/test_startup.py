"""Start-up (startup.py): the configuration checked, and the first admin, made by
a start that finds none."""

from __future__ import annotations

import logging
import os
import secrets
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from refapi import create_app
from refapi.config import Config
from refapi.startup import check_serving, check_start
from tests.conftest import TEST_AUTH
from tests.postgres import server_url

# On both backends: the first admin is made in the database as it starts.
pytestmark = pytest.mark.every_backend


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
        # A worker met these with a traceback, after the master listened.
        ({"REFAPI_PASSWORD_HASH": "bogus"}, "REFAPI_PASSWORD_HASH 'bogus' is not"),
        ({"REFAPI_PASSWORD_HASH": "scrypt:3:8:1"}, "REFAPI_PASSWORD_HASH 'scrypt:3"),
        ({"REFAPI_SECRET_KEY": "abc"}, "REFAPI_SECRET_KEY must be at least 32"),
        # Served, with every https fetch of the proxy a 502.
        ({"REFAPI_PROXY_CA_FILE": "/nonexistent.pem"}, "REFAPI_PROXY_CA_FILE /non"),
        # Made as they were: an admin "notanemail", or one logging in with "short".
        ({"REFAPI_ADMIN_EMAIL": "notanemail", "REFAPI_ADMIN_PASSWORD": "a-long-one"},
         "REFAPI_ADMIN_EMAIL must be an email address"),
        ({"REFAPI_ADMIN_EMAIL": "a@b.co", "REFAPI_ADMIN_PASSWORD": "short"},
         "REFAPI_ADMIN_PASSWORD must be at least 8 characters"),
        ({"REFAPI_ADMIN_EMAIL": "a@b.co", "REFAPI_ADMIN_PASSWORD": "password1"},
         "REFAPI_ADMIN_PASSWORD is one of the 10,000 most common"),
    ],
    ids=[
        "a delay as long as half the timeout", "a short timeout", "workers",
        "an unknown hash", "a hash's bad parameter", "a short secret key",
        "a CA file that is not there", "an admin's email", "a short admin password",
        "a common admin password",
    ],
)  # fmt: skip
def test_a_server_setting_that_cannot_work_stops_the_start_in_one_line(env, named):
    with pytest.raises(SystemExit) as stopped:
        check_start({"DATABASE_URL": "sqlite:///unused.db", **env})
    said = str(stopped.value.code)
    assert said.startswith("refapi: ") and named in said
    assert "\n" not in said and "Traceback" not in said
    assert env.get("REFAPI_ADMIN_PASSWORD", "never said") not in said


def test_a_database_url_naming_a_file_that_is_no_database_stops_the_start(
    tmp_path,
):
    # It started, answered 503 for ever, and made its lock and buckets beside the
    # file: /etc/passwd.lock.
    named = tmp_path / "services"
    named.write_text("ftp 21/tcp\n")
    with pytest.raises(SystemExit) as stopped:
        check_start({"DATABASE_URL": f"sqlite:///{named}"})
    assert "which is not a SQLite database" in str(stopped.value.code)
    assert sorted(tmp_path.iterdir()) == [named]
    (tmp_path / "empty.db").touch()  # a database not yet made
    assert check_start({"DATABASE_URL": f"sqlite:///{tmp_path}/empty.db"})


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


def test_a_sqlite_url_without_its_slashes_says_what_form_is_expected():
    said = refused_start("sqlite:/data/x.db")
    assert said == (
        "refapi: DATABASE_URL sqlite:/data/x.db is not a SQLite URL: write"
        " sqlite:////data/x.db for the absolute path /data/x.db (four slashes),"
        " or sqlite:///data/x.db for data/x.db in the working folder"
    )
    relative = refused_start("sqlite:data/x.db")
    assert "write sqlite:///data/x.db for data/x.db in the working folder" in relative


def driver_hint(site: Path | None = None) -> str:
    """What a start on PostgreSQL says without psycopg, in a process of its own
    (refapi from ``site``, a wheel's install, else this checkout's)."""
    code = (
        "import sys; sys.modules['psycopg'] = None\n"  # the driver not installed
        "from refapi.startup import check_start\n"
        "check_start({'DATABASE_URL': 'postgresql://app@127.0.0.1:1/refapi'})\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)} if site else None
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True,
        timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1
    return done.stderr.strip()


def test_the_driver_hint_keeps_a_checkouts_editable_install():
    # This checkout's environment, where refapi is an editable install (make run):
    # `pip install '.[postgres]'` would replace it with a copy.
    root = Path(__file__).resolve().parents[1]
    pip = Path(sys.executable).with_name("pip")
    assert driver_hint() == (
        "refapi: DATABASE_URL names PostgreSQL, whose driver is not installed:"
        f" {pip} install -e '{root}[postgres]' --config-settings"
        " editable_mode=strict (docs/several-hosts.md)"
    )


# -- what a server's start needs besides its settings (check_serving) ------------


def refused_serving(config: Config, addresses: tuple = ()) -> str:
    with pytest.raises(SystemExit) as stopped:
        check_serving(config, addresses)
    said = str(stopped.value.code)
    assert "\n" not in said and said.startswith("refapi: ")
    return said


def test_a_data_folder_that_is_a_file_stops_the_start(tmp_path):
    blocked = tmp_path / "data"
    blocked.write_text("a file where the data folder should be")
    said = refused_serving(Config(data_dir=str(blocked)))
    assert said == (
        f"refapi: the data folder {blocked} (REFAPI_DATA_DIR) is a file: move it"
        " away, or set REFAPI_DATA_DIR to a folder"
    )
    under = refused_serving(Config(data_dir=str(blocked / "refapi")))
    assert under == (
        f"refapi: the data folder {blocked}/refapi (REFAPI_DATA_DIR) cannot be"
        f" made: {blocked} is a file; set REFAPI_DATA_DIR to a folder"
    )


def test_a_data_folder_the_file_system_will_not_make_stops_the_start(tmp_path):
    # /proc lets nobody make a folder, root included, whom access() lets write
    # anywhere: the start served with no admin.
    said = refused_serving(Config(data_dir="/proc/refapi-data"))
    assert said.startswith(
        "refapi: the data folder /proc/refapi-data (REFAPI_DATA_DIR) cannot be made"
    )
    # One that can be made is left for the start to make.
    check_serving(Config(data_dir=str(tmp_path / "new" / "data")))
    assert list(tmp_path.iterdir()) == []


def test_a_sqlite_path_under_a_file_stops_the_start(tmp_path):
    blocked = tmp_path / "notes.txt"
    blocked.write_text("a file")
    url = f"sqlite:///{blocked}/refapi.db"
    said = refused_serving(Config(database_url=url, data_dir=str(tmp_path)))
    assert said == (
        f"refapi: DATABASE_URL names {blocked}/refapi.db, but {blocked} is a file:"
        " no database can be made there; name a path in a folder"
    )
    folder = tmp_path / "db"
    folder.mkdir()
    url = f"sqlite:///{folder}"
    said = refused_serving(Config(database_url=url, data_dir=str(tmp_path)))
    assert said == (
        f"refapi: DATABASE_URL names {folder}, which is a folder: name the database"
        f" file, e.g. sqlite:///{folder}/refapi.db"
    )


def test_an_address_in_use_stops_the_start_and_names_refapi_bind(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        said = refused_serving(Config(data_dir=str(tmp_path)), (("127.0.0.1", port),))
    assert said == (
        f"refapi: cannot listen on 127.0.0.1:{port}: another process listens"
        " there; stop it, or set REFAPI_BIND to a free address"
        f" (REFAPI_BIND=127.0.0.1:{port + 1})"
    )


def test_a_start_that_can_work_passes_and_makes_nothing(tmp_path):
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    url = f"sqlite:///{tmp_path}/db/refapi.db"  # folders made by the first worker
    config = Config(database_url=url, data_dir=str(tmp_path / "data"))
    check_serving(config, (("127.0.0.1", port), 3, "/tmp/refapi.sock"))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("port", [65536, 99999, -1])
def test_a_port_out_of_range_stops_the_start_in_one_line(tmp_path, port):
    # gunicorn passes it on: bind raised OverflowError, a traceback.
    said = refused_serving(Config(data_dir=str(tmp_path)), (("127.0.0.1", port),))
    assert said == (
        f"refapi: cannot listen on 127.0.0.1:{port}: a port is 1 to 65535;"
        " set REFAPI_BIND"
    )
