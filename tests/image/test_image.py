"""The container image (Dockerfile; docs/operating.md, "Run it in a container"),
built by ``make image`` and run by a real Docker daemon.

The base is Debian bookworm's own python3 (3.11, as in the default base,
python:3.11-slim-bookworm, which no registry here serves): debootstrap makes it
from apt's mirror once, and it is kept in Docker as ``refapi-test-base:bookworm``
for the next run. The image is built on it under a tag of this run's, which goes
at the end (its layers stay, so the next build is quick). Its containers run on
the host's network with ``REFAPI_BIND`` on a free loopback port, so nothing goes
through a bridge and no address but loopback is reached.

Without a daemon or debootstrap (``make system-tools`` installs both and starts
the daemon), the tests skip naming that target; without root, with the reason.
Either fails under ``REFAPI_REQUIRE_SERVICES=1``.
They run in ``make test``'s first pass only: the image does not depend on the
Python or the backend of the pass.
"""

from __future__ import annotations

import http.client
import io
import json
import re
import secrets
import socket
import subprocess
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from refapi.config import VERSION
from tests.image.conftest import BASE, ROOT, make, run
from tests.postgres import fresh_schema

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

UID = 10001
READY_SECONDS = 30.0
STOP_SECONDS = 10.0


def inspect(docker: str, name: str) -> dict:
    return json.loads(run(docker, "inspect", name))[0]


