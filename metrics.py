"""Metrics: the Prometheus text format at ``/metrics``, the sum over a host's workers.

Each gunicorn worker is a process of its own, so prometheus-client runs in its
multiprocess mode: every process writes its figures to files in one folder, named
by ``PROMETHEUS_MULTIPROC_DIR``, and a scrape, whichever worker answers it, reads
them all. prometheus-client decides whether it runs that way when it is imported,
so the folder is named before it is: by gunicorn's master when the server starts
(``gunicorn.conf.py``, ``on_starting``: a new, empty folder each start, removed on
exit; ``child_exit`` marks a dead worker's gauges gone), and, in a process no such
hook prepared (a test, a host), by the first instance that needs it. Nothing is set
up but ``REFAPI_METRICS``, and nothing here runs while it is unset.

The figures belong to the process, as its logging does: two instances in one
process (a gateway) share them, told apart by the label ``mount``.
"""

from __future__ import annotations

import atexit
import bisect
import functools
import math
import mmap
import os
import shutil
import sys
import tempfile
import threading
import weakref
from typing import Any

FOLDER = "PROMETHEUS_MULTIPROC_DIR"
# Methods a label may name; any other (a client may send anything) counts as one.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# Seconds: most answers take about a millisecond, so the finer end is finer than
# prometheus-client's default.
# What a request may count as besides a request, at most one of them: an answer
# replayed for its idempotency key, a 503 for a storage fault, or the lab's answer
# to a status asked for (docs/operating.md, "Metrics"). One value, not three flags:
# a fifteenth keyword argument to ``logs.report`` cost every request about 6,000
# instructions on Python 3.11 (docs/benchmarks.md).
AS_REPLAY, AS_STORAGE_FAULT, AS_SIMULATED = "replay", "storage fault", "simulated"

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
# The counters by mount, each a series from the mount's first request, at 0.
MOUNT_COUNTERS = (
    ("refapi_rate_limited", "Requests answered 429."),
    ("refapi_idempotent_replays", "Responses with Idempotent-Replayed: true."),
    ("refapi_storage_errors", "Requests answered 503 for a storage fault."),
)


# prometheus-client writes its files through memory maps, and a page touched on a
# full file system kills the process (SIGBUS): kept in memory (tmpfs), off the
# disk the data fills, where there is one.
MEMORY_FOLDER = "/dev/shm"


def prepare_folder(environ: Any = os.environ, memory: str = MEMORY_FOLDER) -> str:
    """A new, empty folder for a server's figures, named in ``environ`` for
    prometheus-client (in gunicorn's master: every worker inherits it): in
    ``memory`` when it can be written to, else the system's temporary folder."""
    parent = memory if os.access(memory, os.W_OK | os.X_OK) else None
    folder = tempfile.mkdtemp(prefix="refapi-metrics-", dir=parent)
    environ[FOLDER] = folder
    return folder


def remove_folder(environ: Any = os.environ) -> None:
    """Remove the folder ``prepare_folder`` made, when the server stops."""
    folder = environ.get(FOLDER, "")
    if os.path.basename(folder).startswith("refapi-metrics-"):
        shutil.rmtree(folder, ignore_errors=True)


def worker_exited(pid: int) -> None:
    """Drop a dead worker's gauges, so the health gauge is the live workers' only
    (its counters stay: they count what it did)."""
    if os.environ.get(FOLDER):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)


class SeriesFile:
    """One process's series of one type (counter or histogram), in the file format
    prometheus-client's multiprocess collector reads (its ``mmap_dict.py``): an
    8-byte header holding the bytes used, then per series its key (the JSON that
    ``mmap_key`` makes), padded to 8 bytes, a value and a timestamp (doubles).

    Written here rather than through prometheus-client's values, which take a lock,
    a ``getpid`` and a ``struct`` packing for each number (issue 26): a series is a
    slot of ``values``, the file seen as doubles, and a count is ``values[slot] +=
    1``, straight into the shared memory a scrape in any worker reads. Only this
    process writes the file, under the lock of its ``Metrics``.
    """

    def __init__(self, folder: str, kind: str) -> None:
        self.folder, self.kind = folder, kind
        self.keys: list[str] = []
        self.open()

    def open(self) -> None:
        """A new, empty file, with every series known so far at 0 in the same slot."""
        # The type starts the name: it is what the collector reads the series as.
        fd, self.path = tempfile.mkstemp(
            prefix=f"{self.kind}_refapi-{os.getpid()}-", suffix=".db", dir=self.folder
        )
        os.close(fd)
        self.used, self.size = 8, 0
        self.values = memoryview(b"").cast("d")
        self.grow(1 << 16)
        for key in self.keys:
            self.append(key)

    def grow(self, size: int) -> None:
        """Map the file at ``size`` bytes (a slot keeps its place)."""
        self.values.release()
        os.truncate(self.path, size)
        with open(self.path, "r+b") as file:  # the map keeps a descriptor of its own
            self.map = mmap.mmap(file.fileno(), size)
        self.map[:4] = self.used.to_bytes(4, sys.byteorder)
        self.values, self.size = memoryview(self.map).cast("d"), size

    def slot(self, key: str) -> int:
        """The slot of a new series, at 0."""
        self.keys.append(key)
        return self.append(key)

    def append(self, key: str) -> int:
        encoded = key.encode()
        padded = encoded.ljust(len(encoded) + 8 - (len(encoded) + 4) % 8)
        entry = len(encoded).to_bytes(4, sys.byteorder) + padded + bytes(16)
        if self.used + len(entry) > self.size:
            self.grow(max(2 * self.size, self.used + len(entry)))
        start, self.used = self.used, self.used + len(entry)
        self.map[start : self.used] = entry
        # Written after the entry: a scrape reads no further than the header says.
        self.map[:4] = self.used.to_bytes(4, sys.byteorder)
        return (self.used - 16) // 8


