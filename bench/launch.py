"""The servers `make bench` loads: each a gunicorn of its own on loopback.

refapi is served as shipped, by ``refapi serve``: gunicorn with the package's
``gunicorn.conf.py`` (its worker class ``refapi.serving.gunicorn.SyncWorker``, its
``on_starting`` that makes the metrics folder), its JSON request log on standard
output. Every other server is stock gunicorn with ``gunicorn_bench.py`` (the sync
worker, unless ``BENCH_WORKER_CLASS`` names another). A server that logs writes to
a pipe that a thread here drains, counting the lines, so a log that is on is seen
to be and never blocks its writer.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
WORKERS = os.environ.get("BENCH_WORKERS", "2")  # every server's, refapi's too
GRANIAN_THREADS = "2"  # a Granian worker's, refapi's default (docs/operating.md)


@dataclass
class Server:
    name: str
    module: str  # gunicorn's app, or "" for refapi as shipped (refapi serve)
    serves: tuple[str, ...]
    baseline: str  # the name of the server its ratios are to
    env: dict[str, str] = field(default_factory=dict)
    logs: bool = False  # writes a line a request to standard output
    port: int = 0
    process: subprocess.Popen | None = None
    cursor: str = ""
    token: str = ""  # sent with every write, when set
    requests: int = 0  # what wrk counted, over every round
    lines: int = 0  # what the server logged
    drain: threading.Thread | None = None
    server: str = "gunicorn"  # or "granian"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(server: Server, errors: Path) -> None:
    """Start ``server``; refapi's own log of its start goes to ``errors``."""
    server.port = free_port()
    env = {
        **os.environ,
        "BENCH_BIND": f"127.0.0.1:{server.port}",
        "REFAPI_BIND": f"127.0.0.1:{server.port}",
        "REFAPI_WORKERS": WORKERS,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(BENCH), str(BENCH / "peers")]),
        **server.env,
    }
    if server.server == "granian" and server.module:
        command = [sys.prefix + "/bin/granian", "--interface", "wsgi", "--host",
                   "127.0.0.1", "--port", str(server.port), "--workers", WORKERS,
                   "--blocking-threads", GRANIAN_THREADS, "--http", "1",
                   "--no-ws", server.module]  # fmt: skip
        errors_file = None
    elif server.server == "granian":
        command = [sys.prefix + "/bin/refapi", "serve", "--server", "granian"]
        errors_file = errors.open("w")
    elif server.module:
        command = [sys.prefix + "/bin/gunicorn", "-c", str(BENCH / "gunicorn_bench.py"),
                   server.module]  # fmt: skip
        errors_file = None
    else:
        # As shipped, so gunicorn logs at its default level (info): kept in a file,
        # shown when the server does not come up.
        command = [sys.prefix + "/bin/refapi", "serve"]
        errors_file = errors.open("w")
    # Granian names a module by its file under the working folder, and the root is
    # a package (refapi): from bench/, ``baseline`` is bench's module, not refapi's.
    folder = BENCH if server.server == "granian" and server.module else ROOT
    server.process = subprocess.Popen(
        command, cwd=folder, env=env, start_new_session=True, stderr=errors_file,
        stdout=subprocess.PIPE if server.logs else subprocess.DEVNULL,
    )  # fmt: skip
    if errors_file is not None:
        errors_file.close()  # the server holds its own copy
    if server.logs:
        server.drain = threading.Thread(target=drain, args=(server,), daemon=True)
        server.drain.start()


def drain(server: Server) -> None:
    """Read the server's log as it comes, counting its lines."""
    pipe = server.process.stdout
    while chunk := pipe.read1(1 << 16):
        server.lines += chunk.count(b"\n")


def wait_ready(server: Server, path: str, errors: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{server.port}{path}") as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    said = errors.read_text()[-3000:] if errors.exists() else ""
    raise SystemExit(f"{server.name} did not come up on port {server.port}\n{said}")


def counted(server: Server) -> bool:
    """Whether refapi's metrics (``/metrics``, open to loopback) counted requests,
    so a run whose metrics were off is seen to be."""
    url = f"http://127.0.0.1:{server.port}/metrics"
    with urllib.request.urlopen(url) as answer:
        return b"refapi_requests_total{" in answer.read()


def stop(server: Server) -> None:
    os.killpg(server.process.pid, 15)
    server.process.wait(10)
    if server.drain is not None:
        server.drain.join(10)  # the last lines, up to the end of the pipe


def workers(server: Server) -> list[str]:
    return subprocess.run(
        ["ps", "-o", "pid=", "--ppid", str(server.process.pid)],
        capture_output=True, text=True,
    ).stdout.split()  # fmt: skip


def status_kib(pid: str, field_name: str) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(rf"{field_name}:\s+(\d+)", status).group(1))


def peak_rss_kib(server: Server) -> int:
    """The largest VmHWM among the server's worker processes."""
    return max(status_kib(pid, "VmHWM") for pid in workers(server))


def steady_rss_kib(server: Server) -> int:
    """The largest VmRSS among the server's workers: read after the rounds, it is
    what a warmed-up worker holds while it serves."""
    return max(status_kib(pid, "VmRSS") for pid in workers(server))
