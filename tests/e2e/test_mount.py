"""The gateway example under gunicorn: /prod and /dev in every worker of one server.

Each worker builds both instances at boot; both databases are made then, and each
instance's secret key is kept in its own database, so every worker signs /dev's
cursors alike and none of them is good at /prod. Started as `make run-gateway` starts
it beside `make run`'s server, it keeps its files (each instance's admin password
file, its control socket) apart. In process: tests/examples/test_gateway.py.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import urllib3

from tests.conftest import TEST_AUTH
from tests.e2e.harness import GUNICORN, ROOT, STOP_SECONDS, wait_until

pytestmark = pytest.mark.e2e


def test_gunicorn_serves_prod_and_dev_from_one_process(gunicorn, anon_pool, tmp_path):
    pool = anon_pool
    prod_db, dev_db = tmp_path / "prod.db", tmp_path / "dev.db"
    server = gunicorn(
        workers=2,
        db_path=prod_db,
        env={
            "PROD_DATABASE_URL": f"sqlite:///{prod_db}",
            "DEV_DATABASE_URL": f"sqlite:///{dev_db}",
        },
        app="examples.gateway:create_gateway()",
        health="/prod/healthz",
    )
    assert prod_db.exists() and dev_db.exists()  # made at start, before any request
    assert pool.request("GET", server.url("/dev/healthz")).status == 200

    # Each instance has its own users: a token of /prod means nothing at /dev.
    prod_admin = {"Authorization": server.login("/prod")}
    dev_admin = {"Authorization": server.login("/dev")}
    created = pool.request(
        "POST", server.url("/prod/v1/articles"), json={"title": "in prod"},
        headers=prod_admin,
    )  # fmt: skip
    assert created.status == 201
    location = created.headers["Location"]
    assert location == f"/prod/v1/articles/{created.json()['id']}"
    assert pool.request("GET", server.url(location)).json() == created.json()
    assert pool.request("GET", server.url("/dev/v1/articles")).json()["data"] == []
    foreign = pool.request(
        "POST", server.url("/dev/v1/articles"), json={"title": "x"}, headers=prod_admin
    )
    assert foreign.status == 401
    dev_created = pool.request(
        "POST", server.url("/dev/v1/articles"), json={"title": "in dev"},
        headers=dev_admin,
    )  # fmt: skip
    assert dev_created.headers["Location"].startswith("/dev/v1/articles/")

    page = pool.request("GET", server.url("/dev/v1/items?limit=2"))
    cursor = page.headers["X-Next-Cursor"]
    next_url = f"/dev/v1/items?cursor={cursor}&limit=2"
    assert page.headers["Link"] == f'<{next_url}>; rel="next"'
    # New connections, so any worker may answer: each reads /dev's key from dev.db.
    for _ in range(4):
        again = pool.request(
            "GET", server.url(next_url), headers={"Connection": "close"}
        )
        assert again.status == 200
        assert [item["id"] for item in again.json()["data"]] == [3, 4]
    refused = pool.request("GET", server.url(f"/prod/v1/items?cursor={cursor}"))
    assert refused.status == 400 and refused.json()["code"] == "INVALID_CURSOR"

    unmapped = pool.request("GET", server.url("/staging/v1/items"))
    assert unmapped.status == 404
    assert unmapped.json()["code"] == "NOT_FOUND"
    assert unmapped.headers["X-Request-Id"]
    assert unmapped.headers["X-Content-Type-Options"] == "nosniff"
    assert server.log_failures() == []


# -- the gateway's files beside `make run`'s ---------------------------------------


class Served:
    """A gunicorn started as the Makefile starts it, with ``gunicorn.conf.py``'s
    control socket, in a folder of its own standing for the checkout."""

    def __init__(
        self, checkout: Path, app: str, env: dict[str, str], config: Path
    ) -> None:
        environ = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("REFAPI_", "GUNICORN_"))
            and key not in ("DATABASE_URL", "PROD_DATABASE_URL", "DEV_DATABASE_URL")
        }
        environ.update(
            REFAPI_PASSWORD_HASH=TEST_AUTH["password_hash"], PYTHONUNBUFFERED="1", **env
        )
        self.log = checkout / f"gunicorn-{len(list(checkout.glob('*.log')))}.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [
                    str(GUNICORN), "--config", str(config),
                    "--pythonpath", str(ROOT), "--bind", "127.0.0.1:0",
                    "--workers", "1", app,
                ],
                cwd=checkout, env=environ, stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip

    def url(self, path: str) -> str:
        port = re.search(r"Listening at: http://127.0.0.1:(\d+)", self.log.read_text())
        assert port, self.log.read_text()
        return f"http://127.0.0.1:{port.group(1)}{path}"

    def ready(self, health: str, control_socket: Path) -> None:
        def answering() -> bool:
            assert self.process.poll() is None, self.log.read_text()
            listening = "Listening at" in self.log.read_text()
            if not (listening and is_socket(control_socket)):
                return False
            try:
                response = urllib3.request("GET", self.url(health), retries=False)
            except urllib3.exceptions.HTTPError:
                return False
            return response.status == 200

        wait_until(answering, 20, f"{health} and the control socket {control_socket}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def is_socket(path: Path) -> bool:
    return path.exists() and stat.S_ISSOCK(path.stat().st_mode)


def accepts(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as probe:
        probe.settimeout(5)
        return probe.connect_ex(str(path)) == 0


@pytest.fixture
def serve(tmp_path) -> Iterator:
    started: list[Served] = []

    def start(
        app: str, env: dict[str, str], config: Path = ROOT / "gunicorn.conf.py"
    ) -> Served:
        started.append(Served(tmp_path, app, env, config))
        return started[-1]

    yield start
    for served in reversed(started):
        served.stop()


def login(server: Served, prefix: str, password_file: Path) -> int:
    email, password = password_file.read_text().splitlines()[:2]
    body = {"email": email, "password": password}
    return urllib3.request(
        "POST", server.url(f"{prefix}/api/login"), json=body, retries=False
    ).status


def test_the_gateway_leaves_make_runs_admin_password_and_control_socket_alone(
    serve, tmp_path
):
    data = tmp_path / "data"
    run = serve("refapi:create_app()", {})  # as `make run`
    run.ready("/healthz", data / "gunicorn.ctl")
    run_password = (data / "admin-password.txt").read_text()
    run_socket = (data / "gunicorn.ctl").stat().st_ino

    # As `make run-gateway`, with the settings and the data folder the Makefile
    # gives it.
    makefile = (ROOT / "Makefile").read_text()
    folder = re.search(
        r"^run-gateway: export REFAPI_DATA_DIR := (\S+)$", makefile, re.M
    )
    assert folder and folder.group(1) == "data/gateway"
    command = re.search(
        r"^\t\$\(BIN\)/gunicorn --config (\S+) '(examples\.gateway:\S+)'$",
        makefile, re.M,
    )  # fmt: skip
    assert command and command[2] == "examples.gateway:create_gateway()"
    gateway = serve(command[2], {"REFAPI_DATA_DIR": folder[1]}, ROOT / command[1])
    gateway.ready("/prod/healthz", data / "gateway" / "gunicorn.ctl")
    # Its start lines name its URLs and each instance's password file.
    said = gateway.log.read_text()
    base = gateway.url("")
    for prefix in ("/prod", "/dev"):
        assert f"open {base}{prefix}/docs (the API) and {base}{prefix}/ui/" in said
        assert (
            f"the admin of {prefix}: admin@localhost, its password on the second"
            f" line of data/gateway/{prefix[1:]}/admin-password.txt"
        ) in said
    assert f"open {base}/docs" not in said
    assert (data / "admin-password.txt").read_text() == run_password
    assert login(run, "", data / "admin-password.txt") == 200
    for prefix in ("/prod", "/dev"):
        own = data / "gateway" / prefix[1:] / "admin-password.txt"
        assert own.read_text() != run_password
        assert login(gateway, prefix, own) == 200
    prods = data / "gateway" / "prod" / "admin-password.txt"
    assert login(gateway, "/dev", prods) == 401

    # Each server has its own control socket, and stopping one leaves the other's.
    assert (data / "gunicorn.ctl").stat().st_ino == run_socket
    assert accepts(data / "gunicorn.ctl") and accepts(data / "gateway" / "gunicorn.ctl")
    gateway.stop()
    assert is_socket(data / "gunicorn.ctl") and accepts(data / "gunicorn.ctl")
    assert not (data / "gateway" / "gunicorn.ctl").exists()
