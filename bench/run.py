"""`make bench`: refapi beside the ceiling, the bare baselines and its peers.

Every server runs under gunicorn with the same settings (`bench/gunicorn_bench.py`:
2 sync workers), on loopback, against its own copy of one seeded database: on
SQLite a copy of one file, on PostgreSQL a schema of its own (`bench_pg.py`). wrk
loads one server at a time; rounds interleave the servers in a shuffled order, and
each ratio is to the baseline of the same backend measured in the same round (bare
WSGI + sqlite3, bare WSGI + psycopg with a pool), so drift in the machine's speed
cancels. The table gives medians over rounds, and peak RSS per worker (VmHWM).
When PostgreSQL does not answer, the SQLite half runs alone and says so.

refapi's writes need a credential: it starts with an admin, the benchmark logs in
as it once over HTTP (with refapi's own client) and wrk sends that Bearer token with
every write (``wrk ... -- <nonce> <token>``), to every server of that backend, so
all read the same bytes; the others ignore the header. Reads go without it, as the
public's do.

    BENCH_ROUNDS=5 BENCH_SECONDS=3 BENCH_CONNECTIONS=8 make bench
"""

from __future__ import annotations

import contextlib
import os
import platform
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
sys.path[:0] = [str(ROOT), str(BENCH)]

import bench_pg  # noqa: E402
import chart  # noqa: E402
import common  # noqa: E402
from bench_db import DEEP_ID, prepare  # noqa: E402

from refapi.client import Client  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
SECONDS = int(os.environ.get("BENCH_SECONDS", "3"))
CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", "8"))
CHART = ROOT / "docs" / "bench.svg"
# refapi's environment in every benchmark: the rate limit out of reach; the admin
# to log in as, its password hashed with pbkdf2 because scrypt's 32 MiB of working
# memory, spent once at the login, would otherwise be a worker's peak RSS; and a
# token that outlives any run.
REFAPI_ENV = {
    "REFAPI_RATE_LIMIT_CAPACITY": "1000000000",
    "REFAPI_RATE_LIMIT_REFILL": "1000000000",
    "REFAPI_ADMIN_EMAIL": common.ADMIN["email"],
    "REFAPI_ADMIN_PASSWORD": common.ADMIN["password"],
    "REFAPI_PASSWORD_HASH": "pbkdf2:sha256",
    "REFAPI_TOKEN_TTL": "86400",
}


@dataclass
class Server:
    name: str
    module: str
    serves: tuple[str, ...]
    baseline: str  # the name of the server its ratios are to
    env: dict[str, str] = field(default_factory=dict)
    port: int = 0
    process: subprocess.Popen | None = None
    cursor: str = ""
    token: str = ""  # sent with every write, when set


@dataclass(frozen=True)
class Load:
    name: str
    path: str  # "{cursor}" is replaced by the server's deep cursor
    script: str | None = None


LOADS = (
    Load("GET /v1/todos/1", "/v1/todos/1"),
    Load("GET /v1/items?limit=20", "/v1/items?limit=20"),
    Load("GET /v1/items deep cursor", "/v1/items?limit=20&cursor={cursor}"),
    Load("GET /v1/articles/{id}", "/v1/articles/500"),
    Load("POST /v1/articles", "/v1/articles", "post_article.lua"),
    Load("POST /v1/payments", "/v1/payments", "post_payment.lua"),
)
EVERYTHING = tuple(load.name for load in LOADS)
CEILING, BASELINE, REFAPI, FALCON = (
    "ceiling (constant WSGI)",
    "baseline (bare WSGI + SQLite)",
    "refapi (whole stack)",
    "Falcon",
)
BASELINE_PG = "baseline (bare WSGI + PostgreSQL)"
REFAPI_PG = "refapi on PostgreSQL (whole stack)"
REFAPI_LOGGED = "refapi, its request log on"
SCRYPT = "refapi, admin's password hashed with scrypt"
CEILING_LOADS = ("GET /v1/todos/1", "POST /v1/articles")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(server: Server) -> None:
    server.port = free_port()
    env = {
        **os.environ,
        "BENCH_BIND": f"127.0.0.1:{server.port}",
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(BENCH), str(BENCH / "peers")]),
        **server.env,
    }
    server.process = subprocess.Popen(
        [sys.prefix + "/bin/gunicorn", "-c", str(BENCH / "gunicorn_bench.py"),
         server.module],
        cwd=ROOT, env=env, start_new_session=True,
        stdout=subprocess.DEVNULL,  # the request log, when on: written, not shown
    )  # fmt: skip


