"""`make bench-instructions`: instructions per request, counted by callgrind.

A count of instructions does not move with the machine's load, so it compares
commits on a noisy machine where timings cannot. Each server runs in its own
process under ``valgrind --tool=callgrind``, called in process (no network, no
server):

- refapi as shipped: ``create_app()`` from the environment, as ``refapi serve``
  makes it, with its JSON request log to standard output, a pipe this process
  drains, and its metrics on (``REFAPI_METRICS=127.0.0.1``, their folder named
  first, as gunicorn's master does in ``gunicorn.conf.py``); SQLite;
- the same with the request log off (the ``refapi.request`` logger's level), and
  with the text log, so a line's cost is a difference of two counts;
- the header-matched bare app (``baseline.py``);
- Falcon doing the same work (``peers/falcon_app.py``: request id, CORS, ETag, the
  token check, the shared bucket, the log line and the metrics);
- refapi as shipped on PostgreSQL beside the bare app on psycopg
  (``baseline_pg.py``), when PostgreSQL answers: only this process's
  instructions count, never the database server's;
- a harness that answers at once, whose count is taken from every other's.

Each request gets a new environ, built just before the call and dropped after it,
as a server's is: a list of environs made in advance would stay alive, with what
the app hangs on them, and the collector would walk them all (about 7k
instructions a GET that no server pays). Building it is the harness's cost.

For each request the process makes a warm-up, then a run of N1 calls and one of N2
calls, with callgrind dumping its counters between them (each dump is triggered by
entering ``getpgrp``, called only to mark a boundary): what runs once costs the
same in both runs, so

    instructions per request = (I(N2) - I(N1)) / (N2 - N1) - the harness's

The same count checks that a page costs what it costs whatever the table's size
(``scale.py``). For each target missed, the functions where refapi's instructions
go beside the bare app's are printed and written to ``bench/profiles/``
(``gap.py``), with refapi's Python functions by bytecodes.

    BENCH_N1=100 BENCH_N2=400 BENCH_WARMUP=50 make bench-instructions
"""

from __future__ import annotations

import contextlib
import datetime
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
sys.path[:0] = [str(ROOT), str(BENCH), str(BENCH / "peers")]

import common  # noqa: E402
import gap  # noqa: E402
import scale  # noqa: E402
from bench_db import prepare  # noqa: E402

N1 = int(os.environ.get("BENCH_N1", "100"))
N2 = int(os.environ.get("BENCH_N2", "400"))
WARMUP = int(os.environ.get("BENCH_WARMUP", "50"))
PROFILES = BENCH / "profiles"
ARTICLE = b'{"title": "Benchmark article", "tags": ["bench", "wrk"]}'
PAYMENT = b'{"amount": 10.5, "currency": "EUR"}'
LINE_TARGET = 15_000  # instructions one request log line may cost
PAYMENT_TARGET = 1.5  # a payment's count, at most this many times an article's


@dataclass(frozen=True)
class Server:
    name: str
    app: str  # what the child builds: refapi, bare, falcon, bare-pg, harness
    env: tuple[tuple[str, str], ...] = ()  # its environment, beyond the common
    log_off: bool = False
    backend: str = "sqlite"
    scale: str = ""  # the scale check's table: "small" or "large"


