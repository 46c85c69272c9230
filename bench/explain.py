"""`make bench-explain`: what one explanation costs, hostile or not, against its
budget of 25 ms of CPU (docs/explain.md, "Limits").

The explainer runs a request through the whole service and lints its answer, so
its cost is the form's (read, parsed, validated), the inner request's and the
annotation's. The cases: the forms its guards refuse (those of
tests/lab/test_explain.py, and one past each limit of the form), the two that
made it a lever (an 896 KiB form nested 32 deep; explaining
``GET /docs/swagger-ui-bundle.js``, 1.7 MB, for a 56-byte form), the largest form
the schema takes written with every character escaped (and run: a target and
fields just within gunicorn's limits, against the lab's echo), and bad_bodies.py's
hostile shapes filled to the form's limit. Then a few requests, each explained and
sent directly: an explanation costs what its request does too (a login hashes a
password; ``GET /openapi.json`` writes 1.1 MB of JSON), the same explained or not,
so for these the budget holds for what explaining adds.

Each figure is the median of ``BENCH_EXPLAIN_REPEATS`` (default 7) calls through
the whole stack, in milliseconds of this process's CPU (``time.process_time``),
after one call to warm up (httplint's import is the first explanation's). Each
call comes from an address of its own, so the ``"explain"`` bucket (30 a minute an
address) never answers in place of the explainer. Alone:
``.venv/bin/python bench/explain.py``.
"""

from __future__ import annotations

import datetime
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from itertools import count
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import bad_bodies  # noqa: E402
import common  # noqa: E402

from refapi import schemas  # noqa: E402
from refapi.lab import explain  # noqa: E402

REPEATS = int(os.environ.get("BENCH_EXPLAIN_REPEATS", "7"))
BUDGET_MS = 25.0
GIB = str(1 << 30)
KiB = 1024


def escaped(value: Any) -> str:
    """``value`` as JSON with every character of every string as an escape: the
    longest way to write it (``\\u0061``; two escapes for an astral character)."""
    if isinstance(value, str):
        units = value.encode("utf-16-be")
        pairs = (units[i : i + 2].hex() for i in range(0, len(units), 2))
        return '"' + "".join(f"\\u{unit}" for unit in pairs) + '"'
    if isinstance(value, list):
        return "[" + ", ".join(escaped(item) for item in value) + "]"
    assert isinstance(value, dict)
    items = (f"{escaped(k)}: {escaped(v)}" for k, v in value.items())
    return "{" + ", ".join(items) + "}"


def form(method: str = "GET", path: str = "/v1/todos/1", **rest: Any) -> bytes:
    return json.dumps({"method": method, "path": path, **rest}).encode()


def largest_form() -> bytes:
    """The largest form the schema takes that the explainer runs: its bounds, each
    field at its longest (a name of 64, a value of Latin-1), a target and a count
    of fields just within gunicorn's limits, the body astral, every character
    escaped; it asks for the lab's echo, which sends much of it back."""
    bounds = schemas.document("explain-form")["properties"]
    pair = bounds["headers"]["items"]
    # Host and the body's Content-Length join the form's fields.
    fields = min(bounds["headers"]["maxItems"], explain.LIMIT_REQUEST_FIELDS - 2)
    name, value = pair["prefixItems"][0]["maxLength"], pair["items"]["maxLength"]
    line = explain.LIMIT_REQUEST_LINE - len("POST  HTTP/1.1")
    target = "/lab/anything?q="
    target += "a" * (min(bounds["path"]["maxLength"], line) - len(target))
    headers = [[f"X-{n:0{name - 2}d}", "\u00e9" * value] for n in range(fields)]
    body = "\U0001f984" * bounds["body"]["maxLength"]
    text = {"method": "POST", "path": target, "headers": headers, "body": body}
    return escaped(text).encode()


