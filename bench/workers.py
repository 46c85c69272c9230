"""`make bench-workers`: the gunicorn workers `make run` should ship, by measurement.

refapi alone with 1, 2 and 4 sync workers and with threaded (gthread) workers, for
GET /v1/todos/1 and POST /v1/articles; medians of rounds in rotated order. wrk keeps its
connections open (HTTP/1.1 keep-alive), as browsers do; sync workers close every
connection after one answer, threaded workers keep them.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import launch  # noqa: E402
import run  # noqa: E402
from bench_db import prepare  # noqa: E402
from launch import Server  # noqa: E402

# (label, workers, worker class, threads per worker)
SETTINGS = (
    ("sync x1", 1, "sync", 1),
    ("sync x2", 2, "sync", 1),
    ("sync x4", 4, "sync", 1),
    ("gthread 2x4", 2, "gthread", 4),
    ("gthread 4x2", 4, "gthread", 2),
)
LOADS = [load for load in run.LOADS if load.name in run.TWO]


def main() -> int:
    servers = [
        Server(label, "refapi:create_app()", run.TWO, label,
               {**run.REFAPI_ENV, "BENCH_WORKERS": str(workers),
                "BENCH_WORKER_CLASS": kind, "BENCH_THREADS": str(threads)})
        for label, workers, kind, threads in SETTINGS
    ]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="refapi-workers-") as tmp:
        folder = Path(tmp)
        template, _ = prepare(folder)
        token = run.admin_token(f"sqlite:///{template}", folder)
        for n, server in enumerate(servers):
            database = folder / f"w{n}.db"
            database.write_bytes(template.read_bytes())
            server.env["DATABASE_URL"] = f"sqlite:///{database}"
            server.token = token
            launch.start(server, folder / f"w{n}.stderr")
        samples: dict[tuple[str, str], list[dict]] = {}
        try:
            for n, server in enumerate(servers):
                launch.wait_ready(server, "/v1/todos/1", folder / f"w{n}.stderr")
            for round_number in range(run.ROUNDS):
                for load in LOADS:
                    turn = round_number % len(servers)  # each goes first in turn
                    for server in servers[turn:] + servers[:turn]:
                        sample = run.run_wrk(server, load, f"w{round_number}")
                        samples.setdefault((server.name, load.name), []).append(sample)
        finally:
            for server in servers:
                launch.stop(server)
    print(f"\n{'workers':12} {'request':20} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7}")
    for load in LOADS:
        for server in servers:
            got = samples[(server.name, load.name)]
            print(
                f"{server.name:12} {load.name:20}"
                f" {statistics.median(s['rps'] for s in got):8,.0f}"
                f" {statistics.median(s['p50'] for s in got):7.2f}"
                f" {statistics.median(s['p99'] for s in got):7.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