def uids(pid: int) -> set[int]:
    """A process's real, effective, saved and file-system user ids."""
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"^Uid:\s+(.*)$", status, re.MULTILINE)
    assert found, status
    return set(map(int, found[1].split()))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def request(
    port: int, method: str, path: str, body: dict | None = None, token: str = ""
) -> tuple[int, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Content-Type": "application/json"} if body is not None else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        data = json.dumps(body) if body is not None else None
        connection.request(method, path, body=data, headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        connection.close()


class Container:
    """One container of the image on the host's network, on a loopback port."""

    def __init__(self, docker: str, image: str, volume: str, **env: str) -> None:
        self.docker = docker
        self.port = free_port()
        settings = {"REFAPI_BIND": f"127.0.0.1:{self.port}", "REFAPI_WORKERS": "2"}
        settings.update(env)
        self.id = run(
            docker, "run", "--detach", "--network=host", f"--volume={volume}:/data",
            "--health-interval=1s", "--health-start-period=1s",
            *[f"--env={key}={value}" for key, value in settings.items()], image,
        ).strip()  # fmt: skip

    def wait_healthy(self) -> None:
        """Until Docker's HEALTHCHECK, the image's own, says healthy (bounded)."""
        deadline = time.monotonic() + READY_SECONDS
        while time.monotonic() < deadline:
            state = inspect(self.docker, self.id)["State"]
            assert state["Running"], self.logs()
            if state.get("Health", {}).get("Status") == "healthy":
                return
            time.sleep(0.2)
        pytest.fail(f"not healthy in {READY_SECONDS} s:\n{self.logs()}")

    def logs(self) -> str:
        done = subprocess.run(
            [self.docker, "logs", self.id], capture_output=True, text=True, timeout=30
        )
        return done.stdout + done.stderr

    def stop(self) -> tuple[int, float]:
        """SIGTERM, as `docker stop` sends; the exit code and the seconds it took."""
        started = time.monotonic()
        run(self.docker, "kill", "--signal=TERM", self.id)
        code = run(self.docker, "wait", self.id, timeout=STOP_SECONDS * 3)
        return int(code), time.monotonic() - started

    def remove(self) -> None:
        subprocess.run(
            [self.docker, "rm", "--force", self.id], capture_output=True, timeout=60
        )


@pytest.fixture
def volume(docker: str) -> Iterator[str]:
    name = f"refapi-test-{secrets.token_hex(4)}"
    run(docker, "volume", "create", name)
    yield name
    run(docker, "volume", "rm", "--force", name)


@pytest.fixture
def container(docker: str, image: str, volume: str) -> Iterator[Container]:
    started = Container(docker, image, volume)
    try:
        started.wait_healthy()
        yield started
    finally:
        started.remove()


def test_the_build_context_is_the_downloaded_wheels_alone(docker, image):
    # The context .dockerignore lets through, copied whole into an empty image.
    tag = f"refapi-test-context:{secrets.token_hex(4)}"
    run(
        docker, "build", "--network=none", "--tag", tag, "--file", "-", ROOT,
        input="FROM scratch\nCOPY . /context/\n",
    )  # fmt: skip
    try:
        created = run(docker, "create", tag, "none").strip()
        try:
            exported = subprocess.run(
                [docker, "export", created], capture_output=True, timeout=60, check=True
            )
        finally:
            run(docker, "rm", created)
    finally:
        run(docker, "rmi", tag)
    with tarfile.open(fileobj=io.BytesIO(exported.stdout)) as tar:
        names = {name.rstrip("/") for name in tar.getnames()}
    sent = {name for name in names if name.startswith("context/")}
    assert any(name.startswith("context/dist/image/refapi-") for name in sent)
    # No data/, .git or .venv: nothing but the wheels and their folder's parent.
    outside = {name for name in sent if not name.startswith("context/dist/image")}
    assert outside == {"context/dist"}


def test_the_image_is_tagged_and_labelled_and_runs_as_its_user(docker, image):
    config = inspect(docker, image)["Config"]
    labels = config["Labels"]
    assert labels["org.opencontainers.image.version"] == VERSION
    assert labels["org.opencontainers.image.licenses"] == "MIT"
    assert labels["org.opencontainers.image.title"] == "refapi"
    assert labels["org.opencontainers.image.base.name"] == BASE
    assert config["User"] == f"{UID}:{UID}"
    env = dict(line.split("=", 1) for line in config["Env"])
    assert env["REFAPI_BIND"] == "0.0.0.0:8000"
    assert env["REFAPI_SERVER"] == "granian"
    assert env["REFAPI_DATA_DIR"] == "/data"
    assert env["DATABASE_URL"] == "sqlite:////data/refapi.db"
    assert set(config["ExposedPorts"]) == {"8000/tcp"}
    assert set(config["Volumes"]) == {"/data"}
    assert config["Healthcheck"]["Test"][:3] == ["CMD", "python", "-c"]
    # Left to itself, make image tags the image with the version.
    said = make("-n", "image")
    assert f"--tag refapi:{VERSION} ." in said.replace("\\\n", " ")


def test_it_serves_healthz_and_no_process_of_it_is_root(container):
    status, body = request(container.port, "GET", "/healthz")
    assert (status, body["status"], body["version"]) == (200, "ok", VERSION)
    # The host's view of the container's processes: Granian's main process, pid 1
    # inside, and its workers.
    master = inspect(container.docker, container.id)["State"]["Pid"]
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    assert len(children) == 2  # REFAPI_WORKERS
    for pid in [master, *map(int, children)]:
        assert uids(pid) == {UID}, pid


def test_sigterm_stops_it_promptly_with_exit_status_0(docker, image, volume):
    container = Container(docker, image, volume)
    try:
        container.wait_healthy()
        code, seconds = container.stop()
        assert code == 0, container.logs()
        assert seconds < STOP_SECONDS  # docker stop would have to SIGKILL it
        assert "Granian shutdown completed" in container.logs()
    finally:
        container.remove()


def test_a_write_survives_a_new_container_on_the_same_volume(docker, image, volume):
    first = Container(docker, image, volume)
    try:
        first.wait_healthy()
        # The first admin's password, from the volume (the log names the file).
        password = run(docker, "exec", first.id, "sed", "-n", "2p",
                       "/data/admin-password.txt").strip()  # fmt: skip
        login = {"email": "admin@localhost", "password": password}
        status, body = request(first.port, "POST", "/api/login", login)
        assert status == 200, body
        status, article = request(
            first.port, "POST", "/v1/articles", {"title": "Kept"}, body["token"]
        )
        assert status == 201, article
        assert first.stop()[0] == 0
    finally:
        first.remove()
    second = Container(docker, image, volume)
    try:
        second.wait_healthy()
        status, kept = request(second.port, "GET", f"/v1/articles/{article['id']}")
        assert (status, kept["title"]) == (200, "Kept")
        # The same admin, made once: its password still logs in.
        assert request(second.port, "POST", "/api/login", login)[0] == 200
    finally:
        second.remove()


def test_it_serves_from_postgresql_with_database_url(docker, image, volume):
    # The machine's PostgreSQL on loopback, a schema of this test's.
    with fresh_schema("image") as url:
        container = Container(docker, image, volume, DATABASE_URL=url)
        try:
            container.wait_healthy()
            status, body = request(container.port, "GET", "/healthz")
            assert (status, body["checks"]["storage"]) == (200, "ok")
        finally:
            container.remove()
