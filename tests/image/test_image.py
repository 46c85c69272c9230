"""The container image (Dockerfile; docs/operating.md, "Run it in a container"),
built by ``make image`` and run by a real Docker daemon.

The base is Debian bookworm's own python3 (3.11, as in the default base,
python:3.11-slim-bookworm, which no registry here serves): debootstrap makes it
from apt's mirror once, and it is kept in Docker as ``refapi-test-base:bookworm``
for the next run. The image is built on it under a tag of this run's, which goes
at the end (its layers stay, so the next build is quick). Its containers run on
the host's network with ``REFAPI_BIND`` on a free loopback port, so nothing goes
through a bridge and no address but loopback is reached.

Without a daemon (``make docker`` installs and starts one), debootstrap or root,
the tests skip with the reason, and fail under ``REFAPI_REQUIRE_SERVICES=1``.
They run in ``make test``'s first pass only: the image does not depend on the
Python or the backend of the pass.
"""

from __future__ import annotations

import http.client
import io
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml  # PyYAML, which schemathesis brings

from refapi.config import VERSION
from tests.conftest import skip_or_fail
from tests.postgres import fresh_schema

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
BASE = "refapi-test-base:bookworm"
UID = 10001
# What a make running these tests passes down (tests/meta/test_makefile.py).
INHERITED = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "VENV", "PYTHON"}
READY_SECONDS = 30.0
STOP_SECONDS = 10.0


def run(*args: str | Path, timeout: float = 60, **kwargs) -> str:
    """Run a command to its end (bounded); its output, or a failure showing it."""
    done = subprocess.run(
        [str(arg) for arg in args], capture_output=True, text=True,
        timeout=timeout, check=False, **kwargs,
    )  # fmt: skip
    assert done.returncode == 0, f"{args}: {done.stdout}{done.stderr}"
    return done.stdout


def make(*args: str, timeout: float = 60) -> str:
    """make in the checkout, with the environment these tests run in."""
    env = {k: v for k, v in os.environ.items() if k not in INHERITED}
    venv = f"VENV={Path(sys.prefix).name}"
    return run(
        "make", "--no-print-directory", *args, venv, cwd=ROOT, env=env, timeout=timeout
    )