# The environment of every server: refapi's settings as `make bench` serves it
# (the rate limit out of reach of a run's calls, and the admin the token is
# from), its metrics on; each server adds its log format.
ENV = {
    "REFAPI_RATE_LIMIT_CAPACITY": "1000000000",
    "REFAPI_RATE_LIMIT_REFILL": "1000000000",
    "REFAPI_ADMIN_EMAIL": common.ADMIN["email"],
    "REFAPI_ADMIN_PASSWORD": common.ADMIN["password"],
    "REFAPI_TOKEN_TTL": "86400",
    "REFAPI_METRICS": "127.0.0.1",
}
JSON, TEXT = (("REFAPI_LOG_FORMAT", "json"),), (("REFAPI_LOG_FORMAT", "text"),)
SHIPPED = Server("refapi as shipped", "refapi", JSON)
QUIET = Server("refapi, log off", "refapi", JSON, log_off=True)
TEXT_LOG = Server("refapi, text log", "refapi", TEXT)
BARE = Server("bare WSGI + sqlite3", "bare")
FALCON = Server("Falcon, the same work", "falcon", JSON)
HARNESS = Server("the harness alone", "harness")
SHIPPED_PG = Server("refapi as shipped, PostgreSQL", "refapi", JSON, backend="pg")
BARE_PG = Server("bare WSGI + psycopg", "bare-pg", backend="pg")
SMALL = Server("refapi, 1,000 articles", "refapi", JSON, scale="small")
LARGE = Server(f"refapi, {scale.SCALE:,} articles", "refapi", JSON, scale="large")
SERVERS = (SHIPPED, QUIET, TEXT_LOG, BARE, FALCON, HARNESS, SMALL, LARGE)
PG_SERVERS = (SHIPPED_PG, BARE_PG)


@dataclass(frozen=True)
class Call:
    name: str
    method: str
    path: str
    query: str = ""
    body: bytes = b""
    bearer: bool = False  # with the admin's Bearer token
    target: float | None = None  # at most this many times the bare app's count


Figures = dict[Server, dict[str, tuple[float, Path]]]
ANONYMOUS_GET = Call("GET /v1/todos/1", "GET", "/v1/todos/1", target=1.8)
CALLS = (
    ANONYMOUS_GET,
    Call("GET /v1/todos/1, Bearer", "GET", "/v1/todos/1", bearer=True),
    Call("POST /v1/articles, Bearer", "POST", "/v1/articles", body=ARTICLE,
         bearer=True, target=1.5),
    Call("GET /v1/items?limit=100", "GET", "/v1/items", "limit=100", target=1.05),
    Call("POST /v1/payments, Bearer", "POST", "/v1/payments", body=PAYMENT,
         bearer=True),
)  # fmt: skip


# In the process under callgrind ------------------------------------------------


def mark() -> None:
    """A boundary: callgrind dumps its counters on entering ``getpgrp``."""
    os.getpgrp()


def harness(environ: dict, start_response: Callable) -> list[bytes]:
    """An app that answers at once: what calling any app costs the loop."""
    start_response("200 OK", [])
    return [b""]


def build(server: Server) -> Callable:
    if server.app == "refapi":
        from refapi import create_app

        app = create_app()  # from the environment, as `refapi serve`
        if server.log_off:
            common.request_log_off()
        return app
    if server.app == "bare":
        import baseline

        return baseline.application
    if server.app == "bare-pg":
        import baseline_pg

        return baseline_pg.application
    if server.app == "falcon":
        import falcon_app

        return falcon_app.application
    return harness


_KEYS = itertools.count()  # a payment's idempotency key, new for each call


def new_environ(call: Call, authorization: str) -> dict:
    extra = {"HTTP_AUTHORIZATION": authorization} if call.bearer else {}
    if call.path == "/v1/payments":
        extra["HTTP_IDEMPOTENCY_KEY"] = f"k{next(_KEYS)}"
    return common.environ(call.method, call.path, call.query, call.body, **extra)


def run(app: Callable, call: Call, count: int, authorization: str) -> None:
    """``count`` requests, each environ made for its call and dropped after it."""

    def start_response(status, headers, exc_info=None):
        if not status.startswith("2"):
            raise SystemExit(f"{call.name}: {status}")

    for _ in range(count):
        body = app(new_environ(call, authorization), start_response)
        for _chunk in body:
            pass
        if hasattr(body, "close"):  # PEP 3333: the server closes what it was given
            body.close()


def settle(app: Callable, call: Call, authorization: str) -> None:
    """One ``call`` (refapi's first request makes the buckets' file in the data
    folder), then a wait until the folder counts as settled (``SETTLED_NS``,
    storage/sqlite/locks.py): until then each write looks at every file of the
    folder, as a serving process's writes do only in their first two seconds.
    Counted without this wait, a write's figure moved with how fast a run reached
    it: refapi with its log off, quicker to its first write, was counted 25,000
    instructions dearer a write than with its log on."""
    from refapi.storage.sqlite.locks import SETTLED_NS

    run(app, call, 1, authorization)
    time.sleep(SETTLED_NS / 1e9 + 0.1)


