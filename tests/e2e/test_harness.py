"""The harness itself: a server it returns is one every worker of which serves."""

from __future__ import annotations

import pytest

from tests.e2e.harness import raw_request, simultaneous, workers_that_answered

pytestmark = pytest.mark.e2e


def test_a_started_server_is_served_by_every_worker_even_when_some_boot_late(
    gunicorn, tmp_path
):
    # Three of the four workers load the app two seconds after the first: until they
    # have, the first answers every request alone (health included).
    server = gunicorn(
        app="tests.e2e.slow_boot:create_app()",
        env={"SLOW_BOOT_MARKER": str(tmp_path / "first-worker")},
    )
    # Requests in flight at once (see ``simultaneous``): each serving worker takes
    # one, then the rest go to whichever is free; the first would answer all of
    # them long before one still loading could take any.
    simultaneous(server, [raw_request("GET", "/v1/todos/1")] * 8 * server.workers)
    assert len(workers_that_answered(server, "/v1/todos/1")) == server.workers


def test_a_replaced_worker_serves_once_the_harness_returns_it(gunicorn, tmp_path):
    # The marker is made by the first worker: the replacement too loads late.
    server = gunicorn(
        app="tests.e2e.slow_boot:create_app()",
        env={"SLOW_BOOT_MARKER": str(tmp_path / "first-worker")},
    )
    before = server.serving_pids()
    replacement = server.replace_worker()
    assert replacement not in before
    assert len(server.serving_pids() & before) == server.workers - 1
    assert len(server.worker_pids()) == server.workers + 1  # gunicorn's log agrees
    simultaneous(server, [raw_request("GET", "/v1/todos/1")] * 8 * server.workers)
    assert str(replacement) in workers_that_answered(server, "/v1/todos/1")
