"""`make bench-instructions`: instructions per request, counted by callgrind.

A count of instructions does not move with the machine's load, so it compares
commits on a noisy machine where timings cannot. Each server runs in its own
process under ``valgrind --tool=callgrind``, called in process (no network, no
server), every request carrying the admin's Bearer token: refapi with its whole
stack and its metrics on (``REFAPI_METRICS``, docs/operating.md, "Metrics"), its
request log off; the same with the request log on (JSON to /dev/null: no target,
what the log costs); the header-matched bare app (``baseline.py``); and Falcon
doing only the bare work (``peers/falcon_app.py``).

For each request the process makes a warm-up, then a run of N1 calls and one of N2
calls, with callgrind dumping its counters between them (each dump is triggered by
entering ``getpgrp``, called only to mark a boundary): what runs once (building the
calls, the dump itself) costs the same in both runs, so

    instructions per request = (I(N2) - I(N1)) / (N2 - N1)

The same count checks that a page costs what it costs whatever the table's size:
refapi's first page of articles, a page near the end and the last article, on the
seeded 1,000 articles and on a copy grown to ``BENCH_SCALE`` (1,000,000) by one
SQL statement.

For each target missed, the functions where refapi's instructions go beside the bare
app's, from ``callgrind_annotate`` on the longer run, are printed and written to
``bench/profiles/`` (callgrind sees C functions: Python code shows as the
interpreter's own frames, SQLite's, the hashes', the allocator's).

    BENCH_N1=100 BENCH_N2=400 BENCH_WARMUP=50 make bench-instructions
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
sys.path[:0] = [str(ROOT), str(BENCH), str(BENCH / "peers")]

import common  # noqa: E402
from bench_db import prepare  # noqa: E402

N1 = int(os.environ.get("BENCH_N1", "100"))
N2 = int(os.environ.get("BENCH_N2", "400"))
WARMUP = int(os.environ.get("BENCH_WARMUP", "50"))
PROFILES = BENCH / "profiles"
ARTICLE = b'{"title": "Benchmark article", "tags": ["bench", "wrk"]}'
PAYMENT = b'{"amount": 10.5, "currency": "EUR"}'
REFAPI, REFAPI_LOGGED, BARE, FALCON = (
    "refapi",
    "refapi, request log on",
    "bare WSGI + sqlite3",
    "Falcon",
)
SERVERS = (REFAPI, REFAPI_LOGGED, BARE, FALCON)
# The scale check: refapi's article reads on the seeded table and on a large one.
SMALL, LARGE = "refapi, 1,000 articles", "refapi, 1,000,000 articles"
SCALE = int(os.environ.get("BENCH_SCALE", "1000000"))
SCALE_TARGET = 1.05  # a large table's count, at most this many times the small's


@dataclass(frozen=True)
class Call:
    name: str
    method: str
    path: str
    query: str = ""
    body: bytes = b""
    target: float | None = None  # at most this many times the bare app's count


CALLS = (
    Call("GET /v1/todos/1", "GET", "/v1/todos/1", target=1.6),
    Call("POST /v1/articles", "POST", "/v1/articles", body=ARTICLE, target=1.5),
    Call("GET /v1/items?limit=100", "GET", "/v1/items", "limit=100", target=1.0),
    Call("POST /v1/payments", "POST", "/v1/payments", body=PAYMENT),
)
PAYMENT_TARGET = 1.5  # a payment's count, at most this many times an article's


def scale_calls(database: Path) -> tuple[Call, ...]:
    """The first page of articles, a page near the end (through its cursor) and
    the last article, on ``database``, whatever its size."""
    from refapi.storage.sqlite import SqliteStore
    from refapi.web.pagination import encode_cursor

    store = SqliteStore(str(database))
    with sqlite3.connect(database) as conn:
        last = conn.execute("SELECT max(id) FROM articles").fetchone()[0]
    deep = encode_cursor(
        store.secret_key(), "articles", last - 100, store.reset_epoch()
    )
    store.close()
    return (
        Call("GET /v1/articles?limit=20 (the first page)", "GET", "/v1/articles",
             "limit=20"),
        Call("GET /v1/articles?limit=20 (100 from the end)", "GET", "/v1/articles",
             f"limit=20&cursor={deep}"),
        Call("GET /v1/articles/{the last}", "GET", f"/v1/articles/{last}"),
    )  # fmt: skip


def calls_of(server: str, database: Path) -> tuple[Call, ...]:
    return scale_calls(database) if server in (SMALL, LARGE) else CALLS


def refapi_config(folder: Path, database: Path):
    from refapi.config import Config

    return Config(
        database_url=f"sqlite:///{database}",
        data_dir=str(folder),
        rate_limit_capacity=10**9,
        rate_limit_refill=10**9,
        admin_email=common.ADMIN["email"],
        admin_password=common.ADMIN["password"],
        password_hash="pbkdf2:sha256",
        token_ttl=86400,
        metrics=("127.0.0.1",),
    )


# In the process under callgrind ------------------------------------------------


def mark() -> None:
    """A boundary: callgrind dumps its counters on entering ``getpgrp``."""
    os.getpgrp()


def build(server: str, folder: Path, database: Path) -> Callable:
    if server in (REFAPI, REFAPI_LOGGED, SMALL, LARGE):
        if server != REFAPI_LOGGED:
            common.request_log_off()
        from refapi import create_app

        return create_app(refapi_config(folder, database))
    os.environ["BENCH_DB"] = str(database)
    if server == BARE:
        import baseline

        return baseline.application
    import falcon_app

    return falcon_app.application


_KEYS = itertools.count()  # a payment's idempotency key, new for each call


def environs(call: Call, count: int, authorization: str) -> list[dict]:
    made = []
    for _ in range(count):
        extra = {"HTTP_AUTHORIZATION": authorization}
        if call.path == "/v1/payments":
            extra["HTTP_IDEMPOTENCY_KEY"] = f"k{next(_KEYS)}"
        made.append(
            common.environ(call.method, call.path, call.query, call.body, **extra)
        )
    return made


def run(app: Callable, batch: list[dict]) -> None:
    def start_response(status, headers, exc_info=None):
        if not status.startswith("2"):
            raise SystemExit(f"{batch[0]['PATH_INFO']}: {status}")

    for environ in batch:
        for _chunk in app(environ, start_response):
            pass


def child(server: str, folder: Path, database: Path, authorization: str) -> None:
    app = build(server, folder, database)
    for call in calls_of(server, database):
        warm, short, long = (environs(call, n, authorization) for n in (WARMUP, N1, N2))
        run(app, warm)
        mark()  # dump: the set-up and the warm-up
        run(app, short)
        mark()  # dump: N1 calls
        run(app, long)
        mark()  # dump: N2 calls


# The driver ------------------------------------------------------------------


def log_in(folder: Path, database: Path) -> str:
    """The admin's token, made once outside callgrind (its password hash is slow
    there, and no part of a request)."""
    from refapi import create_app

    common.request_log_off()
    app = create_app(refapi_config(folder, database))
    try:
        return common.log_in(app)
    finally:
        app.close()


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def callgrind(server: str, folder: Path, database: Path, token: str) -> Path:
    out = folder / f"{slug(server)}.cg"
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    command = [
        "valgrind", "--tool=callgrind", "--dump-before=getpgrp",
        "--dump-instr=no", "--dump-line=no", f"--callgrind-out-file={out}",
        sys.executable, __file__, "--child", server, str(folder), str(database),
        token,
    ]  # fmt: skip
    done = subprocess.run(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"{server} under callgrind failed:\n{done.stderr[-3000:]}")
    return out


def total(dump: Path) -> int:
    return int(re.search(r"^summary:\s+(\d+)", dump.read_text(), re.M).group(1))


def per_request(out: Path, calls: tuple[Call, ...]) -> dict[str, tuple[float, Path]]:
    """Each call's instructions per request, and the dump of its longer run."""
    dumps = [Path(f"{out}.{n}") for n in range(1, 3 * len(calls) + 1)]
    if not all(d.exists() for d in dumps) or Path(f"{out}.{len(dumps) + 1}").exists():
        raise SystemExit(f"{out}: not one dump per boundary (getpgrp called else?)")
    figures = {}
    for n, call in enumerate(calls):
        short, long = dumps[3 * n + 1], dumps[3 * n + 2]
        figures[call.name] = ((total(long) - total(short)) / (N2 - N1), long)
    return figures


