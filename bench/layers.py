"""`make bench-layers`: what each layer of refapi as shipped costs, in instructions.

`make bench-instructions` counts a whole request; this splits it. refapi as shipped
(``create_app()`` from the environment, as ``bench/instructions.py`` makes it) is a
chain of WSGI callables: ``App``, then each layer of ``app.py``'s stack, outermost
first, then the router (with the handler and the storage it calls). Under callgrind,
each request is sent in at every depth of the chain, and a layer's own cost is the
count from its depth less the count from the next one:

    own(layer) = I(from the layer inward) - I(from the next one inward)

A layer called alone would not see what the layers outside it left in the environ
(the caller Authenticate found, the path Versioning rewrote), so each depth's
environ is the request's, plus what one request through the whole chain showed had
been added or changed by the time it reached that depth (its lists and dicts fresh
for every call). The router's row is its count less the harness's (the loop and the
environ), so the rows add up to the whole request's count in `make
bench-instructions`, within the environ's copying.

    BENCH_N1=100 BENCH_N2=400 make bench-layers
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import instructions as counted
from instructions import CALLS, SHIPPED, Call, harness, mark, new_environ

N1, N2, WARMUP = counted.N1, counted.N2, counted.WARMUP
MEASURED = tuple(call for call in CALLS if call.path != "/v1/payments")


def chain(app: Callable) -> list[Callable]:
    """``App``, the core's layers outermost first, then the router. The door that
    mounts the lab in front of the core (app.py's ``mount``) counts in App's row:
    it is a function, with no ``app`` to look through."""
    found = [app, app.core]  # type: ignore[attr-defined]
    while hasattr(found[-1], "app"):  # a bound __call__ (app.py, wrapped)
        found.append(getattr(found[-1].app, "__self__", found[-1].app))
    return found


def arrivals(links: list[Callable], call: Call, token: str) -> list[dict]:
    """For each depth, what the environ held beyond the request's on arriving
    there: one request through the whole chain, each link wrapped to look."""
    seen: list[dict] = [{} for _ in links]
    base = new_environ(call, token)
    originals = [getattr(link, "app", None) for link in links]

    def looking(depth: int, inner: Callable) -> Callable:
        def look(environ: dict, start_response: Callable):  # type: ignore[no-untyped-def]
            seen[depth] = {
                key: value for key, value in environ.items()
                if key != "wsgi.input" and base.get(key, object()) is not value
                and base.get(key) != value
            }  # fmt: skip
            return inner(environ, start_response)

        return look

    for depth, link in enumerate(links[:-1]):
        if depth >= 1:  # App holds the store around wsgi_app; the layers, ``app``
            link.app = looking(depth + 1, originals[depth])  # type: ignore[attr-defined]
    try:
        counted.run(links[0], call, 1, token)
    finally:
        for depth, link in enumerate(links[:-1]):
            if depth >= 1:
                link.app = originals[depth]  # type: ignore[attr-defined]
    return seen


def fresh(added: dict) -> dict:
    """``added`` with its lists and dicts copied: a call may change them."""
    return {k: v.copy() if isinstance(v, list | dict) else v for k, v in added.items()}


def child(token: str, names: Path) -> None:
    from refapi import metrics

    metrics.prepare_folder()
    app = counted.build(SHIPPED)
    counted.settle(app, MEASURED[0], token)  # writes counted as a server's are
    links = chain(app)
    names.write_text("\n".join(type(link).__name__ for link in links))
    for call in MEASURED:
        added = arrivals(links, call, token)
        for depth, link in enumerate([*links, harness]):
            extra = added[depth] if depth < len(links) else {}

            def entry(environ: dict, start_response: Callable, link=link, extra=extra):
                environ.update(fresh(extra))
                return link(environ, start_response)

            counted.run(entry, call, WARMUP, token)
            mark()
            counted.run(entry, call, N1, token)
            mark()
            counted.run(entry, call, N2, token)
            mark()
    metrics.remove_folder()


def main() -> int:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        with counted.environments(folder) as envs:
            env = envs[SHIPPED]
            token = counted.log_in(env)
            out = folder / "layers.cg"
            command = [
                "valgrind", "--tool=callgrind", "--dump-before=getpgrp",
                "--dump-instr=no", "--dump-line=no", f"--callgrind-out-file={out}",
                sys.executable, __file__, "--child", token, str(folder / "names"),
            ]  # fmt: skip
            done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)  # fmt: skip
            if done.returncode != 0:
                raise SystemExit(done.stderr[-3000:])
            names = (folder / "names").read_text().split("\n")
            names[-1] += " (and the handler, the storage)"
            dumps = sorted(folder.glob("layers.cg.*"), key=lambda p: int(p.suffix[1:]))
            counts = [counted.total(d) for d in dumps]
    depths = len(names) + 1  # and the harness
    print(f"Instructions per request by layer, refapi as shipped; N1 {N1}, N2 {N2}.\n")
    header = "| layer | " + " | ".join(call.name for call in MEASURED) + " |"
    rows: list[list[float]] = [[] for _ in range(len(names))]
    for n, _call in enumerate(MEASURED):
        per = []
        for depth in range(depths):
            first = 3 * (n * depths + depth)
            per.append((counts[first + 2] - counts[first + 1]) / (N2 - N1))
        for depth in range(len(names)):
            rows[depth].append(per[depth] - per[depth + 1])
    print(header)
    print("|---|" + "---:|" * len(MEASURED))
    for name, row in zip(names, rows, strict=True):
        print(f"| {name} | " + " | ".join(f"{v:,.0f}" for v in row) + " |")
    totals = [sum(column) for column in zip(*rows, strict=True)]
    print("| the whole request | " + " | ".join(f"{v:,.0f}" for v in totals) + " |")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], Path(sys.argv[3]))
    else:
        os.environ.setdefault("PYTHONHASHSEED", "0")
        raise SystemExit(main())
