"""`make bench`: refapi as shipped beside the bare app, Falcon and the others.

refapi is served as shipped (``launch.py``): ``refapi serve``, its own gunicorn
settings and worker class, its JSON request log to a pipe that is drained, its
metrics on; the rate limit's capacity is set out of reach of a run, the bucket
still taken every request. Beside it, on stock gunicorn (``gunicorn_bench.py``: the
sync worker), a WSGI function returning a constant (the transport's ceiling), the
bare WSGI + sqlite3 app, Falcon doing refapi's work on these requests (its log to a
drained pipe and its metrics on too) and Flask doing the bare work. The same-worker
servers put the bare app and Falcon on refapi's worker class, so the ratio with every
app on one worker class is measured too. Every server has the same number of
workers, on loopback, against its own copy of one seeded database: on SQLite a copy
of one file, on PostgreSQL a schema of its own (``bench_pg.py``).

wrk loads one server at a time. In each round the servers of a request take their
turn in an order rotated by one from the last round's, so each in turn goes first;
each ratio is to the baseline of the same backend measured in the same round, so
drift in the machine's speed cancels. The tables give the median over rounds and
the spread (the lowest and the highest round's). When PostgreSQL does not answer,
the SQLite half runs alone and says so.

refapi's writes need a credential: the admin logs in once, in process, on each
backend's database before it is copied, so every server of that backend knows the
token; wrk sends it with every write (``wrk ... -- <nonce> <token>``), to every
server, so all read the same bytes (the bare app and Flask ignore it). Reads go
without it, as the public's do.

    BENCH_ROUNDS=5 BENCH_SECONDS=3 BENCH_CONNECTIONS=8 make bench
    BENCH_LOADS=todos,articles BENCH_ROUNDS=1 BENCH_SECONDS=1 make bench   # a try
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
sys.path[:0] = [str(ROOT), str(BENCH)]

import bench_pg  # noqa: E402
import chart  # noqa: E402
import common  # noqa: E402
import launch  # noqa: E402
import report  # noqa: E402
from bench_db import DEEP_ID, prepare  # noqa: E402
from launch import Server  # noqa: E402

from refapi import create_app  # noqa: E402
from refapi.client import Client  # noqa: E402
from refapi.config import Config  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
SECONDS = int(os.environ.get("BENCH_SECONDS", "3"))
CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", "8"))
# A try on fewer requests: the loads whose name holds one of these words.
ONLY = [word for word in os.environ.get("BENCH_LOADS", "").split(",") if word]
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
# As shipped: the JSON request log (the default, named so a shell's choice does not
# leak in) and the metrics on. Falcon gets the same, and REFAPI_ENV for its bucket.
SHIPPED_ENV = {**REFAPI_ENV, "REFAPI_LOG_FORMAT": "json", "REFAPI_METRICS": "127.0.0.1"}
REFAPI_WORKER = {"BENCH_WORKER_CLASS": "refapi.serving.gunicorn.SyncWorker"}


@dataclass(frozen=True)
class Load:
    name: str
    path: str  # "{cursor}" is replaced by the server's deep cursor
    script: str | None = None


LOADS = tuple(
    load
    for load in (
        Load("GET /v1/todos/1", "/v1/todos/1"),
        Load("GET /v1/items?limit=20", "/v1/items?limit=20"),
        Load("GET /v1/items deep cursor", "/v1/items?limit=20&cursor={cursor}"),
        Load("GET /v1/articles/{id}", "/v1/articles/500"),
        Load("POST /v1/articles", "/v1/articles", "post_article.lua"),
        Load("POST /v1/payments", "/v1/payments", "post_payment.lua"),
    )
    if not ONLY or any(word in load.name for word in ONLY)
)
EVERYTHING = tuple(load.name for load in LOADS)
GET, POST = "GET /v1/todos/1", "POST /v1/articles"  # issue 26's two requests
TWO = (GET, POST)
N = report.NAMES


def machine() -> str:
    cpu = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    return f"{os.cpu_count()} cores, {cpu}, Python {platform.python_version()}"


def sqlite_servers() -> list[Server]:
    return [
        Server(N.CEILING, "ceiling:application", TWO, N.BASELINE),
        Server(N.BASELINE, "baseline:application", EVERYTHING, N.BASELINE),
        Server(N.REFAPI, "", EVERYTHING, N.BASELINE, dict(SHIPPED_ENV), logs=True),
        Server(N.FALCON, "falcon_app:application", EVERYTHING, N.BASELINE,
               dict(SHIPPED_ENV), logs=True),
        Server(N.FLASK, "flask_app:application", EVERYTHING, N.BASELINE),
        Server(N.BASELINE_SAME, "baseline:application", TWO, N.BASELINE_SAME,
               dict(REFAPI_WORKER)),
        Server(N.FALCON_SAME, "falcon_app:application", TWO, N.BASELINE_SAME,
               {**SHIPPED_ENV, **REFAPI_WORKER}, logs=True),
        # Granian (issue 37): refapi as `refapi serve --server granian` serves it,
        # the bare app and Falcon on Granian's own command line, two threads a
        # worker each, as refapi's; every ratio to the bare app on stock gunicorn.
        Server(N.REFAPI_GRANIAN, "", TWO, N.BASELINE, dict(SHIPPED_ENV), logs=True,
               server="granian"),
        Server(N.BASELINE_GRANIAN, "baseline:application", TWO, N.BASELINE,
               server="granian"),
        Server(N.FALCON_GRANIAN, "falcon_app:application", TWO, N.BASELINE,
               dict(SHIPPED_ENV), logs=True, server="granian"),
    ]  # fmt: skip


def postgres_servers() -> list[Server]:
    return [
        Server(N.BASELINE_PG, "baseline_pg:application", EVERYTHING, N.BASELINE_PG),
        Server(N.REFAPI_PG, "", EVERYTHING, N.BASELINE_PG, dict(SHIPPED_ENV),
               logs=True),
        Server(N.BASELINE_PG_SAME, "baseline_pg:application", TWO,
               N.BASELINE_PG_SAME, dict(REFAPI_WORKER)),
    ]  # fmt: skip


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def admin_token(database_url: str, data: Path) -> str:
    """The admin's token from one login, in process, on ``database_url``."""
    common.request_log_off()
    env = {**REFAPI_ENV, "DATABASE_URL": database_url, "REFAPI_DATA_DIR": str(data)}
    app = create_app(Config.from_env(env))
    try:
        return common.log_in(app).removeprefix("Bearer ")
    finally:
        app.close()


