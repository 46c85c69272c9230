"""`make bench-container`: the container image's throughput beside `refapi serve`
on the host, and the image's size (docs/benchmarks.md, "The image").

Both sides are the same server as the image ships it (Granian, two workers of two
threads), the same settings (the rate limit out of reach, the JSON log and the
metrics on, as `make bench` serves refapi) and the same request, loaded by wrk
from the host: the image on the host's network, as the image test runs it, bound
to a loopback port, with a volume of its own; `refapi serve --server granian` from
the checkout on another port, with a data folder of its own, its log to
/dev/null. The image runs three times: with Docker's default log driver, which
carries each request's line through containerd to a JSON file, as a user running
it gets; with none (``--log-driver=none``), where Docker still reads every line
out of the container (its shim and dockerd) and drops it; and with none and its
standard output sent to /dev/null inside the container, as the host's server's
is, the container alone. Each round loads every
side, the order rotated each round, so drift in the machine's speed falls on all;
the table gives the median and the spread over the rounds.

    BENCH_ROUNDS=5 BENCH_SECONDS=3 BENCH_CONNECTIONS=8 make bench-container
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from common import write_results
from launch import free_port

ROOT = Path(__file__).resolve().parents[1]
IMAGE = sys.argv[1] if len(sys.argv) > 1 else "refapi:1.0.0"
DOCKER = os.environ.get("DOCKER", "docker")
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
SECONDS = int(os.environ.get("BENCH_SECONDS", "3"))
CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", "8"))
PATH = "/v1/todos/1"
SETTINGS = {
    "REFAPI_SERVER": "granian",
    "REFAPI_WORKERS": "2",
    "REFAPI_THREADS": "2",
    "REFAPI_RATE_LIMIT_CAPACITY": "1000000000",
    "REFAPI_RATE_LIMIT_REFILL": "1000000000",
    "REFAPI_LOG_FORMAT": "json",
    "REFAPI_METRICS": "127.0.0.1",
}


def wait_ready(port: int, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"nothing answered on port {port} within {seconds} s")


def wrk(port: int) -> float:
    """Requests a second for one run of wrk."""
    out = subprocess.run(
        ["wrk", "-t2", f"-c{CONNECTIONS}", f"-d{SECONDS}s",
         f"http://127.0.0.1:{port}{PATH}"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    if "Non-2xx" in out:
        raise SystemExit(f"answers other than 2xx:\n{out}")
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]


# The image's own command with its standard output (the request log) sent to
# /dev/null inside the container: what is left of the gap without Docker's copy.
UNLOGGED = ("--entrypoint", "sh", IMAGE, "-c", "exec refapi serve >/dev/null")


def start_container(
    port: int, volume: str, *options: str, command: tuple[str, ...] = (IMAGE,)
) -> str:
    settings = {**SETTINGS, "REFAPI_BIND": f"127.0.0.1:{port}"}
    return subprocess.run(
        [DOCKER, "run", "--detach", "--network=host", f"--volume={volume}:/data",
         *options, *[f"--env={key}={value}" for key, value in settings.items()],
         *command],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip


def start_host(port: int, data: str) -> subprocess.Popen:
    env = {**os.environ, **SETTINGS, "REFAPI_BIND": f"127.0.0.1:{port}",
           "REFAPI_DATA_DIR": data}  # fmt: skip
    return subprocess.Popen(
        [sys.executable, "-m", "refapi", "serve"], env=env, cwd=ROOT,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def main() -> int:
    found = subprocess.run(
        [DOCKER, "image", "inspect", IMAGE], capture_output=True, text=True
    )
    if found.returncode != 0:
        print(f"no image {IMAGE}: make image (the bench target builds it first)")
        return 2
    size = json.loads(found.stdout)[0]["Size"]
    volumes = [f"refapi-bench-{os.getpid()}-{n}" for n in (1, 2, 3)]
    for volume in volumes:
        subprocess.run(
            [DOCKER, "volume", "create", volume], capture_output=True, check=True
        )
    logged_port, quiet_port, unlogged_port, host_port = (free_port() for _ in range(4))
    containers = [
        start_container(logged_port, volumes[0]),
        start_container(quiet_port, volumes[1], "--log-driver=none"),
        start_container(
            unlogged_port, volumes[2], "--log-driver=none", command=UNLOGGED
        ),
    ]
    with tempfile.TemporaryDirectory() as data:
        host = start_host(host_port, data)
        try:
            sides = {"the image, Docker's default log driver": logged_port,
                     "the image, --log-driver=none": quiet_port,
                     "the image, its log to /dev/null inside": unlogged_port,
                     "refapi serve on the host": host_port}  # fmt: skip
            for port in sides.values():
                wait_ready(port)
            rates: dict[str, list[float]] = {name: [] for name in sides}
            names = list(sides)
            for round_number in range(ROUNDS):
                turn = round_number % len(names)
                for name in names[turn:] + names[:turn]:
                    rates[name].append(wrk(sides[name]))
        finally:
            host.terminate()
            host.wait(timeout=30)
            subprocess.run([DOCKER, "rm", "--force", *containers], capture_output=True)
            subprocess.run([DOCKER, "volume", "rm", *volumes], capture_output=True)
    lines = [
        f"{IMAGE}: {size / 2**20:.0f} MiB; GET {PATH}, Granian, 2 workers of 2"
        f" threads, wrk -c{CONNECTIONS}, {ROUNDS} rounds of {SECONDS} s",
        "",
        "| server | requests/s (median) | lowest | highest |",
        "|---|---:|---:|---:|",
    ]
    for name, values in rates.items():
        lines.append(f"| {name} | {statistics.median(values):,.0f}"
                     f" | {min(values):,.0f} | {max(values):,.0f} |")  # fmt: skip
    host_rate = statistics.median(rates[names[-1]])
    lines.append("")
    for name in names[:-1]:
        ratio = statistics.median(rates[name]) / host_rate
        lines.append(f"{name} / the host: {ratio:.2f}")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    print(f"written to {write_results('make bench-container', text)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