def calls_of(server: Server, env: Mapping[str, str] = os.environ) -> tuple[Call, ...]:
    if server.scale:
        return scale.calls(Path(env["BENCH_DB"]), Call)
    return CALLS


def child(server: Server, authorization: str) -> None:
    if os.environ.get("REFAPI_METRICS"):
        from refapi import metrics

        metrics.prepare_folder()  # as gunicorn's master does
    app = build(server)
    if server.app == "refapi":
        settle(app, calls_of(server)[0], authorization)
    for call in calls_of(server):
        run(app, call, WARMUP, authorization)
        mark()  # dump: the set-up and the warm-up
        run(app, call, N1, authorization)
        mark()  # dump: N1 calls
        run(app, call, N2, authorization)
        mark()  # dump: N2 calls
    if os.environ.get("REFAPI_METRICS"):
        from refapi import metrics

        metrics.remove_folder()


# The driver ------------------------------------------------------------------


def log_in(env: dict[str, str]) -> str:
    """The admin's token, made once outside callgrind (its password hash is slow
    there, and no part of a request), in a process of its own (``env``'s)."""
    done = subprocess.run(
        [sys.executable, __file__, "--log-in"],
        env={**os.environ, **env, "REFAPI_LOG_FORMAT": "text"},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.splitlines()[-1]


def print_token() -> None:
    from refapi import create_app

    common.request_log_off()
    app = create_app()
    try:
        print(common.log_in(app))
    finally:
        app.close()


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def callgrind(server: Server, folder: Path, env: dict[str, str], token: str) -> Path:
    """Run ``server`` under callgrind; its standard output (the request log) is a
    pipe read here, and its lines counted, so a log that is on is seen to be."""
    out = folder / f"{slug(server.name)}.cg"
    command = [
        "valgrind", "--tool=callgrind", "--dump-before=getpgrp",
        "--dump-instr=no", "--dump-line=no", f"--callgrind-out-file={out}",
        sys.executable, __file__, "--child", server.name, token,
    ]  # fmt: skip
    errors = folder / f"{slug(server.name)}.stderr"
    with errors.open("w") as stderr:
        process = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=stderr
        )
        lines = sum(1 for _ in process.stdout)
    if process.wait() != 0:
        raise SystemExit(f"{server.name} under callgrind failed:\n"
                         f"{errors.read_text()[-3000:]}")  # fmt: skip
    requests = len(calls_of(server, env)) * (WARMUP + N1 + N2)
    logged = server.app in ("refapi", "falcon") and not server.log_off
    if logged and lines < requests or not logged and lines >= requests:
        raise SystemExit(f"{server.name}: {lines} log lines for {requests} requests")
    return out


def total(dump: Path) -> int:
    return int(re.search(r"^summary:\s+(\d+)", dump.read_text(), re.M).group(1))


def per_request(out: Path, calls: tuple[Call, ...]) -> dict[str, tuple[float, Path]]:
    """Each call's instructions per request, harness included, and the dump of its
    longer run."""
    dumps = [Path(f"{out}.{n}") for n in range(1, 3 * len(calls) + 1)]
    if not all(d.exists() for d in dumps) or Path(f"{out}.{len(dumps) + 1}").exists():
        raise SystemExit(f"{out}: not one dump per boundary (getpgrp called else?)")
    figures = {}
    for n, call in enumerate(calls):
        short, long = dumps[3 * n + 1], dumps[3 * n + 2]
        figures[call.name] = ((total(long) - total(short)) / (N2 - N1), long)
    return figures