def cases(limit: int) -> dict[str, bytes]:
    """Each case's form, as sent; ``limit``: the form's, in bytes."""
    guards = {
        f"field {name}": form(headers=[["Accept", "*/*"], [name, "x"]])
        for name in ("Host", "cookie", "X-Forwarded-For", "X-Forwarded-Proto",
                     "Forwarded", "Via", "Content-Length", "Transfer-Encoding")
    }  # fmt: skip
    for path in ("/lab/explain", "/lab/%65xplain?x=1", "/lab/delay/1", "/lab/delay"):
        guards[f"path {path}"] = form(path=path)
    malformed = {
        "no method": {"path": "/v1/items"},
        "lower-case method": {"method": "get", "path": "/v1/items"},
        "absolute target": {"method": "GET", "path": "http://example.com/"},
        "two slashes": {"method": "GET", "path": "//example.com/"},
        "space in target": {"method": "GET", "path": "/a b"},
        "underscore in a name": {"method": "GET", "path": "/",
                                 "headers": [["A_B", "1"]]},
        "line break in a value": {"method": "GET", "path": "/",
                                  "headers": [["A", "1\r\nB: 2"]]},
        "half a pair": {"method": "GET", "path": "/", "headers": [["A"]]},
        "long body": {"method": "GET", "path": "/", "body": "x" * 1537},
        "17 fields": {"method": "GET", "path": "/", "headers": [["A", "1"]] * 17},
        "long value": {"method": "GET", "path": "/",
                       "headers": [["A", "\u00e9" * 129]]},
    }  # fmt: skip
    guards |= {name: json.dumps(f).encode() for name, f in malformed.items()}
    guards["request line over 4094 bytes"] = form(path="/v1/items?x=" + "a" * 4080)
    guards["form over its limit"] = b"[" * (limit + 1)
    guards["form nested 4 deep"] = form(path="/", headers=[[["A", "1"]]])
    lever = bad_bodies.json_shapes("headers")["arrays 32 deep, side by side"]
    named = {
        "896 KiB form nested 32 deep": lever(896 * KiB),
        "GET /docs/swagger-ui-bundle.js": form(path="/docs/swagger-ui-bundle.js"),
        "largest valid form": largest_form(),
    }
    hostile = {
        f"at the limit: {shape}": make(limit)
        for shape, make in bad_bodies.json_shapes("body").items()
    }
    return guards | named | hostile


# Requests explained and also sent directly: an explanation costs its request's
# own work too (a login hashes a password, limited by its own "auth" bucket; the
# service's document is 1.1 MB of JSON), the same explained or not, so the budget
# holds for what explaining adds.
REQUESTS = {
    "GET /v1/todos/1": ("GET", "/v1/todos/1", [], ""),
    "GET /docs/swagger-ui-bundle.js": ("GET", "/docs/swagger-ui-bundle.js", [], ""),
    "GET /openapi.json": ("GET", "/openapi.json", [], ""),
    "GET /ui/app.js": ("GET", "/ui/app.js", [], ""),
    "POST /api/login": ("POST", "/api/login", [["Content-Type", "application/json"]],
                        json.dumps(common.ADMIN)),
}  # fmt: skip


def main() -> int:
    common.request_log_off()
    with tempfile.TemporaryDirectory(prefix="refapi-explain-") as tmp:
        app = bad_bodies.app_for(Path(tmp) / "explain.db")
        try:
            lines = report(app)
        finally:
            app.close()
    today = datetime.date.today().isoformat()
    lines.insert(0, f"{today}, `make bench-explain` at commit {commit()}.\n")
    written = common.write_results("make bench-explain", "\n".join(lines))
    print(f"\nwritten to {written.relative_to(ROOT)}")
    return 0