FUNCTION = re.compile(r"^\s*([\d,]+)\s+\([\s\d.]+%\)\s+\S*?:(.+?)(?: \[.*\])?\s*$")
# The interpreter's own frames and calls, and the process's outermost ones: every
# Python function runs inside them, so their inclusive counts say nothing of where.
GENERIC = re.compile(
    r"'|^0x|^\(below main\)$|^main$|^__libc_start|^run_mod$|^Py_(BytesMain|RunMain)$"
    r"|^_?Py(Eval_|Run_|Function_Vectorcall|Object_(Vectorcall|Call|FastCall"
    r"|MakeTpCall|VectorcallTstate|Call_Prepend|FastCallDictTstate))"
    r"|^(slot_tp_|method_vectorcall|cfunction_|vectorcall_|object_vacall|_PyObject_Call"
    r"|call_function|builtin_|type_call|PyVectorcall_Call|partial_|gen_send)"
)


def inclusive(dump: Path) -> dict[str, float]:
    """Each function's inclusive instructions per call of the dump's run (N2
    calls), as ``callgrind_annotate --inclusive=yes`` counts them."""
    text = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(dump)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    costs: dict[str, float] = {}
    for line in text.splitlines():
        found = FUNCTION.match(line)
        if found and not GENERIC.search(found.group(2)):
            name = found.group(2)
            costs[name] = max(
                costs.get(name, 0), int(found.group(1).replace(",", "")) / N2
            )
    return costs