def wait_ready(server: Server, path: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{server.port}{path}") as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"{server.name} did not come up on port {server.port}")


def log_in(server: Server) -> str:
    """A token of refapi's admin, from one login over HTTP."""
    client = Client(f"http://127.0.0.1:{server.port}")
    return client.login(common.ADMIN["email"], common.ADMIN["password"])


def run_wrk(server: Server, load: Load, nonce: str) -> dict[str, float]:
    path = load.path.replace("{cursor}", server.cursor)
    url = f"http://127.0.0.1:{server.port}{path}"
    command = ["wrk", "-t2", f"-c{CONNECTIONS}", f"-d{SECONDS}s", "--latency"]
    if load.script:
        command += ["-s", str(BENCH / "wrk" / load.script)]
    command += [url, "--", nonce, *([server.token] if server.token else [])]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if bad or "Socket errors" in out and "timeout" in out:
        print(f"  ! {server.name} {load.name}: {bad.group(0) if bad else 'errors'}")
    return {
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
        "p50": _ms(re.search(r"50%\s+([\d.]+\w+)", out).group(1)),
        "p99": _ms(re.search(r"99%\s+([\d.]+\w+)", out).group(1)),
    }


def _ms(text: str) -> float:
    value, unit = re.fullmatch(r"([\d.]+)(\w+)", text).groups()
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def peak_rss_kib(server: Server) -> int:
    """The largest VmHWM among the server's worker processes."""
    return max(status_kib(pid, "VmHWM") for pid in workers(server))


def workers(server: Server) -> list[str]:
    return subprocess.run(
        ["ps", "-o", "pid=", "--ppid", str(server.process.pid)],
        capture_output=True, text=True,
    ).stdout.split()  # fmt: skip


def status_kib(pid: str, field_name: str) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(rf"{field_name}:\s+(\d+)", status).group(1))


def steady_rss_kib(server: Server) -> int:
    """The largest VmRSS among the server's workers: read after the rounds, it is
    what a warmed-up worker holds while it serves."""
    return max(status_kib(pid, "VmRSS") for pid in workers(server))


def login_peak(server: Server) -> dict[str, float]:
    """What a login costs in memory, on a server whose admin's password is hashed
    with scrypt (the default): each worker's peak is reset (``clear_refs``), logins
    are made until every worker has answered some, and the largest rise of a peak
    over its worker's resident memory before is reported, with the memory it holds
    after."""
    url = f"http://127.0.0.1:{server.port}/v1/todos/1"
    subprocess.run(["wrk", "-t1", "-c2", "-d1s", url], capture_output=True, check=True)
    pids = workers(server)
    before = {pid: status_kib(pid, "VmRSS") for pid in pids}
    for pid in pids:
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS
    for _ in range(4 * len(pids)):  # connections spread over the sync workers
        log_in(server)
    peaks = {pid: status_kib(pid, "VmHWM") for pid in pids}
    after = {pid: status_kib(pid, "VmRSS") for pid in pids}
    return {
        "steady": max(before.values()) / 1024,
        "added": max(peaks[pid] - before[pid] for pid in pids) / 1024,
        "after": max(after.values()) / 1024,
    }


def machine() -> str:
    cpu = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    return f"{os.cpu_count()} cores, {cpu}, Python {platform.python_version()}"


def on_sqlite(servers: list[Server], folder: Path) -> Path:
    """Give each SQLite server a copy of the prepared database, and the cursor to
    ask for; the template, for more copies."""
    template, refapi_cursor = prepare(folder)
    for server in servers:
        database = folder / f"{re.sub(r'[^a-z]+', '-', server.name.lower())}.db"
        shutil.copy(template, database)
        server.env["DATABASE_URL"] = f"sqlite:///{database}"
        server.env["BENCH_DB"] = str(database)
        refapi = server.name in (REFAPI, REFAPI_LOGGED)
        server.cursor = refapi_cursor if refapi else common.sign(DEEP_ID)
    return template


def on_postgres(servers: list[Server], urls: Iterable[str]) -> None:
    """Give each PostgreSQL server its prepared schema, and the cursor to ask for."""
    for server, url in zip(servers, urls, strict=True):
        server.env["DATABASE_URL"] = url
        refapi_cursor = bench_pg.prepare(url)
        refapi = server.name == REFAPI_PG
        server.cursor = refapi_cursor if refapi else common.sign(DEEP_ID)


def log_in_all(servers: list[Server], refapi_name: str) -> None:
    """Each refapi logs in on its own database; the other servers of a backend
    get the token of that backend's refapi (``refapi_name``)."""
    for server in servers:
        if server.module.startswith("refapi"):
            server.token = log_in(server)
    token = next((s.token for s in servers if s.name == refapi_name), "")
    for server in servers:
        server.token = server.token or token


