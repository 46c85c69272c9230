"""`make bench-prices`: what one step of a request costs, in instructions.

`make bench-layers` says where a request's instructions go; this says what the
steps they are made of cost on this interpreter, so a cut can be weighed before it
is made: a read of the environ, a Python call by position or by keyword, a
system call, a number's text. Each step runs in a process of its own under
callgrind, a warm-up, then N1 and N2 times between two dumps (as in
``instructions.py``), and its price is

    (I(N2) - I(N1)) / (N2 - N1) - the same of a step that does nothing

The step that does nothing is a call of an empty lambda; a step is a lambda too,
so what is left is the step's own cost (a statement is a function's: its row
counts that call as well). Figures in docs/benchmarks.md, "What a
step costs".

    make bench-prices
"""

from __future__ import annotations

import fcntl
import mmap
import os
import re
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from json.encoder import encode_basestring
from pathlib import Path

from instructions import mark, total  # the boundaries and the dumps' counts

N1, N2, WARMUP = 200, 1000, 50


def steps(folder: str) -> dict[str, Callable[[], object]]:
    """Each step by name, and its set-up (a file, a map, a lock) made here."""
    fd = os.open(os.path.join(folder, "file"), os.O_RDWR | os.O_CREAT, 0o600)
    os.ftruncate(fd, 4096)
    link = f"/proc/self/fd/{fd}"
    table = mmap.mmap(fd, 4096)
    environ = {f"HTTP_X_{n}": str(n) for n in range(30)}
    environ["refapi.route"] = "/v1/todos/{id}"
    lock = threading.Lock()
    slot = struct.Struct("<16sddd")
    texts = {("GET", "/v1/todos/{id}", 200): "texts", "200 OK": 200}

    class Notes:
        __slots__ = ("route",)

    notes = Notes()
    notes.route = "/v1/todos/{id}"

    def positional(a: int, b: int, c: int) -> None:
        pass

    def store() -> None:
        environ["refapi.route"] = "/"

    def keywords(*, a: int, b: int, c: int, d: int, e: int, f: int) -> None:
        pass

    return {
        "nothing": lambda: None,
        "environ.get(key)": lambda: environ.get("refapi.route"),
        "environ[key] = value (and a call)": store,
        "an attribute of a slotted object": lambda: notes.route,
        "a Python call, three arguments by position": lambda: positional(1, 2, 3),
        "a Python call, six arguments by keyword": lambda: keywords(
            a=1, b=2, c=3, d=4, e=5, f=6
        ),
        "dict.get with a tuple of three as key": lambda: texts.get(
            ("GET", "/v1/todos/{id}", 200)
        ),
        "int() of a status line's code": lambda: int("200 OK"[:3]),
        "a status line's code looked up": lambda: texts.get("200 OK"),
        "an integer's text, f-string": lambda: f"{200}",
        "sum(map(len, body)), one chunk": lambda: sum(map(len, [b"abc"])),
        "json's encode_basestring": lambda: encode_basestring("/v1/todos/{id}"),
        "a thread lock taken and let go": lambda: lock.acquire() and lock.release(),
        "flock taken and let go": lambda: (
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB),
            fcntl.flock(fd, fcntl.LOCK_UN),
        ),
        "os.lseek": lambda: os.lseek(fd, 0, os.SEEK_END),
        "os.stat": lambda: os.stat(folder),
        "os.fstat": lambda: os.fstat(fd),
        "os.access": lambda: os.access(folder, os.W_OK),
        "os.readlink of an open file's /proc/self/fd entry": lambda: os.readlink(link),
        "os.write, 200 bytes": lambda: os.pwrite(fd, b"x" * 200, 0),
        "time.time": lambda: time.time(),
        "a bucket's slot read (struct)": lambda: slot.unpack_from(table, 64),
        "a bucket's slot written (struct)": lambda: slot.pack_into(
            table, 64, b"k" * 16, 1.0, 2.0, 3.0
        ),
        "a closure made": lambda: lambda a: a,
    }


def child(name: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        step = steps(folder)[name]
        for _ in range(WARMUP):
            step()
        mark()  # a boundary: callgrind dumps its counters here
        for _ in range(N1):
            step()
        mark()
        for _ in range(N2):
            step()
        mark()


def counted(name: str, folder: Path) -> float:
    out = folder / re.sub(r"\W+", "-", name)
    subprocess.run(
        ["valgrind", "--tool=callgrind", "--dump-before=getpgrp", "--dump-instr=no",
         "--dump-line=no", f"--callgrind-out-file={out}",
         sys.executable, __file__, "--child", name],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    return (total(Path(f"{out}.3")) - total(Path(f"{out}.2"))) / (N2 - N1)


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        names = list(steps(folder))
    with tempfile.TemporaryDirectory() as folder, ThreadPoolExecutor(2) as pool:
        counts = dict(zip(names, pool.map(
            lambda name: counted(name, Path(folder)), names
        ), strict=True))  # fmt: skip
    print(f"Python {sys.version.split()[0]}; N1 {N1}, N2 {N2}\n")
    print("| step | instructions |\n|---|---:|")
    for name in names[1:]:
        print(f"| {name} | {counts[name] - counts['nothing']:,.0f} |")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2])
    else:
        main()