def on_sqlite(servers: list[Server], folder: Path, template: Path, cursor: str) -> None:
    """Give each SQLite server a copy of the prepared ``template`` (the admin's token
    made in it first), its folder and the cursor to ask for (refapi's ``cursor``)."""
    token = admin_token(f"sqlite:///{template}", folder)
    for server in servers:
        database = folder / f"{slug(server.name)}.db"
        shutil.copy(template, database)
        server.env["DATABASE_URL"] = f"sqlite:///{database}"
        server.env["BENCH_DB"] = str(database)
        server.env["REFAPI_DATA_DIR"] = str(folder / slug(server.name))
        server.cursor = cursor if not server.module else common.sign(DEEP_ID)
        server.token = token


def on_postgres(servers: list[Server], urls: Iterable[str], folder: Path) -> None:
    """Give each PostgreSQL server its prepared schema, and the cursor to ask for;
    every one gets the token of refapi's schema (the others ignore it)."""
    for server, url in zip(servers, urls, strict=True):
        server.env["DATABASE_URL"] = url
        server.env["REFAPI_DATA_DIR"] = str(folder / slug(server.name))
        refapi_cursor = bench_pg.prepare(url)
        server.cursor = refapi_cursor if not server.module else common.sign(DEEP_ID)
    shipped = next(s for s in servers if not s.module)
    token = admin_token(shipped.env["DATABASE_URL"], folder)
    for server in servers:
        server.token = token