def main() -> int:
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (make bench installs it)")
    sqlite = [
        Server(CEILING, "ceiling:application", CEILING_LOADS, BASELINE),
        Server(BASELINE, "baseline:application", EVERYTHING, BASELINE),
        Server(
            REFAPI, "refapi_app:application", EVERYTHING, BASELINE, dict(REFAPI_ENV)
        ),
        Server(
            REFAPI_LOGGED,
            "refapi_app:application",
            CEILING_LOADS,
            BASELINE,
            {**REFAPI_ENV, "BENCH_REQUEST_LOG": "on"},
        ),
        Server(FALCON, "falcon_app:application", EVERYTHING, BASELINE),
        Server("Flask", "flask_app:application", EVERYTHING, BASELINE),
    ]
    postgres = [
        Server(BASELINE_PG, "baseline_pg:application", EVERYTHING, BASELINE_PG),
        Server(REFAPI_PG, "refapi_app:application", EVERYTHING, BASELINE_PG,
               dict(REFAPI_ENV)),
    ]  # fmt: skip
    # Not in the rounds: what a login with the default hash (scrypt) adds to a
    # worker's memory.
    scrypt_env = {k: v for k, v in REFAPI_ENV.items() if k != "REFAPI_PASSWORD_HASH"}
    scrypt = Server(SCRYPT, "refapi_app:application", (), REFAPI, scrypt_env)
    absent = bench_pg.unreachable()
    if absent:
        print(f"{absent}\nmeasuring SQLite alone", flush=True)
        postgres = []
    servers = sqlite + postgres
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="refapi-bench-"))
        folder = Path(tmp)
        template = on_sqlite(sqlite, folder)
        on_postgres(postgres, stack.enter_context(bench_pg.schemas(len(postgres))))
        database = folder / "scrypt.db"
        shutil.copy(template, database)
        scrypt.env["DATABASE_URL"] = f"sqlite:///{database}"
        for server in [*servers, scrypt]:
            start(server)
            stack.callback(stop, server)
        for server in [*servers, scrypt]:
            wait_ready(server, "/v1/todos/1")
        log_in_all(sqlite, REFAPI)
        log_in_all(postgres, REFAPI_PG)
        results = measure(servers)
        rss = {server.name: peak_rss_kib(server) for server in servers}
        steady = {server.name: steady_rss_kib(server) for server in servers}
        login = login_peak(scrypt)
    report(servers, results, rss, steady, login, absent)
    write_chart(servers, results, absent)
    return 0


def stop(server: Server) -> None:
    os.killpg(server.process.pid, 15)
    server.process.wait(10)


def measure(servers: list[Server]) -> dict[tuple[str, str], list[dict]]:
    results: dict[tuple[str, str], list[dict]] = {}
    for round_number in range(ROUNDS):
        print(f"round {round_number + 1}/{ROUNDS}", flush=True)
        for load in LOADS:
            order = [s for s in servers if load.name in s.serves]
            random.Random(round_number).shuffle(order)
            for server in order:
                nonce = f"r{round_number}-{random.getrandbits(32):x}"
                sample = run_wrk(server, load, nonce)
                results.setdefault((server.name, load.name), []).append(sample)
    return results


def write_chart(servers, results, absent: str | None) -> None:
    """The chart of the GET and the POST on each backend, beside the table."""
    groups = []
    backends = [("SQLite", BASELINE)] + (
        [] if absent else [("PostgreSQL", BASELINE_PG)]
    )
    for backend, baseline in backends:
        for load in CEILING_LOADS:
            bars = [
                (server.name, statistics.median(s["rps"] for s in samples))
                for server in servers
                if server.baseline == baseline and server.name != CEILING
                and (samples := results.get((server.name, load)))
            ]  # fmt: skip
            groups.append((f"{load}, {backend}", bars))
    title = f"make bench, {time.strftime('%Y-%m-%d')}: requests per second (median)"
    CHART.write_text(chart.svg(title, groups))
    print(f"chart written to {CHART.relative_to(ROOT)}")