@contextlib.contextmanager
def environments(folder: Path) -> Iterator[dict[Server, dict[str, str]]]:
    """Each server's environment: its own copy of one database (a schema of its own
    on PostgreSQL), and its log format; PostgreSQL's are left out, and said so,
    when it does not answer."""
    template, _ = prepare(folder / "template")
    base = {**os.environ, **ENV, "PYTHONHASHSEED": "0"}
    for named in ("REFAPI_METRICS_DIR", "PROMETHEUS_MULTIPROC_DIR"):
        base.pop(named, None)  # each child names its own (Falcon's, its own)
    envs = {}
    for server in SERVERS:
        # In a folder of its own, as data/refapi.db is: the files callgrind writes
        # beside it would change its folder, which a write looks at (its stamp,
        # storage/sqlite/locks.py).
        database = folder / slug(server.name) / "refapi.db"
        database.parent.mkdir(mode=0o700)
        shutil.copy(template, database)
        envs[server] = {**base, **dict(server.env), "BENCH_DB": str(database),
                        "DATABASE_URL": f"sqlite:///{database}",
                        "REFAPI_DATA_DIR": str(folder / slug(server.name))}  # fmt: skip
    import bench_pg

    why = bench_pg.unreachable()
    if why:
        print(f"{why}: SQLite alone", flush=True)
        yield envs
        return
    with bench_pg.schemas(len(PG_SERVERS)) as urls:
        for server, url in zip(PG_SERVERS, urls, strict=True):
            bench_pg.prepare(url)
            data = str(folder / slug(server.name))
            envs[server] = {**base, **dict(server.env), "DATABASE_URL": url,
                            "REFAPI_DATA_DIR": data}  # fmt: skip
        yield envs


def measure(folder: Path) -> tuple[Figures, dict[str, str], str]:
    """Every server's count per request, the harness's taken off; refapi as
    shipped's environment and token."""
    with environments(folder) as envs:
        # One token for every SQLite server (copies of one database, made after the
        # login), one for PostgreSQL's; the others ignore it.
        token = log_in(envs[SHIPPED])
        for server in SERVERS:
            if server is not SHIPPED:
                shutil.copy(envs[SHIPPED]["BENCH_DB"], envs[server]["BENCH_DB"])
        scale.grown(Path(envs[SMALL]["BENCH_DB"]), Path(envs[LARGE]["BENCH_DB"]))
        tokens = {server: token for server in SERVERS}
        if SHIPPED_PG in envs:
            tokens[SHIPPED_PG] = tokens[BARE_PG] = log_in(envs[SHIPPED_PG])
        names = ", ".join(server.name for server in envs)
        print(f"callgrind: {names}; warm-up {WARMUP}, N1 {N1}, N2 {N2}", flush=True)
        with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
            outs = dict(zip(envs, pool.map(
                lambda s: callgrind(s, folder, envs[s], tokens[s]), envs
            ), strict=True))  # fmt: skip
        calls = {server: calls_of(server, envs[server]) for server in envs}
    figures = {server: per_request(outs[server], calls[server]) for server in outs}
    loop = figures.pop(HARNESS)
    # The scale check's reads are GETs without a token: the loop costs what an
    # anonymous GET's does.
    every = loop[ANONYMOUS_GET.name][0]
    net = {
        server: {
            name: (n - loop.get(name, (every,))[0], dump)
            for name, (n, dump) in got.items()
        }
        for server, got in figures.items()
    }
    return net, envs[SHIPPED], token


# What is reported ---------------------------------------------------------------

PYTHON_CALLS = int(os.environ.get("BENCH_PYTHON_CALLS", "10"))
EVERY_BYTECODE = "(every bytecode of the request)"


def bytecodes(app: Callable, call: Call, authorization: str) -> dict[str, float]:
    """What callgrind cannot split, the interpreter's share, split by Python
    function: the bytecodes each runs per request, itself and in what it calls
    (counted by ``sys.settrace`` with opcode events, outside callgrind; a count, as
    repeatable as callgrind's). C functions (SQLite, json's encoder) count nothing
    here: their instructions are in callgrind's tables."""
    run(app, call, WARMUP, authorization)
    inclusive: dict[str, float] = {}
    on_stack: dict[str, int] = {}
    stack: list[tuple[str, int]] = []
    count = [0]

    def name(code) -> str:
        path = Path(code.co_filename)
        where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
        return f"{where}:{code.co_firstlineno} {code.co_qualname}"

    def trace(frame, event, arg):
        if event == "opcode":
            count[0] += 1
        elif event == "call":
            frame.f_trace_opcodes = True
            key = name(frame.f_code)
            stack.append((key, count[0]))
            on_stack[key] = on_stack.get(key, 0) + 1
        elif event == "return" and stack:
            key, began = stack.pop()
            on_stack[key] -= 1
            if not on_stack[key]:  # a recursive call counts once, outermost
                inclusive[key] = inclusive.get(key, 0) + (count[0] - began)
        return trace

    sys.settrace(trace)
    try:
        run(app, call, PYTHON_CALLS, authorization)
    finally:
        sys.settrace(None)
    per_call = {
        key: n / PYTHON_CALLS
        for key, n in inclusive.items()
        if not key.startswith(("bench/instructions.py", "bench/common.py"))  # the loop
    }
    per_call[EVERY_BYTECODE] = count[0] / PYTHON_CALLS
    return per_call