def own(dump: Path, by_object: bool = False) -> dict[str, float]:
    """Each function's own instructions per call of the dump's run (or each shared
    object's: the interpreter, SQLite, libc, OpenSSL...), from the callgrind file
    itself: every cost line but a call's (the one after ``calls=``)."""
    names: dict[str, dict[str, str]] = {"fn": {}, "ob": {}}
    costs: dict[str, float] = {}
    current = {"fn": "", "ob": ""}
    after_call = False
    for line in dump.read_text().splitlines():
        kind, equals, rest = line.partition("=")
        if equals and kind in ("fn", "cfn", "ob", "cob"):
            space = kind[-2:]
            key, _, name = rest.partition(" ")
            if name:
                names[space][key] = name
            if kind in ("fn", "ob"):
                current[kind] = names[space].get(key, key)
        elif line.startswith("calls="):
            after_call = True
        elif (line[:1].isdigit() or line[:1] in "+-*") and " " in line:
            if after_call:
                after_call = False
            else:
                key = Path(current["ob"]).name if by_object else current["fn"]
                costs[key] = costs.get(key, 0) + int(line.split()[-1]) / N2
    return costs


def row(ours: float, bare: float, name: str) -> str:
    return f"{ours:10,.0f} {bare:10,.0f} {ours - bare:10,.0f}  {name}"


def profile(call: Call, ours: Path, bare: Path, rows: int = 20) -> list[str]:
    """Where refapi's instructions go beside the bare app's: the top functions by
    inclusive count (the interpreter's own frames left out), then by own count,
    which add up to the whole gap."""
    lines = [f"## {call.name}: refapi beside the bare app, instructions per request"]
    mine, theirs = own(ours, by_object=True), own(bare, by_object=True)
    lines += ["", "By shared object (own counts)", "",
              f"{'refapi':>10} {'bare':>10} {'gap':>10}  object"]  # fmt: skip
    for name in sorted(mine, key=lambda o: mine[o] - theirs.get(o, 0), reverse=True)[
        :6
    ]:
        there = theirs.get(name, 0)
        lines.append(row(mine[name], there, name))
    for kind in (inclusive, own):
        mine, theirs = kind(ours), kind(bare)
        if kind is inclusive:
            order = sorted(mine, key=mine.__getitem__, reverse=True)
            title = "Top functions by inclusive count, in refapi's order"
        else:
            order = sorted(mine, key=lambda f: mine[f] - theirs.get(f, 0), reverse=True)
            title = "Top functions by own count, by refapi's less the bare app's"
        lines += ["", title, "", f"{'refapi':>10} {'bare':>10} {'gap':>10}  function"]
        for name in order[:rows]:
            there = theirs.get(name, 0)
            lines.append(row(mine[name], there, name))
    return lines


