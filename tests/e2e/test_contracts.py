"""The payment, rate-limit and cursor contracts hold across four gunicorn workers.

``simultaneous`` (in the harness) makes the concurrency certain rather than likely:
four requests are in flight at once on four workers.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
import subprocess
import sys
import time

import pytest

from tests.e2e.harness import (
    HOLD_SECONDS,
    ROOT,
    raw_request,
    simultaneous,
    workers_that_answered,
    workers_that_served,
)

pytestmark = pytest.mark.e2e

PAYMENT = json.dumps({"amount": 19.99, "currency": "EUR"}).encode()


@pytest.mark.fresh_server  # counts every payment, reads the whole log
def test_fifty_concurrent_posts_with_one_key_create_one_payment(server):
    request = raw_request(
        "POST",
        "/v1/payments",
        {"Content-Type": "application/json", "Idempotency-Key": "one-key"},
        PAYMENT,
    )
    answers = simultaneous(server, [request] * 50)

    assert {a.status for a in answers} <= {201, 409}
    created = [a for a in answers if a.status == 201]
    assert len({a.body for a in created}) == 1  # replays are byte for byte
    # One answer made the payment; every other 201 is a replay and says so.
    replayed = sorted(str(a.getheader("Idempotent-Replayed")) for a in created)
    assert replayed == ["None"] + ["true"] * (len(created) - 1)
    for answer in answers:
        if answer.status == 409:
            assert int(answer.getheader("Retry-After")) >= 1
    with contextlib.closing(sqlite3.connect(server.db_path)) as conn:
        assert conn.execute("SELECT count(*) FROM payments").fetchone()[0] == 1
        keyed = "SELECT count(*) FROM payments WHERE idempotency_key = 'one-key'"
        assert conn.execute(keyed).fetchone()[0] == 1
    assert server.log_failures() == []
    assert len(workers_that_answered(server, "/v1/payments")) == 4


def test_a_burst_over_four_workers_gets_exactly_the_capacity(gunicorn, server_name):
    capacity, refill = 40, 2.0
    server = gunicorn(env={"REFAPI_RATE_LIMIT_CAPACITY": str(capacity),
                           "REFAPI_RATE_LIMIT_REFILL": str(refill)},
                      server=server_name)  # fmt: skip
    # The readiness probe used /healthz, which is exempt: the bucket is full.
    request = raw_request("GET", "/v1/todos/1", {})

    began = time.monotonic()
    answers = simultaneous(server, [request] * (capacity + 20))
    elapsed = time.monotonic() - began - HOLD_SECONDS

    ok = [a for a in answers if a.status == 200]
    limited = [a for a in answers if a.status == 429]
    assert len(ok) + len(limited) == len(answers)
    allowed_by_refill = math.floor(refill * elapsed)
    assert capacity <= len(ok) <= capacity + allowed_by_refill, (len(ok), elapsed)
    assert limited, "nothing was limited"
    for answer in limited:
        error = json.loads(answer.body)
        assert error["code"] == "RATE_LIMITED"
        retry_after = int(answer.getheader("Retry-After"))
        assert retry_after == error["details"]["retry_after"]
        assert 1 <= retry_after <= math.ceil(1 / refill)
        assert answer.getheader("RateLimit-Policy") == f'"default";q={capacity};w=20'
    assert len(workers_that_answered(server, "/v1/todos/1")) == 4


@pytest.mark.parametrize(
    "env",
    [{}, {"REFAPI_SECRET_KEY": "configured-" + "k" * 32}],
    ids=["stored-key", "configured-key"],
)
def test_every_worker_refuses_a_cursor_from_before_a_reset(gunicorn, anon_pool, env):
    server = gunicorn(env=env)
    first = anon_pool.request("GET", server.url("/v1/items?limit=2"))
    cursor = first.json()["nextCursor"]
    before = f"/v1/items?cursor={cursor}&limit=3"
    # The log leaves the query out: the requests are found by their ids.
    ids = [f"before-{n}" for n in range(12)]
    answers = simultaneous(
        server, [raw_request("GET", before, {"X-Request-Id": i}) for i in ids]
    )
    assert {a.status for a in answers} == {200}
    assert len(workers_that_served(server, ids)) == 4

    # `make reset`, from another process while the workers serve.
    environ = {k: v for k, v in os.environ.items() if not k.startswith("REFAPI_")}
    reset = subprocess.run(
        [sys.executable, "-m", "refapi", "reset"],
        cwd=ROOT, env={**environ, "DATABASE_URL": f"sqlite:///{server.db_path}"},
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert reset.returncode == 0, reset.stderr

    after = f"/v1/items?cursor={cursor}&limit=4"
    ids = [f"after-{n}" for n in range(12)]
    answers = simultaneous(
        server, [raw_request("GET", after, {"X-Request-Id": i}) for i in ids]
    )
    assert [json.loads(a.body)["code"] for a in answers] == ["INVALID_CURSOR"] * 12
    assert {a.status for a in answers} == {400}
    assert len(workers_that_served(server, ids)) == 4
    assert server.log_failures() == []
