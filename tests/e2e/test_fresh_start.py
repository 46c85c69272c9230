"""``refapi reset --all`` while a server serves with two workers, on each backend and
each server (gunicorn, Granian):
a credential both workers remember is refused by both at once, a drained
register bucket is full again, the first admin logs in with its password as
before, and every other account is gone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from refapi.config import shown_url
from tests.conftest import ADMIN
from tests.e2e.harness import ROOT, raw_request, simultaneous, workers_that_served
from tests.postgres import fresh_schema

pytestmark = pytest.mark.e2e

JSON_HEADERS = {"Content-Type": "application/json"}
ANN = {"email": "ann@example.com", "password": "ann's password"}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request, tmp_path) -> Iterator[str]:
    """The served database, made before the server starts and dropped after it
    stops (PostgreSQL: a schema of the tests' server)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'refapi.db'}"
        return
    with fresh_schema("fresh") as url:
        yield url


def register(server, anon_pool, account: dict[str, str]) -> int:
    """The status of registering ``account``, with no credential."""
    return anon_pool.request(
        "POST", server.url("/api/users"), body=json.dumps(account),
        headers=JSON_HEADERS,
    ).status  # fmt: skip


def login(server, anon_pool, account: dict[str, str]):
    return anon_pool.request(
        "POST", server.url("/api/login"), body=json.dumps(account),
        headers=JSON_HEADERS,
    )  # fmt: skip


def statuses_on_every_worker(server, authorization: str, name: str) -> set[int]:
    """The statuses of requests at once with ``authorization``, which both workers
    served (so both remember the credential, when it is valid)."""
    # Four at once take both of gunicorn's sync workers. Granian's workers take
    # connections as the kernel hands them out: four all went to one worker in 3
    # of 15 tries, sixteen reached both in 15 of 15 (and most of their threads).
    ids = [f"{name}-{n}" for n in range(4 if server.server == "gunicorn" else 16)]
    requests = [
        raw_request("GET", "/api/users", {"Authorization": authorization,
                                          "X-Request-Id": request_id})
        for request_id in ids
    ]  # fmt: skip
    answers = simultaneous(server, requests, admin=False)
    assert len(workers_that_served(server, ids)) == 2
    return {answer.status for answer in answers}


def test_reset_all_while_serving_leaves_the_first_admin_alone(
    gunicorn, database_url, anon_pool, server_name
):
    server = gunicorn(
        workers=2, database_url=database_url, env={"REFAPI_REGISTER_RATE_LIMIT": "2"},
        server=server_name,
    )  # fmt: skip
    assert register(server, anon_pool, ANN) == 201
    assert register(server, anon_pool, {**ANN, "email": "bob@example.com"}) == 201
    drained = {**ANN, "email": "carl@example.com"}
    assert register(server, anon_pool, drained) == 429
    ann = "Bearer " + login(server, anon_pool, ANN).json()["token"]
    admin = server.authorization
    assert statuses_on_every_worker(server, ann, "ann-before") == {200}
    assert statuses_on_every_worker(server, admin, "admin-before") == {200}

    # `make reset-all`, from another process while the workers serve.
    environ = {k: v for k, v in os.environ.items() if not k.startswith("REFAPI_")}
    reset = subprocess.run(
        [sys.executable, "-m", "refapi", "reset", "--all"],
        cwd=ROOT, env={**environ, "DATABASE_URL": database_url},
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert reset.returncode == 0, reset.stderr
    assert reset.stdout.startswith(f"reset {shown_url(database_url)} to the seed, ")

    assert statuses_on_every_worker(server, ann, "ann-after") == {401}
    assert statuses_on_every_worker(server, admin, "admin-after") == {401}
    assert register(server, anon_pool, drained) == 201  # the bucket is full again
    again = server.login()  # the first admin, with the same password
    users = anon_pool.request(
        "GET", server.url("/api/users"), headers={"Authorization": again}
    ).json()["data"]
    assert [user["email"] for user in users] == [ADMIN["email"], drained["email"]]
    assert login(server, anon_pool, ANN).status == 401  # ann is gone
    assert server.log_failures() == []