PYTHON_CALLS = int(os.environ.get("BENCH_PYTHON_CALLS", "10"))


def bytecodes(app: Callable, call: Call, authorization: str) -> dict[str, float]:
    """What callgrind cannot split, the interpreter's share, split by Python
    function: the bytecodes each runs per request, itself and in what it calls
    (counted by ``sys.settrace`` with opcode events, outside callgrind; a count, as
    repeatable as callgrind's). C functions (SQLite, json's encoder) count nothing
    here: their instructions are in callgrind's tables."""
    run(app, environs(call, WARMUP, authorization))
    batch = environs(call, PYTHON_CALLS, authorization)
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
        run(app, batch)
    finally:
        sys.settrace(None)
    per_call = {
        key: n / PYTHON_CALLS
        for key, n in inclusive.items()
        if not key.startswith("bench/instructions.py")  # the loop calling the app
    }
    per_call["(every bytecode of the request)"] = count[0] / PYTHON_CALLS
    return per_call


def python_profile(
    missed: list[Call], folder: Path, template: Path, token: str, rows: int = 30
) -> dict[str, list[str]]:
    """For each missed call, refapi's Python functions by inclusive bytecodes."""
    database = folder / "python-profile.db"
    shutil.copy(template, database)
    os.environ["BENCH_DB"] = str(database)
    import baseline

    from refapi import create_app

    app = create_app(refapi_config(folder, database))
    texts = {}
    for call in missed:
        mine = bytecodes(app, call, token)
        bare = bytecodes(baseline.application, call, token)
        total = "(every bytecode of the request)"
        texts[call.name] = [
            "",
            f"Python functions by inclusive bytecodes per request (refapi"
            f" {mine[total]:,.0f}, the bare app {bare[total]:,.0f})",
            "",
            f"{'bytecodes':>10}  function",
            *(
                f"{mine[key]:10,.0f}  {key}"
                for key in sorted(mine, key=mine.__getitem__, reverse=True)[:rows]
                if key != total
            ),
        ]
    app.close()
    return texts


def main() -> int:
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    with tempfile.TemporaryDirectory(prefix="refapi-instructions-") as tmp:
        folder = Path(os.environ.get("BENCH_KEEP") or tmp)
        folder.mkdir(exist_ok=True)
        template, _ = prepare(folder / "template")
        everyone = (*SERVERS, SMALL, LARGE)
        databases = {server: folder / f"{slug(server)}.db" for server in everyone}
        shutil.copy(template, databases[REFAPI])
        token = log_in(folder, databases[REFAPI])
        for server in (REFAPI_LOGGED, BARE, FALCON, SMALL):  # the same token, tables
            shutil.copy(databases[REFAPI], databases[server])
        grown(databases[SMALL], databases[LARGE])
        print(f"callgrind: {', '.join(everyone)};"
              f" warm-up {WARMUP}, N1 {N1}, N2 {N2}", flush=True)  # fmt: skip
        with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
            outs = dict(
                zip(everyone, pool.map(
                    lambda s: callgrind(s, folder, databases[s], token), everyone
                ), strict=True)
            )  # fmt: skip
        figures = {
            server: per_request(out, calls_of(server, databases[server]))
            for server, out in outs.items()
        }
        lines = report(figures) + scale_report(figures)
        missed = [
            call
            for call in CALLS
            if call.target
            and figures[REFAPI][call.name][0] / figures[BARE][call.name][0]
            > call.target
        ]
        PROFILES.mkdir(exist_ok=True)
        python = python_profile(missed, folder, databases[REFAPI], token)
        for call in missed:
            mine, bare = figures[REFAPI][call.name][1], figures[BARE][call.name][1]
            text = profile(call, mine, bare) + python[call.name]
            (PROFILES / f"{slug(call.name)}.txt").write_text("\n".join(text) + "\n")
            lines += ["", *text]
    print("\n".join(lines))
    written = common.write_results("make bench-instructions", "\n".join(lines))
    where = f", profiles in {PROFILES.relative_to(ROOT)}/" if missed else ""
    print(f"\nwritten to {written.relative_to(ROOT)}{where}")
    return 0