def print_bytecodes(names: list[str], authorization: str, rows: int = 30) -> None:
    """In a process with refapi's shipped environment: for each call named, refapi's
    Python functions by inclusive bytecodes, as JSON on standard error (standard
    output is the request log)."""
    import json

    if os.environ.get("REFAPI_METRICS"):
        from refapi import metrics

        metrics.prepare_folder()
    ours, bare = build(SHIPPED), build(BARE)
    texts = {}
    for call in (c for c in CALLS if c.name in names):
        mine, theirs = bytecodes(ours, call, authorization), bytecodes(bare, call, "")
        texts[call.name] = [
            "",
            f"Python functions by inclusive bytecodes per request (refapi"
            f" {mine[EVERY_BYTECODE]:,.0f},"
            f" the bare app {theirs[EVERY_BYTECODE]:,.0f})",
            "",
            f"{'bytecodes':>10}  function",
            *(
                f"{mine[key]:10,.0f}  {key}"
                for key in sorted(mine, key=mine.__getitem__, reverse=True)[:rows]
                if key != EVERY_BYTECODE
            ),
        ]
    if os.environ.get("REFAPI_METRICS"):
        from refapi import metrics

        metrics.remove_folder()
    print(json.dumps(texts), file=sys.stderr)


def python_profile(missed: list[Call], env: dict[str, str], token: str) -> dict:
    import json

    done = subprocess.run(
        [sys.executable, __file__, "--bytecodes", token, *[c.name for c in missed]],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        check=True,
    )  # fmt: skip
    return json.loads(done.stderr.splitlines()[-1])


def verdict(met: bool) -> str:
    return "PASS" if met else "MISS"