@pytest.fixture(scope="module")
def docker() -> str:
    """Debian's client (a newer one earlier on PATH may not speak its daemon's API),
    once a daemon answers."""
    client = "/usr/bin/docker" if os.path.exists("/usr/bin/docker") else "docker"
    try:
        subprocess.run([client, "info"], capture_output=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        skip_or_fail("no Docker daemon answers (`make docker` starts one)")
    return client


def debian_mirror() -> str | None:
    """The mirror apt itself uses for bookworm, from its sources (the one-line
    format and deb822's)."""
    folder = Path("/etc/apt")
    for path in [folder / "sources.list", *sorted(folder.glob("sources.list.d/*"))]:
        if path.suffix not in (".list", ".sources"):
            continue
        text = path.read_text() if path.exists() else ""
        for line in text.splitlines():  # deb [options] URI suite components
            words = re.sub(r"\[.*?\]", "", line).split()
            if words[:1] == ["deb"] and words[2:3] == ["bookworm"]:
                return words[1]
        for stanza in text.split("\n\n"):
            fields = dict(re.findall(r"^(\w+):\s*(.*)$", stanza, re.MULTILINE))
            if "bookworm" in fields.get("Suites", "").split():
                return fields.get("URIs", "").split()[0]
    return None


@pytest.fixture(scope="module")
def base_image(docker: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Debian bookworm with python3 and its venv module, made once and kept."""
    inspected = subprocess.run([docker, "image", "inspect", BASE], capture_output=True)
    if inspected.returncode == 0:
        return BASE
    debootstrap = shutil.which("debootstrap") or "/usr/sbin/debootstrap"
    mirror = debian_mirror()
    if not os.path.exists(debootstrap) or os.geteuid() != 0 or not mirror:
        skip_or_fail("debootstrap, root and apt's bookworm mirror make the base")
    root = tmp_path_factory.mktemp("base") / "root"
    try:
        run(
            debootstrap, "--variant=minbase",
            "--include=python3,python3-venv,ca-certificates", "bookworm", root, mirror,
            timeout=600,
        )  # fmt: skip
        # The packages and their lists serve no one in the image.
        for folder in (root / "var/cache/apt/archives", root / "var/lib/apt/lists"):
            for path in folder.glob("*.*"):
                path.unlink()
        with subprocess.Popen(
            ["tar", "--numeric-owner", "-C", root, "-c", "."], stdout=subprocess.PIPE
        ) as tar:
            run(docker, "import", "-", BASE, stdin=tar.stdout, timeout=300)
        assert tar.returncode == 0
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return BASE


@pytest.fixture(scope="module")
def image(docker: str, base_image: str) -> Iterator[str]:
    """The image ``make image`` builds on the base, under a tag of this run's."""
    tag = f"refapi-test:{secrets.token_hex(4)}"
    make("image", f"BASE_IMAGE={base_image}", f"IMAGE={tag}", timeout=600)
    yield tag
    # Its layers stay: the next run's build finds them.
    run(docker, "rmi", "--no-prune", tag)


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


# -- the image -------------------------------------------------------------------


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
    # The host's view of the container's processes: gunicorn's master, pid 1
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
        assert "Shutting down: Master" in container.logs()
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


# -- the compose file ------------------------------------------------------------

COMPOSE = ROOT / "deploy" / "compose.yaml"
SECRETS = {"POSTGRES_PASSWORD": "pg-secret", "REFAPI_SECRET_KEY": "key-secret"}


def compose(
    docker: str, tmp_path: Path, *args: str, **env: str
) -> subprocess.CompletedProcess:
    """docker-compose (v1, Debian's) or the compose plugin, on deploy/compose.yaml,
    with no variable but ``env``'s: an empty .env file, so a person's deploy/.env
    does not answer for them."""
    command = [shutil.which("docker-compose") or ""]
    if not command[0]:
        plugin = subprocess.run([docker, "compose", "version"], capture_output=True)
        if plugin.returncode != 0:
            skip_or_fail("neither docker-compose nor docker compose (`make docker`)")
        command = [docker, "compose"]
    environ = {k: v for k, v in os.environ.items() if k not in SECRETS}
    (tmp_path / ".env").write_text("")
    files = ["--env-file", str(tmp_path / ".env"), "--file", str(COMPOSE)]
    return subprocess.run(
        [*command, *files, *args], env={**environ, **env},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_compose_needs_the_database_password_and_the_secret_key(docker, tmp_path):
    assert compose(docker, tmp_path, "config", "-q", **SECRETS).returncode == 0
    for name in SECRETS:
        others = {key: value for key, value in SECRETS.items() if key != name}
        refused = compose(docker, tmp_path, "config", "-q", **others)
        assert refused.returncode != 0 and f"set {name}" in refused.stderr


def test_compose_puts_two_hosts_behind_nginx_on_one_postgresql(docker, tmp_path):
    done = compose(docker, tmp_path, "config", **SECRETS)
    assert done.returncode == 0, done.stderr
    services = yaml.safe_load(done.stdout)["services"]
    assert set(services) == {"db", "app1", "app2", "nginx"}
    assert [name for name, service in services.items() if "ports" in service] == [
        "nginx"
    ]
    hosts = [services["app1"], services["app2"]]
    assert hosts[0]["environment"] == hosts[1]["environment"]
    env = hosts[0]["environment"]
    assert env["REFAPI_TRUST_PROXY"] == "1"
    assert env["REFAPI_SECRET_KEY"] == SECRETS["REFAPI_SECRET_KEY"]
    assert env["DATABASE_URL"] == "postgresql://refapi@db:5432/refapi"
    assert env["PGPASSWORD"] == services["db"]["environment"]["POSTGRES_PASSWORD"]
    assert {host["image"] for host in hosts} == {f"refapi:{VERSION}"}
    assert hosts[0]["volumes"] != hosts[1]["volumes"]  # a data folder each