def grown(small: Path, large: Path) -> Path:
    """A copy of ``small`` with its articles made up to ``SCALE``, in one statement."""
    shutil.copy(small, large)
    with sqlite3.connect(large) as conn:
        conn.execute(
            "WITH RECURSIVE n(x) AS"
            " (SELECT count(*) + 1 FROM articles UNION ALL"
            "  SELECT x + 1 FROM n WHERE x < ?)"
            " INSERT INTO articles (title, tags, created_at, updated_at)"
            " SELECT 'article ' || x, '[\"bench\"]', '2026-11-21T00:00:00Z',"
            " '2026-11-21T00:00:00Z' FROM n",
            (SCALE,),
        )
    return large


def scale_report(figures: dict[str, dict[str, tuple[float, Path]]]) -> list[str]:
    lines = [
        "",
        f"The cost of a page does not grow with the table: refapi's article reads on"
        f" 1,000 articles and on {SCALE:,} (target: within"
        f" {(SCALE_TARGET - 1) * 100:.0f}%).",
        "",
        f"| request | 1,000 | {SCALE:,} | ratio | verdict |",
        "|---|---:|---:|---:|---|",
    ]
    for name, (small, _) in figures[SMALL].items():
        large = figures[LARGE][name][0]
        verdict = "met" if large / small <= SCALE_TARGET else "not met"
        figure = f"{small:,.0f} | {large:,.0f} | {large / small:.3f}"
        lines.append(f"| {name} | {figure} | {verdict} |")
    return lines


def report(figures: dict[str, dict[str, tuple[float, Path]]]) -> list[str]:
    def count(server: str, name: str) -> float:
        return figures[server][name][0]

    lines = [
        f"Instructions per request, (I(N2) - I(N1)) / (N2 - N1) with N1 = {N1},"
        f" N2 = {N2}, after {WARMUP} warm-up calls, in process under callgrind;",
        "every request carries the admin's Bearer token; refapi's metrics on.",
        "",
        "| request | bare | refapi | ratio | target | verdict | Falcon | ratio "
        "| refapi, log on | ratio |",
        "|---|---:|---:|---:|---|---|---:|---:|---:|---:|",
    ]
    for call in CALLS:
        bare = count(BARE, call.name)
        ours, falcon = count(REFAPI, call.name), count(FALCON, call.name)
        logged = count(REFAPI_LOGGED, call.name)
        if call.target:
            target = f"<= {call.target:.1f}x"
            verdict = "met" if ours / bare <= call.target else "not met"
        else:
            target = verdict = ""
        lines.append(
            f"| {call.name} | {bare:,.0f} | {ours:,.0f} | {ours / bare:.2f} | {target} "
            f"| {verdict} | {falcon:,.0f} | {falcon / bare:.2f} | {logged:,.0f} "
            f"| {logged / bare:.2f} |"
        )
    paying = count(REFAPI, "POST /v1/payments") / count(REFAPI, "POST /v1/articles")
    verdict = "met" if paying <= PAYMENT_TARGET else "not met"
    lines += [
        "",
        f"refapi's payment / its article POST: {paying:.2f}"
        f" (target <= {PAYMENT_TARGET}: {verdict})",
    ]
    return lines


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        server, folder, database, token = sys.argv[2:6]
        child(server, Path(folder), Path(database), token)
        sys.exit(0)
    sys.exit(main())