class Client:
    """Calls through the whole stack, each from an address of its own (a fresh
    "explain" bucket); ``status``: the last answer's."""

    def __init__(self, app: Callable[..., Any]) -> None:
        self.app, self.addresses, self.status = app, count(1), ""

    def call(self, method: str, path: str, body: bytes, **extra: str) -> bytes:
        n = next(self.addresses)
        address = f"10.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}"
        target, _, query = path.partition("?")
        env = common.environ(method, target, query, body=body, REMOTE_ADDR=address)
        env.update(extra)

        def start_response(status: str, headers: Any, exc_info: Any = None) -> None:
            self.status = status[:3]

        return b"".join(self.app(env, start_response))

    def explain(self, form: bytes, **extra: str) -> bytes:
        return self.call("POST", explain.PATH, form, **extra)

    def send(self, method: str, path: str, fields: list[list[str]], text: str) -> bytes:
        """The request itself, as the explainer would make it."""
        environ = {
            name.upper().replace("-", "_")
            if name.lower() == "content-type"
            else "HTTP_" + name.upper().replace("-", "_"): value
            for name, value in fields
        }
        return self.call(method, path, text.encode(), **environ)


def cpu_ms(call: Callable[[], object]) -> float:
    """The median of ``REPEATS`` calls, in milliseconds of this process's CPU."""
    timings = []
    for _ in range(REPEATS):
        gc.collect()  # each call starts from the same collector state
        began = time.process_time()
        call()
        timings.append(time.process_time() - began)
    return statistics.median(timings) * 1000


def report(app: Callable[..., Any]) -> list[str]:
    client = Client(app)
    # Declared 1 GiB and nothing sent: the 413 names the form's limit.
    limit = json.loads(client.explain(b"", CONTENT_LENGTH=GIB))["details"]["limit"]
    client.explain(form())  # the first explanation imports httplint
    lines = [
        f"One explanation's CPU, the median of {REPEATS} calls through the whole "
        f"stack; the form's limit: {limit:,} bytes; budget {BUDGET_MS:g} ms each.\n",
        "| case | form bytes | answer | CPU ms |", "|---|---:|---|---:|",
    ]  # fmt: skip
    judged: dict[str, float] = {}
    for name, body in cases(limit).items():
        judged[name] = ms = cpu_ms(lambda body=body: client.explain(body))
        lines.append(f"| {name} | {len(body):,} | {client.status} | {ms:.1f} |")
    lines += [
        "", "Requests explained, and sent directly (the budget holds for what "
        "explaining adds to the request's own work):", "",
        "| request | answer | sent, CPU ms | explained, CPU ms | added |",
        "|---|---|---:|---:|---:|",
    ]  # fmt: skip
    for name, (method, path, fields, text) in REQUESTS.items():
        body = form(method, path, headers=fields, body=text)
        explained = cpu_ms(lambda body=body: client.explain(body))
        sent = cpu_ms(
            lambda m=method, p=path, f=fields, t=text: client.send(m, p, f, t)
        )
        added = explained - sent
        judged[f"{name}, what explaining adds"] = added
        lines.append(
            f"| {name} | {client.status} | {sent:.1f} | {explained:.1f} | {added:.1f} |"
        )
    lines += verdict(judged)
    print("\n".join(lines))
    return lines


def verdict(judged: dict[str, float]) -> list[str]:
    """The worst five, and whether every case is within the budget."""
    worst = sorted(judged.items(), key=lambda item: item[1], reverse=True)[:5]
    lines = ["", "The worst five:", "", "| case | CPU ms | verdict |", "|---|---:|---|"]
    for name, ms in worst:
        lines.append(f"| {name} | {ms:.1f} | {'PASS' if ms <= BUDGET_MS else 'MISS'} |")
    missed = [name for name, ms in judged.items() if ms > BUDGET_MS]
    said = f"MISS ({len(missed)} over {BUDGET_MS:g} ms)" if missed else "PASS"
    return [*lines, "", f"Every explanation within {BUDGET_MS:g} ms of CPU: {said}"]


def commit() -> str:
    done = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True, text=True,
    )  # fmt: skip
    return done.stdout.strip() or "?"


if __name__ == "__main__":
    sys.exit(main())