class Metrics:
    """The counters, histogram and gauge of docs/operating.md, "Metrics"."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Gauge, values

        # prometheus-client imported before any folder was named (by a host that
        # uses it): one process's figures, in a registry and a folder of our own.
        self.registry = None
        folder = os.environ.get(FOLDER, "")
        if values.ValueClass is values.MutexValue:
            from prometheus_client import multiprocess

            self.registry = CollectorRegistry()
            folder = prepare_folder({})
            atexit.register(shutil.rmtree, folder, True)
            multiprocess.MultiProcessCollector(self.registry, path=folder)
        self.counters = SeriesFile(folder, "counter")
        self.histograms = SeriesFile(folder, "histogram")
        # One series per host: the lowest value over the live workers.
        self.health_checks = Gauge(
            "refapi_health_check", "1 while the check of /healthz passes, else 0.",
            ("mount", "check"), multiprocess_mode="livemin", registry=self.registry,
        )  # fmt: skip
        self.lock = threading.Lock()  # a host may serve in threads
        # Slots by label set, made at its first request: (requests, duration's
        # sum, duration's buckets) and, by mount, (429s, replays, storage faults).
        self._requests: dict[tuple[str, str, str, int], tuple[int, int, list[int]]]
        self._requests = {}
        self._mounts: dict[str, tuple[int, int, int]] = {}
        # A forked child counts in files of its own, from 0, as prometheus-client's
        # own values do (gunicorn's --preload makes the app before the fork).
        reopen = weakref.WeakMethod(self._reopen)
        os.register_at_fork(after_in_child=lambda: (reopen() or _nothing)())

    def _reopen(self) -> None:
        self.lock = threading.Lock()
        self.counters.open()
        self.histograms.open()

    def _series(self, mount: str, route: str, method: str, status: int) -> None:
        """Make the slots of a label set (prometheus-client's keys and bucket
        labels, so the text a scrape reads is the one its own metrics make)."""
        from prometheus_client.mmap_dict import mmap_key
        from prometheus_client.utils import floatToGoString

        if mount not in self._mounts:
            self._mounts[mount] = tuple(  # type: ignore[assignment]
                self.counters.slot(
                    mmap_key(name, f"{name}_total", ["mount"], [mount], text)
                )
                for name, text in MOUNT_COUNTERS
            )
        labels = ["mount", "route", "method"]
        values = [mount, route, method]
        name = "refapi_request_duration_seconds"
        text = "Seconds from request to answer."
        self._requests[mount, route, method, status] = (
            self.counters.slot(mmap_key(
                "refapi_requests", "refapi_requests_total", [*labels, "status"],
                [*values, str(status)], "Requests answered.",
            )),
            self.histograms.slot(mmap_key(name, f"{name}_sum", labels, values, text)),
            [
                self.histograms.slot(mmap_key(
                    name, f"{name}_bucket", [*labels, "le"],
                    [*values, floatToGoString(bound)], text,
                ))
                for bound in (*BUCKETS, math.inf)
            ],
        )  # fmt: skip

    def request(
        self,
        mount: str,
        route: str,
        method: str,
        status: int,
        seconds: float,
        counted_as: str = "",
    ) -> None:
        """Count one answered request, and what else it ``counted_as``
        (``AS_REPLAY``, ``AS_STORAGE_FAULT``, or ``AS_SIMULATED``: the lab's
        answer, so a 429 asked for is a request, not a refusal)."""
        method = method if method in METHODS else "other"
        key = (mount, route, method, status)
        with self.lock:
            if key not in self._requests:
                self._series(*key)
            count, total, buckets = self._requests[key]
            counters, histograms = self.counters.values, self.histograms.values
            counters[count] += 1
            histograms[total] += seconds
            # The first bucket whose bound is at least the seconds (prometheus-
            # client stores each bucket's own count; the collector sums them).
            histograms[buckets[bisect.bisect_left(BUCKETS, seconds)]] += 1
            refused = status == 429 and counted_as != AS_SIMULATED
            if refused or counted_as:
                rate_limited, replays, storage_errors = self._mounts[mount]
                counters[rate_limited] += refused
                counters[replays] += counted_as == AS_REPLAY
                counters[storage_errors] += counted_as == AS_STORAGE_FAULT

    def health(self, mount: str, checks: dict[str, str]) -> None:
        """Set the health gauge from the result of each check of ``/healthz``."""
        for check, result in checks.items():
            self.health_checks.labels(mount, check).set(1 if result == "ok" else 0)

    def render(self) -> bytes:
        """The text format, summed over every process writing to the folder."""
        from prometheus_client import CollectorRegistry, generate_latest, multiprocess

        registry = self.registry
        if registry is None:
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry)


def _nothing() -> None:
    """What a fork runs for a ``Metrics`` gone since."""


@functools.cache
def process_metrics() -> Metrics:
    """This process's figures, made on first use (a folder named first if none is)."""
    if not os.environ.get(FOLDER) and "prometheus_client" not in sys.modules:
        folder = prepare_folder()
        atexit.register(shutil.rmtree, folder, True)
    return Metrics()
