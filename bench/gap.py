"""Where a missed target's instructions go: refapi's callgrind dump beside the bare
app's, by shared object and by C function (``instructions.py`` prints these for
each target it misses). Every count is per request: a dump holds ``N2`` calls.
callgrind sees C functions only: Python code shows as the interpreter's own
frames, SQLite's, the hashes', the allocator's.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

N2 = int(os.environ.get("BENCH_N2", "400"))

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


def profile(name: str, ours: Path, bare: Path, rows: int = 20) -> list[str]:
    """Where refapi's instructions go beside the bare app's: the top functions by
    inclusive count (the interpreter's own frames left out), then by own count,
    which add up to the whole gap."""
    lines = [f"## {name}: refapi beside the bare app, instructions per request"]
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