def report(figures: Figures) -> list[str]:
    def count(server: Server, call: Call) -> float:
        return figures[server][call.name][0]

    lines = [
        f"Instructions per request, (I(N2) - I(N1)) / (N2 - N1) with N1 = {N1},"
        f" N2 = {N2}, after {WARMUP} warm-up calls, in process under callgrind, the"
        " harness's count taken off; each environ made for its request and dropped"
        " after it. refapi as shipped: create_app() from the environment, its JSON"
        " request log to a drained pipe, its metrics on (REFAPI_METRICS=127.0.0.1),"
        " SQLite.",
        "",
        "refapi as shipped beside the header-matched bare app:",
        "",
        "| request | bare | refapi | ratio | target | verdict |",
        "|---|---:|---:|---:|---|---|",
    ]
    for call in CALLS:
        bare, ours = count(BARE, call), count(SHIPPED, call)
        target, met = "", ""
        if call.target:
            target = f"<= {call.target:.2f}x"
            met = verdict(ours / bare <= call.target)
        lines.append(f"| {call.name} | {bare:,.0f} | {ours:,.0f}"
                     f" | {ours / bare:.2f} | {target} | {met} |")  # fmt: skip
    article, payment = CALLS[2], CALLS[4]
    paying = count(SHIPPED, payment) / count(SHIPPED, article)
    lines += [
        "",
        f"refapi's payment / its article POST: {paying:.2f}"
        f" (target <= {PAYMENT_TARGET}: {verdict(paying <= PAYMENT_TARGET)})",
        "",
        "Beside Falcon doing the same work (request id, CORS, ETag, the token check,"
        " the shared bucket, the JSON log line, the metrics); target: refapi costs"
        " less:",
        "",
        "| request | bare | Falcon | ratio | refapi | ratio | refapi / Falcon"
        " | verdict |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for call in CALLS:
        bare, ours, falcon = (count(s, call) for s in (BARE, SHIPPED, FALCON))
        ratios = f"{falcon / bare:.2f} | {ours:,.0f} | {ours / bare:.2f}"
        cheaper = f"{ours / falcon:.2f} | {verdict(ours < falcon)}"
        lines.append(
            f"| {call.name} | {bare:,.0f} | {falcon:,.0f} | {ratios} | {cheaper} |"
        )
    lines += [
        "",
        f"What one request log line costs: refapi's count with the log on less its"
        f" count with the log off (target <= {LINE_TARGET:,} each):",
        "",
        "| request | log off | JSON log | JSON line | verdict | text log | text line"
        " | verdict |",
        "|---|---:|---:|---:|---|---:|---:|---|",
    ]
    for call in CALLS:
        off, json_on, text_on = (count(s, call) for s in (QUIET, SHIPPED, TEXT_LOG))
        json_line, text_line = json_on - off, text_on - off
        json_part = f"{json_line:,.0f} | {verdict(json_line <= LINE_TARGET)}"
        text_part = f"{text_line:,.0f} | {verdict(text_line <= LINE_TARGET)}"
        lines.append(f"| {call.name} | {off:,.0f} | {json_on:,.0f} | {json_part}"
                     f" | {text_on:,.0f} | {text_part} |")  # fmt: skip
    if SHIPPED_PG in figures:
        lines += [
            "",
            "On PostgreSQL (this process's instructions only, not the server's),"
            " refapi as shipped beside the bare app on psycopg (no target):",
            "",
            "| request | bare | refapi | ratio |",
            "|---|---:|---:|---:|",
        ]
        for call in CALLS:
            bare, ours = count(BARE_PG, call), count(SHIPPED_PG, call)
            lines.append(f"| {call.name} | {bare:,.0f} | {ours:,.0f}"
                         f" | {ours / bare:.2f} |")  # fmt: skip
    small = {name: n for name, (n, _) in figures[SMALL].items()}
    large = {name: n for name, (n, _) in figures[LARGE].items()}
    return lines + scale.report(small, large)


def main() -> int:
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    with tempfile.TemporaryDirectory(prefix="refapi-instructions-") as tmp:
        folder = Path(os.environ.get("BENCH_KEEP") or tmp)
        folder.mkdir(exist_ok=True)
        figures, env, token = measure(folder)
        lines = report(figures)
        missed = [
            call
            for call in CALLS
            if call.target
            and figures[SHIPPED][call.name][0] / figures[BARE][call.name][0]
            > call.target
        ]
        PROFILES.mkdir(exist_ok=True)
        python = python_profile(missed, env, token) if missed else {}
        for call in missed:
            mine, bare = figures[SHIPPED][call.name][1], figures[BARE][call.name][1]
            text = gap.profile(call.name, mine, bare) + python[call.name]
            (PROFILES / f"{slug(call.name)}.txt").write_text("\n".join(text) + "\n")
            lines += ["", *text]
    today = datetime.date.today().isoformat()
    lines.insert(0, f"{today}, `make bench-instructions` at commit {commit()}.\n")
    print("\n".join(lines))
    written = common.write_results("make bench-instructions", "\n".join(lines))
    where = f", profiles in {PROFILES.relative_to(ROOT)}/" if missed else ""
    print(f"\nwritten to {written.relative_to(ROOT)}{where}")
    return 0


def commit() -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True)  # fmt: skip
    return done.stdout.strip() or "?"


def by_name(name: str) -> Server:
    return next(s for s in (*SERVERS, *PG_SERVERS) if s.name == name)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(by_name(sys.argv[2]), sys.argv[3])
    elif sys.argv[1:2] == ["--log-in"]:
        print_token()
    elif sys.argv[1:2] == ["--bytecodes"]:
        print_bytecodes(sys.argv[3:], sys.argv[2])
    else:
        sys.exit(main())
