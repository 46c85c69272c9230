"""deploy/compose.yaml (docs/operating.md, "Two hosts behind nginx, with
Compose"), as Compose reads it: two refapi hosts behind nginx on one PostgreSQL.

Its images cannot be pulled here, so Compose checks the file and prints it
resolved (``config``), which needs no daemon; the image itself is tested in
test_image.py. Without docker-compose (Debian's, which ``make system-tools``
installs) or the compose plugin, the tests skip, naming that target, and fail under
``REFAPI_REQUIRE_SERVICES=1``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml  # PyYAML, which schemathesis brings

from refapi.config import VERSION
from tests.conftest import without_system_tool
from tests.image.conftest import DOCKER

pytestmark = [pytest.mark.e2e]

COMPOSE = Path(__file__).resolve().parents[2] / "deploy" / "compose.yaml"
SECRETS = {
    "POSTGRES_PASSWORD": "pg-secret",
    "REFAPI_SECRET_KEY": "key-secret-" + "k" * 32,
}
DOCKER_COMPOSE = "docker-compose"  # Debian's (v1), found on PATH


def compose_command() -> list[str]:
    """docker-compose, else the client's compose plugin, else a skip."""
    found = shutil.which(DOCKER_COMPOSE)
    if found:
        return [found]
    try:
        plugin = subprocess.run(
            [DOCKER, "compose", "version"], capture_output=True, timeout=30
        )
    except OSError:  # no client at all
        plugin = None
    if plugin is None or plugin.returncode != 0:
        without_system_tool("docker-compose or docker compose")
    return [DOCKER, "compose"]


def compose(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """docker-compose (v1, Debian's) or the compose plugin, on deploy/compose.yaml,
    with no variable but ``env``'s: an empty .env file, so a person's deploy/.env
    does not answer for them."""
    command = compose_command()
    environ = {k: v for k, v in os.environ.items() if k not in SECRETS}
    (tmp_path / ".env").write_text("")
    files = ["--env-file", str(tmp_path / ".env"), "--file", str(COMPOSE)]
    return subprocess.run(
        [*command, *files, *args], env={**environ, **env},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_compose_needs_the_database_password_and_the_secret_key(tmp_path):
    assert compose(tmp_path, "config", "-q", **SECRETS).returncode == 0
    for name in SECRETS:
        others = {key: value for key, value in SECRETS.items() if key != name}
        refused = compose(tmp_path, "config", "-q", **others)
        assert refused.returncode != 0 and f"set {name}" in refused.stderr


def test_compose_puts_two_hosts_behind_nginx_on_one_postgresql(tmp_path):
    done = compose(tmp_path, "config", **SECRETS)
    assert done.returncode == 0, done.stderr
    services = yaml.safe_load(done.stdout)["services"]
    assert set(services) == {"db", "app1", "app2", "nginx"}
    published = [name for name, service in services.items() if "ports" in service]
    assert published == ["nginx"]
    hosts = [services["app1"], services["app2"]]
    assert hosts[0]["environment"] == hosts[1]["environment"]
    env = hosts[0]["environment"]
    assert env["REFAPI_TRUST_PROXY"] == "1"
    assert env["REFAPI_SECRET_KEY"] == SECRETS["REFAPI_SECRET_KEY"]
    assert env["DATABASE_URL"] == "postgresql://refapi@db:5432/refapi"
    assert env["PGPASSWORD"] == services["db"]["environment"]["POSTGRES_PASSWORD"]
    assert {host["image"] for host in hosts} == {f"refapi:{VERSION}"}
    assert hosts[0]["volumes"] != hosts[1]["volumes"]  # a data folder each
