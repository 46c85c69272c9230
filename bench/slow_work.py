"""`make bench-slow-work`: how long `/healthz` takes while slow work is an attacker's
lever (docs/operating.md, "Slow work shares the host").

The server and the attacks are tests/e2e/test_slow_work.py's: a gateway (``/prod``
and ``/dev``) on gunicorn with the shipped settings and two workers, started by the
end-to-end harness, the README's tour allow-list, and the attacks of
tests/e2e/slow_work.py sent again and again (a proxied delay, two proxied GETs of
the service at once, the gateway's prod -> dev -> prod chain, a direct delay during
a slow fetch), then the lab's slow and long answers asked past their bounds
(``lab_attacks``: drips, events, long delays, long streams; docs/lab.md,
"Streams"). `/healthz` is probed alone first, then during each drive; the tests
assert that every probe is answered, this prints the milliseconds: p50 and p99 of
each phase, and what each attack was answered. The figures go to bench/results.md.

    BENCH_SECONDS=30 make bench-slow-work   # the attacks' drive, in seconds
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import tempfile
import time
from collections import Counter
from datetime import date
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT), str(BENCH)]

import urllib3  # noqa: E402
from common import write_results  # noqa: E402

from tests.e2e.harness import GunicornServer, launch  # noqa: E402
from tests.e2e.slow_work import (  # noqa: E402
    ALLOWED,
    NO_ANSWER,
    PROBE_EVERY,
    PROBE_TIMEOUT,
    drive,
    lab_attacks,
    slow_upstream,
)

SECONDS = float(os.environ.get("BENCH_SECONDS", "30"))
IDLE_PROBES = 100


def idle_probes(server: GunicornServer) -> list[tuple[int, float]]:
    """``/healthz`` of ``/prod`` and ``/dev`` in turn, with nothing else going on."""
    client = urllib3.PoolManager(retries=False)
    probes = []
    for turn in range(IDLE_PROBES):
        started = time.monotonic()
        path = ("/prod/healthz", "/dev/healthz")[turn % 2]
        try:
            status = client.request(
                "GET", server.url(path), timeout=PROBE_TIMEOUT,
                headers={"Connection": "close"},
            ).status  # fmt: skip
        except urllib3.exceptions.HTTPError:
            status = NO_ANSWER
        probes.append((status, time.monotonic() - started))
        time.sleep(PROBE_EVERY)
    return probes


def row(phase: str, probes: list[tuple[int, float]]) -> str:
    ms = sorted(seconds * 1000 for _, seconds in probes)
    p99 = statistics.quantiles(ms, n=100)[98]
    answered = sum(status == 200 for status, _ in probes)
    return (
        f"| {phase} | {len(probes)} | {answered} | {statistics.median(ms):.1f}"
        f" | {p99:.1f} | {ms[-1]:.1f} |"
    )


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="refapi-slow-work-") as tmp:
        folder = Path(tmp)
        server = launch(
            folder / "gateway", workers=2, db_path=folder / "prod.db",
            env={
                "REFAPI_PROXY_ALLOWED_HOSTS": ALLOWED,
                "REFAPI_DATA_DIR": str(folder / "data"),
                "PROD_DATABASE_URL": f"sqlite:///{folder / 'prod.db'}",
                "DEV_DATABASE_URL": f"sqlite:///{folder / 'dev.db'}",
                "REFAPI_LOG_FORMAT": "json",
            },
            ready="healthz", extra_args=(),
            app="examples.gateway:create_gateway()", health="/prod/healthz",
        )  # fmt: skip
        try:
            idle = idle_probes(server)
            with slow_upstream() as upstream:
                seen = drive(server, upstream, SECONDS)
            lab = drive(server, 0, SECONDS, lab_attacks)
        finally:
            server.stop()
    lines = [
        f"Measured {date.today()} on {os.cpu_count()} cores, Python"
        f" {platform.python_version()}; a gateway (/prod, /dev) on gunicorn with the"
        f" shipped settings, 2 workers (one slot for slow work); /healthz probed every"
        f" {PROBE_EVERY} s, alone ({IDLE_PROBES} probes), then during the attacks of"
        f" tests/e2e/slow_work.py for {SECONDS:g} s.",
        "",
        "| /healthz | probes | 200 | p50 ms | p99 ms | slowest ms |",
        "|---|---:|---:|---:|---:|---:|",
        row("alone", idle),
        row("during the attacks", seen.probes),
        row("during the lab's slow answers", lab.probes),
        "",
        "| attack | answers |",
        "|---|---|",
    ]
    for attack, statuses in (seen.answers | lab.answers).items():
        counted = ", ".join(f"{n} x {s}" for s, n in sorted(Counter(statuses).items()))
        lines.append(f"| {attack} | {counted} |")
    text = "\n".join(lines)
    print(text)
    print(f"\nwritten to {write_results('make bench-slow-work', text)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