def with_metrics(servers: list[Server], stack: contextlib.ExitStack) -> None:
    """A peer with metrics on gets prometheus-client's multiprocess folder, named
    before its workers import it, as refapi's master names refapi's
    (``on_starting``)."""
    for server in servers:
        if server.module and server.env.get("REFAPI_METRICS"):
            folder = tempfile.mkdtemp(prefix="refapi-bench-peer-")
            server.env["PROMETHEUS_MULTIPROC_DIR"] = folder
            stack.callback(shutil.rmtree, folder, True)


def main() -> int:
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (make bench installs it)")
    sqlite, postgres = sqlite_servers(), postgres_servers()
    # Not in the rounds: what a login with the default hash (scrypt) adds to a
    # worker's memory.
    scrypt_env = {k: v for k, v in SHIPPED_ENV.items() if k != "REFAPI_PASSWORD_HASH"}
    scrypt = Server(N.SCRYPT, "", (), N.REFAPI, scrypt_env, logs=True)
    absent = bench_pg.unreachable()
    if absent:
        print(f"{absent}\nmeasuring SQLite alone", flush=True)
        postgres = []
    servers = sqlite + postgres
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="refapi-bench-"))
        folder = Path(tmp)
        template, cursor = prepare(folder)
        # Copied before the admin is made in the template, so this server makes
        # it, its password hashed by the default.
        database = folder / "scrypt.db"
        shutil.copy(template, database)
        scrypt.env["DATABASE_URL"] = f"sqlite:///{database}"
        scrypt.env["REFAPI_DATA_DIR"] = str(folder / "scrypt")
        on_sqlite(sqlite, folder, template, cursor)
        urls = stack.enter_context(bench_pg.schemas(len(postgres)))
        on_postgres(postgres, urls, folder)
        with_metrics(servers, stack)
        for server in [*servers, scrypt]:
            launch.start(server, folder / f"{slug(server.name)}.stderr")
            stack.callback(launch.stop, server)
        for server in [*servers, scrypt]:
            errors = folder / f"{slug(server.name)}.stderr"
            launch.wait_ready(server, "/v1/todos/1", errors)
        results = measure(servers)
        rss = {server.name: launch.peak_rss_kib(server) for server in servers}
        steady = {server.name: launch.steady_rss_kib(server) for server in servers}
        login = login_peak(scrypt, folder / f"{slug(scrypt.name)}.stderr")
        for server in servers:
            if not server.module and not launch.counted(server):
                raise SystemExit(f"{server.name}: its metrics are not on")
    # The servers are stopped: their logs are read to the end.
    for server in servers:
        if server.logs and server.lines < server.requests:
            said = f"{server.lines} log lines for {server.requests} requests"
            raise SystemExit(f"{server.name}: {said}: its log is not on")
    text = report.text(header(absent), servers, results, rss, steady, login, ROUNDS)
    print("\n" + text)
    written = common.write_results("make bench", text)
    print(f"written to {written.relative_to(ROOT)}")
    write_chart(servers, results, absent)
    return 0


def measure(servers: list[Server]) -> dict[tuple[str, str], list[dict]]:
    results: dict[tuple[str, str], list[dict]] = {}
    for round_number in range(ROUNDS):
        print(f"round {round_number + 1}/{ROUNDS}", flush=True)
        for load in LOADS:
            order = [s for s in servers if load.name in s.serves]
            turn = round_number % len(order)
            for server in order[turn:] + order[:turn]:
                nonce = f"r{round_number}-{os.urandom(4).hex()}"
                sample = run_wrk(server, load, nonce)
                results.setdefault((server.name, load.name), []).append(sample)
    return results


def run_wrk(server: Server, load: Load, nonce: str) -> dict[str, float]:
    path = load.path.replace("{cursor}", server.cursor)
    url = f"http://127.0.0.1:{server.port}{path}"
    command = ["wrk", "-t2", f"-c{CONNECTIONS}", f"-d{SECONDS}s", "--latency"]
    if load.script:
        command += ["-s", str(BENCH / "wrk" / load.script)]
    command += [url, "--", nonce, *([server.token] if load.script else [])]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if bad or "Socket errors" in out and "timeout" in out:
        print(f"  ! {server.name} {load.name}: {bad.group(0) if bad else 'errors'}")
    server.requests += int(re.search(r"(\d+) requests in", out).group(1))
    return {
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
        "p50": _ms(re.search(r"50%\s+([\d.]+\w+)", out).group(1)),
        "p99": _ms(re.search(r"99%\s+([\d.]+\w+)", out).group(1)),
    }