def report(servers, results, rss, steady, login, absent: str | None) -> None:
    lines = [
        f"Measured {time.strftime('%Y-%m-%d')} on {machine()};",
        f"gunicorn 2 sync workers, wrk -t2 -c{CONNECTIONS} -d{SECONDS}s on loopback,",
        f"{ROUNDS} interleaved rounds. Ratio: median over rounds of req/s divided by",
        "the req/s of the baseline of the same backend in the same round (SQLite's",
        "or PostgreSQL's). Writes carry a Bearer token (refapi checks it; the others",
        "ignore it); reads carry none.",
        *([f"PostgreSQL was not measured ({absent})."] if absent else []),
        "",
        "| server | request | req/s | ratio | p50 ms | p99 ms |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for load in LOADS:
        for server in servers:
            samples = results.get((server.name, load.name))
            if not samples:
                continue
            base = results[(server.baseline, load.name)]
            ratios = [s["rps"] / b["rps"] for s, b in zip(samples, base, strict=True)]
            lines.append(
                f"| {server.name} | {load.name} "
                f"| {statistics.median(s['rps'] for s in samples):,.0f} "
                f"| {statistics.median(ratios):.2f} "
                f"| {statistics.median(s['p50'] for s in samples):.2f} "
                f"| {statistics.median(s['p99'] for s in samples):.2f} |"
            )
    lines += [
        "",
        "Memory per worker (the largest of the server's workers): resident after the",
        "rounds (steady, warmed up) and its peak (VmHWM) since the worker started.",
        "",
        "| server | steady RSS (MiB) | ratio | peak RSS (MiB) | ratio |",
        "|---|---:|---:|---:|---:|",
    ]
    for server in servers:
        name, base = server.name, server.baseline
        lines.append(
            f"| {name} | {steady[name] / 1024:.1f} | {steady[name] / steady[base]:.2f} "
            f"| {rss[name] / 1024:.1f} | {rss[name] / rss[base]:.2f} |"
        )
    lines += [
        "",
        f"A login with the default hash, scrypt (a server apart, {SCRYPT!r}): a",
        f"worker at {login['steady']:.1f} MiB resident peaks {login['added']:.1f} MiB"
        f" higher while it hashes, and holds {login['after']:.1f} MiB after.",
        "",
        *targets(servers, results, rss, steady),
    ]
    text = "\n".join(lines) + "\n"
    print("\n" + text)
    written = common.write_results("make bench", text)
    print(f"written to {written.relative_to(ROOT)}")


def targets(servers, results, rss, steady) -> list[str]:
    """Issue 4's targets over HTTP (on SQLite), each with its figure and verdict."""
    baseline, refapi, falcon = BASELINE, REFAPI, FALCON

    def median_ratio(server: str, load: str, base_name: str = baseline) -> float:
        ours, base = results[(server, load)], results[(base_name, load)]
        return statistics.median(
            a["rps"] / b["rps"] for a, b in zip(ours, base, strict=True)
        )

    def cost_ratio(server: str, load: str, reference: str) -> float:
        """Median over rounds of cost(load) / cost(reference), paired per round."""
        ours, ref = results[(server, load)], results[(server, reference)]
        return statistics.median(
            r["rps"] / o["rps"] for o, r in zip(ours, ref, strict=True)
        )

    rows = ["| target | measured | verdict |", "|---|---|---|"]

    def check(name: str, figure: str, met: bool) -> None:
        rows.append(f"| {name} | {figure} | {'met' if met else 'MISSED'} |")

    for load in CEILING_LOADS:
        ours, theirs = median_ratio(refapi, load), median_ratio(falcon, load)
        check(
            f"{load}: ratio >= 0.97 and >= Falcon's",
            f"{ours:.2f} (Falcon {theirs:.2f})",
            ours >= 0.97 and ours >= theirs,
        )
        logged = median_ratio(REFAPI_LOGGED, load)
        check(
            f"{load}, the request log on: ratio >= 0.90",
            f"{logged:.2f}",
            logged >= 0.90,
        )
    if (REFAPI_PG, CEILING_LOADS[0]) in results:
        for load in CEILING_LOADS:
            ratio = median_ratio(REFAPI_PG, load, BASELINE_PG)
            check(
                f"{load} on PostgreSQL: ratio to its baseline >= 0.90",
                f"{ratio:.2f}",
                ratio >= 0.90,
            )
    deep = cost_ratio(refapi, "GET /v1/items deep cursor", "GET /v1/items?limit=20")
    check(
        "deep page costs the first page's, within 10%",
        f"{deep:.2f}x the first page's cost",
        deep <= 1.10,
    )
    paying = cost_ratio(refapi, "POST /v1/payments", "POST /v1/articles")
    check(
        "POST /v1/payments <= 1.5x POST /v1/articles", f"{paying:.2f}x", paying <= 1.5
    )
    check(
        "steady RSS per worker <= 1.5x the baseline's",
        f"{steady[refapi] / steady[baseline]:.2f}x",
        steady[refapi] / steady[baseline] <= 1.5,
    )
    check(
        "peak RSS per worker <= 1.5x the baseline's",
        f"{rss[refapi] / rss[baseline]:.2f}x",
        rss[refapi] / rss[baseline] <= 1.5,
    )
    return rows


if __name__ == "__main__":
    sys.exit(main())
