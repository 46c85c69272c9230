"""`make bench-slow-clients`: how long `/healthz` takes while clients trickle their
request heads, on each server (docs/operating.md, "Two servers").

Each server is `refapi serve` as the end-to-end harness starts it (two workers;
gunicorn with its shipped settings, Granian with two threads a worker). First
`/healthz` is probed alone; then TRICKLERS clients each send `GET /healthz`'s head a
byte every PAUSE seconds while the probes go on, for about SECONDS. A probe waits
at most PROBE_TIMEOUT: one not answered by then counts as unanswered. The figures
(p50, p99, answered of sent) go to bench/results.md.

    BENCH_TRICKLERS=200 BENCH_SECONDS=10 make bench-slow-clients
"""

from __future__ import annotations

import contextlib
import http.client
import os
import platform
import socket
import statistics
import sys
import tempfile
import threading
import time
from datetime import date
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT), str(BENCH)]

from common import write_results  # noqa: E402

from tests.e2e.harness import GunicornServer, launch, raw_request  # noqa: E402

TRICKLERS = int(os.environ.get("BENCH_TRICKLERS", "200"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "10"))
HEAD = raw_request("GET", "/healthz")
PAUSE = SECONDS / len(HEAD)  # between a trickler's bytes: over the whole phase
PROBE_EVERY = 0.05
PROBE_TIMEOUT = 5.0


def probe(port: int) -> float | None:
    """Seconds for one `/healthz`, on a new connection; None past PROBE_TIMEOUT."""
    started = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), PROBE_TIMEOUT) as sock:
            sock.sendall(HEAD)
            response = http.client.HTTPResponse(sock, method="GET")
            response.begin()
            response.read()
    except OSError:
        return None
    return time.monotonic() - started if response.status == 200 else None


def probes(port: int, seconds: float) -> list[float | None]:
    found: list[float | None] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        found.append(probe(port))
        time.sleep(PROBE_EVERY)
    return found


def trickled(port: int, seconds: float) -> list[float | None]:
    """Probe while TRICKLERS clients trickle their heads, never finishing them."""
    with contextlib.ExitStack() as stack:
        clients = []
        for _ in range(TRICKLERS):
            with contextlib.suppress(OSError):  # a server's backlog may be full
                sock = socket.create_connection(("127.0.0.1", port), timeout=1)
                clients.append(stack.enter_context(sock))
        stop = threading.Event()

        def trickle() -> None:
            for sent in range(len(HEAD) - 1):  # never the last byte
                for sock in clients:
                    with contextlib.suppress(OSError):
                        sock.sendall(HEAD[sent : sent + 1])
                if stop.wait(PAUSE):
                    return

        thread = threading.Thread(target=trickle, daemon=True)
        thread.start()
        try:
            return probes(port, seconds)
        finally:
            stop.set()
            thread.join(5)


def row(server: str, phase: str, found: list[float | None]) -> str:
    times = sorted(1000 * t for t in found if t is not None)
    if not times:
        return f"| {server} | {phase} | none | none | 0 of {len(found)} |"
    p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
    return (
        f"| {server} | {phase} | {statistics.median(times):.1f} | {p99:.1f} "
        f"| {len(times)} of {len(found)} |"
    )


def main() -> int:
    rows = []
    with tempfile.TemporaryDirectory(prefix="refapi-bench-") as scratch:
        for name in ("gunicorn", "granian"):
            folder = Path(scratch) / name
            folder.mkdir()
            server: GunicornServer = launch(
                folder / name, workers=2, db_path=folder / "refapi.db", env={},
                ready="healthz", extra_args=(), server=name,
            )  # fmt: skip
            try:
                alone = probes(server.port, SECONDS / 2)
                during = trickled(server.port, SECONDS)
            finally:
                server.stop()
            rows += [row(name, "alone", alone), row(name, "tricklers", during)]
            print(rows[-2], rows[-1], sep="\n", flush=True)
    text = "\n".join([
        f"{date.today()}, {os.cpu_count()} cores, Python {platform.python_version()}:"
        f" two workers a server; {TRICKLERS} clients trickle `GET /healthz`'s head a"
        f" byte every {PAUSE:.2f} s, never finishing it, for {SECONDS:g} s; `/healthz`"
        f" probed on a new connection every {PROBE_EVERY} s, each waited for at most"
        f" {PROBE_TIMEOUT:g} s.",
        "",
        "| server | phase | p50 ms | p99 ms | answered |",
        "|---|---|---:|---:|---:|",
        *rows,
    ])  # fmt: skip
    written = write_results("make bench-slow-clients", text + "\n")
    print(f"written to {written.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
