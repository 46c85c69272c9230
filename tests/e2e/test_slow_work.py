"""Slow work shares the host, over gunicorn: a gateway (``/prod`` and ``/dev``) on two
sync workers, so two slots, and at most one of them for slow work, counted over
both instances (docs/operating.md, "Slow work shares the host"). Over Granian,
which serves refapi alone (``refapi serve``), not the gateway: one instance
mounted at ``/prod`` on two workers of two threads, so four slots, three of them
for slow work; the attacks go through ``/prod`` where the gateway has ``/dev``.

The attacks of tests/e2e/slow_work.py, for thirty seconds, while ``/healthz`` is
probed: every probe is answered 200 before the slow answers end, and no answer is
a 504 (nor a 500, nor missing). The milliseconds: `make bench-slow-work`.
"""

from __future__ import annotations

import os
import subprocess
from collections import Counter

import pytest

from tests.e2e.harness import GUNICORN, ROOT, GunicornServer
from tests.e2e.slow_work import ALLOWED, NO_ANSWER, drive, lab_attacks, slow_upstream

pytestmark = pytest.mark.e2e

SECONDS = 30.0  # the drive: every attack is sent again and again for that long
# What each attack may be answered: served, refused at once beyond the share (503
# BUSY from a proxy, passed on by the one outside it; 429 from the lab), or a
# proxied request that came back to the service's own lab (508: a loop).
EXPECTED = {
    "proxied delay": {508, 503},
    "two proxied GETs": {200, 503},
    "prod -> dev -> prod": {503, 508},
    "slow fetch": {200, 503},
    "delay during it": {200, 429},
}
# One instance (Granian's): the chain's second hop names the proxy's own path,
# refused at once, 400 VALIDATION_ERROR (docs/api.md, "The proxy").
ONE_INSTANCE = {**EXPECTED, "prod -> dev -> prod": {400}}


def host(gunicorn, tmp_path, server_name: str, env: dict) -> GunicornServer:
    """Two workers: the gateway on gunicorn; on Granian, refapi at ``/prod``."""
    if server_name == "granian":
        return gunicorn(workers=2, server="granian", health="/prod/healthz",
                        env={**env, "SCRIPT_NAME": "/prod"})  # fmt: skip
    return gunicorn(
        workers=2,
        env={
            **env,
            "REFAPI_DATA_DIR": str(tmp_path / "gateway"),
            "PROD_DATABASE_URL": f"sqlite:///{tmp_path / 'prod.db'}",
            "DEV_DATABASE_URL": f"sqlite:///{tmp_path / 'dev.db'}",
        },
        app="examples.gateway:create_gateway()",
        health="/prod/healthz",
    )


def test_slow_work_never_holds_the_last_slot_of_a_host_under_attack(
    gunicorn, tmp_path, server_name
):
    server = host(
        gunicorn, tmp_path, server_name, {"REFAPI_PROXY_ALLOWED_HOSTS": ALLOWED}
    )
    with slow_upstream() as upstream:
        seen = drive(server, upstream, SECONDS)

    probes = Counter(status for status, _ in seen.probes)
    assert probes[200] == len(seen.probes) >= SECONDS, probes  # no timed-out probe
    expected = ONE_INSTANCE if server.mount else EXPECTED
    for attack, statuses in seen.answers.items():
        counted = Counter(statuses)
        assert set(counted) <= expected[attack], (attack, counted)
        assert 504 not in counted and NO_ANSWER not in counted
    # Slow work was done all along, one at a time: none of it was merely refused.
    slow = Counter(seen.answers["slow fetch"] + seen.answers["delay during it"])
    assert slow[200] >= 2, slow
    assert 200 in seen.answers["two proxied GETs"]
    assert server.log_failures() == []


LAB_SECONDS = 12.0  # two of the lab's longest waits (REFAPI_LAB_MAX_DELAY, 5 s)
# The lab's slow answers are served, clamped, or refused at once beyond the share.
LAB_EXPECTED = {"drips": {200, 429}, "events": {200, 429}, "long delays": {200, 429},
                "long streams": {200}}  # fmt: skip


def test_the_lab_s_slow_answers_past_their_bounds_leave_the_host_answering(
    gunicorn, tmp_path, server_name
):
    """docs/lab.md, "Streams": each clamped, the waiting ones sharing the host's
    slots: every probe answered before they end; `make bench-slow-work` times it."""
    server = host(gunicorn, tmp_path, server_name, {})
    seen = drive(server, 0, LAB_SECONDS, lab_attacks)
    probes = Counter(status for status, _ in seen.probes)
    assert probes[200] == len(seen.probes) >= LAB_SECONDS, probes
    for attack, statuses in seen.answers.items():
        assert set(statuses) <= LAB_EXPECTED[attack], (attack, Counter(statuses))
    slow = Counter(seen.answers["drips"] + seen.answers["events"]
                   + seen.answers["long delays"])  # fmt: skip
    assert slow[200] >= 1 and slow[429] >= 1, slow  # served, one at a time
    assert server.log_failures() == []


@pytest.mark.parametrize(
    ("env", "options", "said"),
    [
        ({"REFAPI_THREADS": "2"}, (), "REFAPI_THREADS must be 1 on gunicorn, not 2"),
        ({}, ("--threads", "4"), "REFAPI_THREADS must be 1 on gunicorn, not 4"),
        (
            {"REFAPI_LAB_MAX_DELAY": "15"}, (),
            "REFAPI_LAB_MAX_DELAY (15) must be under half REFAPI_WORKER_TIMEOUT (30)",
        ),
        (
            {}, ("--timeout", "8"),
            "REFAPI_LAB_MAX_DELAY (5) must be under half REFAPI_WORKER_TIMEOUT (8)",
        ),
    ],
    ids=["threads", "--threads", "a delay of half the timeout", "--timeout"],
)  # fmt: skip
def test_slots_gunicorn_cannot_serve_stop_its_start_in_one_line(
    env, options, said, tmp_path
):
    # Its threaded worker (which gunicorn swaps in for more than one thread) puts
    # no deadline on a request; a delay of half the timeout outlasts its worker.
    # Its command line counts as the settings do.
    clean = {k: v for k, v in os.environ.items() if not k.startswith("REFAPI_")}
    database = {"DATABASE_URL": f"sqlite:///{tmp_path / 'refapi.db'}"}
    process = subprocess.run(
        [
            str(GUNICORN), "--config", "gunicorn.conf.py", "--bind", "127.0.0.1:0",
            "--workers", "2", "--no-control-socket", *options, "refapi:create_app()",
        ],
        cwd=ROOT, env={**clean, **database, "REFAPI_DATA_DIR": str(tmp_path), **env},
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert process.returncode == 1
    lines = [line for line in process.stderr.splitlines() if "Starting" not in line]
    assert len(lines) == 1 and lines[0].startswith(f"refapi: {said}"), process.stderr
    assert "Booting worker" not in process.stderr and process.stdout == ""