def _ms(text: str) -> float:
    value, unit = re.fullmatch(r"([\d.]+)(\w+)", text).groups()
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def login_peak(server: Server, errors: Path) -> dict[str, float]:
    """What a login costs in memory, on a server whose admin's password is hashed
    with scrypt (the default): each worker's peak is reset (``clear_refs``), logins
    are made until every worker has answered some, and the largest rise of a peak
    over its worker's resident memory before is reported, with the memory it holds
    after."""
    url = f"http://127.0.0.1:{server.port}/v1/todos/1"
    subprocess.run(["wrk", "-t1", "-c2", "-d1s", url], capture_output=True, check=True)
    pids = launch.workers(server)
    if not pids:  # one run in three once, cause unknown: say what is known
        said = errors.read_text()[-3000:] if errors.exists() else ""
        raise SystemExit(
            f"{server.name}: no workers under {server.process.pid}, which"
            f" {'runs' if server.process.poll() is None else 'has exited'}\n{said}"
        )
    before = {pid: launch.status_kib(pid, "VmRSS") for pid in pids}
    for pid in pids:
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS
    client = Client(f"http://127.0.0.1:{server.port}")
    for _ in range(4 * len(pids)):  # connections spread over the sync workers
        client.login(common.ADMIN["email"], common.ADMIN["password"])
    peaks = {pid: launch.status_kib(pid, "VmHWM") for pid in pids}
    after = {pid: launch.status_kib(pid, "VmRSS") for pid in pids}
    return {
        "steady": max(before.values()) / 1024,
        "added": max(peaks[pid] - before[pid] for pid in pids) / 1024,
        "after": max(after.values()) / 1024,
    }


def header(absent: str | None) -> list[str]:
    return [
        f"Measured {time.strftime('%Y-%m-%d')} on {machine()};",
        f"{launch.WORKERS} workers a server, wrk -t2 -c{CONNECTIONS} -d{SECONDS}s"
        f" on loopback, {ROUNDS} rounds, the order rotated each round.",
        "refapi as shipped: `refapi serve` (its gunicorn.conf.py, its worker class",
        "refapi.serving.gunicorn.SyncWorker), the JSON request log to a drained pipe,",
        "metrics on (REFAPI_METRICS=127.0.0.1). The others on stock gunicorn (sync",
        'worker) unless named "on refapi\'s worker". Ratio: the median over rounds',
        "of req/s divided by the req/s of the baseline named in the same round;",
        "spread: the lowest and the highest round's ratio. Writes carry a Bearer",
        "token (refapi and Falcon check it; the others ignore it); reads carry none.",
        *([f"PostgreSQL was not measured ({absent})."] if absent else []),
    ]


def write_chart(servers, results, absent: str | None) -> None:
    """The chart of the GET and the POST on each backend, beside the table."""
    groups = []
    backends = [("SQLite", N.BASELINE)]
    if not absent:
        backends.append(("PostgreSQL", N.BASELINE_PG))
    for backend, baseline in backends:
        for load in TWO:
            bars = [
                (server.name, statistics.median(s["rps"] for s in samples))
                for server in servers
                if server.baseline == baseline and server.name != N.CEILING
                and (samples := results.get((server.name, load)))
            ]  # fmt: skip
            if bars:
                groups.append((f"{load}, {backend}", bars))
    title = f"make bench, {time.strftime('%Y-%m-%d')}: requests per second (median)"
    CHART.write_text(chart.svg(title, groups))
    print(f"chart written to {CHART.relative_to(ROOT)}")


if __name__ == "__main__":
    sys.exit(main())
