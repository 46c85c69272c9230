"""Logs and metrics under a real gunicorn with several workers: every request counted
once whichever worker served it, one log line each, a storage outage seen in the
figures, what gunicorn refuses itself logged and counted like the rest, and the
metrics folder new at each start and gone after."""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest
import urllib3
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.conftest import shared
from tests.e2e.harness import (
    GunicornServer,
    exchange,
    raw_request,
    simultaneous,
    wait_until,
)

pytestmark = pytest.mark.e2e

METRICS = {"REFAPI_METRICS": "127.0.0.1"}
TODO = {"mount": "", "route": "/v1/todos/{id}", "method": "GET", "status": "200"}
CLOSE = {"Connection": "close"}  # a new connection each: every worker takes its share


def scrape(server: GunicornServer, pool: urllib3.PoolManager) -> dict[tuple, float]:
    response = pool.request("GET", server.url("/metrics"), headers=CLOSE)
    assert response.status == 200, response.data
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.data.decode())
        for sample in family.samples
    }


def value(found: dict[tuple, float], name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture(scope="module")
def metered(tmp_path_factory, shared_servers):
    """Four workers counting, shared by the tests that read only what they moved
    and the lines of their own requests."""
    yield from shared(tmp_path_factory, shared_servers, workers=4, env=METRICS)


def test_n_requests_add_exactly_n_and_log_one_line_each(metered, anon_pool):
    server = metered
    server.authorization  # noqa: B018  # the admin's login, before counting starts
    todo = {**TODO, "status": "200"}
    before = scrape(server, anon_pool)
    sent = 60
    ids = [f"counted-{n}" for n in range(sent)]

    # At once, so all four workers serve some (a sequence might find one alone).
    answers = simultaneous(
        server,
        [raw_request("GET", f"/v1/todos/{n % 20 + 1}", {"X-Request-Id": i})
         for n, i in enumerate(ids)],
    )  # fmt: skip

    assert [a.status for a in answers] == [200] * sent
    after = scrape(server, anon_pool)
    moved = value(after, "refapi_requests_total", **todo) - value(
        before, "refapi_requests_total", **todo
    )
    assert moved == sent
    duration = {k: v for k, v in todo.items() if k != "status"}
    count = "refapi_request_duration_seconds_count"
    assert value(after, count, **duration) - value(before, count, **duration) == sent
    lines = [r for r in server.requests() if r["requestId"] in ids]
    assert sorted(r["requestId"] for r in lines) == sorted(ids)  # once each
    assert {(r["route"], r["status"]) for r in lines} == {("/v1/todos/{id}", 200)}
    assert {r["caller"] for r in lines} == {"user:1"}  # the admin, never its token
    assert len({r["pid"] for r in lines}) == 4
    # gunicorn's own access log is off: nothing but the app's lines.
    assert 'HTTP/1.1" 200' not in server.log()
    assert server.log_failures() == []


def test_a_storage_outage_moves_storage_errors_and_health(gunicorn, anon_pool):
    server = gunicorn(workers=4, env=METRICS)
    authorization = server.authorization  # logged in while the database is there
    figures = scrape(server, anon_pool)
    errors_before = value(figures, "refapi_storage_errors_total", mount="")
    assert value(figures, "refapi_health_check", mount="", check="storage") == 1

    server.db_path.unlink()  # as `rm refapi.db`: writes fail at once on every worker
    refused = 0
    for n in range(12):
        response = anon_pool.request(
            "POST", server.url("/v1/articles"), json={"title": f"lost {n}"},
            headers={**CLOSE, "Authorization": authorization},
        )  # fmt: skip
        assert response.status == 503, response.data
        refused += 1
    probes = 8
    for _ in range(probes):  # each a 503 for a storage fault, counted as one
        health = anon_pool.request("GET", server.url("/healthz"), headers=CLOSE)
        assert health.status == 503

    figures = scrape(server, anon_pool)
    assert value(figures, "refapi_storage_errors_total", mount="") == (
        errors_before + refused + probes
    )
    assert value(figures, "refapi_health_check", mount="", check="storage") == 0
    assert value(figures, "refapi_health_check", mount="", check="rateLimit") == 1
    failures = [r for r in server.requests() if r["status"] == 503]
    assert len(failures) >= refused + probes
    stored = [
        line
        for line in server.access_log().splitlines()
        if "storage unavailable" in line
    ]
    assert len(stored) == refused  # each with its request's id as a field
    assert all('"requestId": "' in line for line in stored)


def test_what_gunicorn_refuses_is_logged_and_counted_as_the_app_does(
    metered, anon_pool
):
    server = metered
    bad = {"mount": "", "route": "", "method": "GET", "status": "400"}
    before = value(scrape(server, anon_pool), "refapi_requests_total", **bad)
    two_lengths = raw_request(
        "GET", "/v1/todos/1", {"Content-Length": "0", "content-length": "1"}
    )

    response = exchange(server, two_lengths, admin=False)

    assert response.status == 400
    request_id = response.getheader("X-Request-Id")
    wait_until(
        lambda: any(r["requestId"] == request_id for r in server.requests()),
        5,
        "the refusal's line",
    )
    [line] = [r for r in server.requests() if r["requestId"] == request_id]
    assert (line["route"], line["status"], line["caller"]) == (None, 400, None)
    assert line["bytes"] == len(response.body)
    after = scrape(server, anon_pool)
    assert value(after, "refapi_requests_total", **bad) - before == 1


def test_the_text_format_over_gunicorn(gunicorn, anon_pool):
    server = gunicorn(workers=2, env={"REFAPI_LOG_FORMAT": "text"})
    response = anon_pool.request("GET", server.url("/v1/todos/3"), headers=CLOSE)
    request_id = response.headers["X-Request-Id"]
    wait_until(lambda: request_id in server.access_log(), 5, "the request's line")
    [line] = [x for x in server.access_log().splitlines() if request_id in x]
    assert re.fullmatch(
        r"\S+Z INFO GET /v1/todos/3 200 requestId=\S+ traceId=- method=GET "
        r"route=/v1/todos/\{id\} status=200 durationMs=[\d.]+ bytes=\d+ caller=-",
        line,
    )


def figures_folder(server: GunicornServer) -> Path:
    """Where the master put the workers' figures, as it logged at start."""
    found = re.search(r"metrics: figures in (\S+)", server.error_log())
    assert found, "the master did not say where the figures are"
    return Path(found[1])


def test_the_metrics_folder_is_new_at_each_start_and_gone_after(gunicorn, anon_pool):
    first = gunicorn(workers=2, env=METRICS)
    for _ in range(3):
        anon_pool.request("GET", first.url("/v1/todos/1"), headers=CLOSE)
    assert value(scrape(first, anon_pool), "refapi_requests_total", **TODO) == 3
    folder = figures_folder(first)
    # In memory where there is a tmpfs: memory-mapped files on a full disk kill.
    assert folder.parent == Path("/dev/shm") or not Path("/dev/shm").is_dir()
    assert list(folder.glob("counts-*.keys"))
    first.stop()
    assert not folder.exists()  # removed when the server stopped

    second = gunicorn(workers=2, db_path=first.db_path, env=METRICS)
    assert value(scrape(second, anon_pool), "refapi_requests_total", **TODO) == 0
    assert figures_folder(second) != folder


def test_a_preloaded_app_counts_in_the_folder_that_outlives_its_workers(
    gunicorn, anon_pool
):
    # --preload makes the app in the master before gunicorn's hooks run: the folder
    # is made first, as the settings are read, and a worker that ends (its exit
    # handlers run) leaves it to the others (folders.py).
    server = gunicorn(workers=2, env=METRICS, extra_args=("--preload",))
    for _ in range(4):
        anon_pool.request("GET", server.url("/v1/todos/1"), headers=CLOSE)
    folder = figures_folder(server)
    assert value(scrape(server, anon_pool), "refapi_requests_total", **TODO) == 4
    assert list(folder.glob("counts-*.keys"))

    server.replace_worker(how=signal.SIGTERM)
    assert folder.is_dir()
    for _ in range(2):
        anon_pool.request("GET", server.url("/v1/todos/1"), headers=CLOSE)
    assert value(scrape(server, anon_pool), "refapi_requests_total", **TODO) == 6
    server.stop()
    assert not folder.exists()


def test_a_dead_workers_health_is_forgotten(gunicorn, anon_pool):
    server = gunicorn(workers=2, env=METRICS)
    for _ in range(6):  # health on both workers, each its own gauge file
        anon_pool.request("GET", server.url("/healthz"), headers=CLOSE)
    folder = figures_folder(server)
    gauges = {p.name for p in folder.glob("health-*.keys")}
    assert gauges, "no worker wrote its health gauge"

    victim = min(int(name.split("-")[1]) for name in gauges)  # health-<pid>-...
    assert victim in server.serving_pids()
    server.replace_worker(victim)

    assert not list(folder.glob(f"health-{victim}-*"))
    assert list(folder.glob(f"counts-{victim}-*.keys"))  # its counts stay
