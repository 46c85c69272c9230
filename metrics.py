"""Metrics: the Prometheus text format at ``/metrics``, the sum over a host's workers.

Each gunicorn worker is a process of its own, so each counts in files of its own in
one folder, named by ``REFAPI_METRICS_DIR``, and a scrape, whichever worker answers
it, reads them all. The master names the folder when the server starts
(``serving/__init__.py``, ``prepare_folders``, and ``folders.py``: a new, empty
folder each start, removed on exit; ``child_exit`` forgets a dead worker's
health, and a scrape forgets any it finds of a process no longer alive, which is
how it goes on Granian), and, in a process no such hook prepared (a test, a
host), the first instance that needs it.
Nothing is set up but ``REFAPI_METRICS``, and nothing here runs while it is unset.

The files are refapi's own format (docs/operating.md, "Metrics"). A process keeps
two sets of series, each in two files named ``<set>-<pid>-<random>``: ``counts``
(the counters and the histogram, summed over every process, dead ones included)
and ``health`` (the gauge, the lowest value over the processes that have one):

- ``.keys``, a line per series in the order of its slots: the JSON array of the
  sample's name and its label values, in the order of the family's labels, a
  bucket's bound (``le``) last: ``["refapi_requests_total", "", "/v1/todos/{id}",
  "GET", "200"]``;
- ``.values``, the series' values, slot n a native double at byte 8n; a bucket
  holds its own count, which a scrape adds up to the text format's.

A new series' slot is made (at 0, the file grown) before its line is written, and a
scrape reads complete lines only, so it never reads a slot that is not there. Only
the process writes its files, under its ``Metrics``'s lock. prometheus-client
writes the text format, through its public collector API (its metric families and
``generate_latest``).

The figures belong to the process, as its logging does: two instances in one
process (a gateway) share them, told apart by the label ``mount``.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import glob
import itertools
import json
import mmap
import os
import tempfile
import threading
import weakref
from collections.abc import Iterable, MutableMapping, Sequence
from typing import TYPE_CHECKING

from . import folders

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

FOLDER = "REFAPI_METRICS_DIR"
PREFIX = "refapi-metrics-"
# Methods a label may name; any other (a client may send anything) counts as one.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# What a request may count as besides a request, at most one of them: an answer
# replayed for its idempotency key, a 503 for a storage fault, or a 429 of a rate
# limit (not one the lab was asked for: docs/operating.md, "Metrics"). One value,
# not three flags: CPython 3.11 calls a function given 15 keyword arguments
# (``logs.report``) on a slower path than one given 13.
# PERF: about 7,000 instructions a GET, make bench-instructions
AS_REPLAY, AS_STORAGE_FAULT, AS_RATE_LIMITED = "replay", "storage fault", "rate limited"

# Seconds: most answers take about a millisecond, so the finer end is finer than
# prometheus-client's default.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
# Each bucket's bound as the text format writes it (its le label), +Inf last.
BOUNDS = (*(repr(float(bound)) for bound in BUCKETS), "+Inf")
# The families: name, help, labels (docs/operating.md, "Metrics"). A counter's
# name is its sample's (``_total``), as prometheus-client's families take it.
REQUESTS = ("refapi_requests_total", "Requests answered.",
            ("mount", "route", "method", "status"))  # fmt: skip
DURATION = ("refapi_request_duration_seconds", "Seconds from request to answer.",
            ("mount", "route", "method"))  # fmt: skip
# The counters by mount, each a series from the mount's first request, at 0.
MOUNT_COUNTERS = tuple(
    (name, text, ("mount",))
    for name, text in (
        ("refapi_rate_limited_total", "Requests a rate limit answered 429."),
        (
            "refapi_idempotent_replays_total",
            "Responses with Idempotent-Replayed: true.",
        ),
        ("refapi_storage_errors_total", "Requests answered 503 for a storage fault."),
    )
)
# One series per host and check: the lowest value over the live workers.
HEALTH = ("refapi_health_check", "1 while the check of /healthz passes, else 0.",
          ("mount", "check"))  # fmt: skip
COUNTS, LOWEST = "counts", "health"  # the two sets of series, by how they add up


def prepare_folder(
    environ: MutableMapping[str, str] = os.environ, memory: str = folders.MEMORY
) -> str:
    """A new, empty folder for a server's figures, named in ``environ`` (in the
    server's master: every worker inherits it), in memory where it can be
    (``folders.py``)."""
    return folders.prepare(FOLDER, PREFIX, environ, memory)


def remove_folder(environ: MutableMapping[str, str] = os.environ) -> None:
    """Remove the folder ``prepare_folder`` made, when the server stops."""
    folders.remove(FOLDER, PREFIX, environ)


def worker_exited(pid: int) -> None:
    """Forget a dead worker's health, so the gauge is the live workers' only (its
    counts stay: they count what it did)."""
    folder = os.environ.get(FOLDER)
    if folder:
        _forget(folder, pid)


def _forget(folder: str, pid: int) -> None:
    for path in glob.glob(os.path.join(folder, f"{LOWEST}-{pid}-*")):
        with contextlib.suppress(FileNotFoundError):  # a scrape in another worker
            os.unlink(path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's: a pid reused
        return True
    return True


class SeriesFile:
    """One process's set of series (``COUNTS`` or ``LOWEST``): its ``.keys`` and
    ``.values`` files, in the module's format.

    A series is a slot of ``values``, the ``.values`` file mapped as doubles, and a
    count is ``values[slot] += 1``, straight into the shared memory a scrape in any
    worker reads, where prometheus-client's own values take a lock, a ``getpid``
    and a ``struct`` packing for each number.
    """

    def __init__(self, folder: str, kind: str) -> None:
        self.folder, self.kind = folder, kind
        self.keys: list[str] = []
        self.keys_fd = -1
        self.open()

    def open(self) -> None:
        """New, empty files, with every series known so far at 0 in the same slot."""
        fd, self.path = tempfile.mkstemp(
            prefix=f"{self.kind}-{os.getpid()}-", suffix=".values", dir=self.folder
        )
        os.close(fd)
        if self.keys_fd >= 0:  # a forked child's copy of its parent's
            os.close(self.keys_fd)
        # Made second: a scrape that finds the keys finds their values.
        keys = self.path.removesuffix(".values") + ".keys"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND
        self.keys_fd = os.open(keys, flags, 0o600)
        self.slots, self.size = 0, 0
        self.values = memoryview(b"").cast("d")
        self.grow(1 << 16)
        self._write(self.keys)

    def grow(self, size: int) -> None:
        """Map the ``.values`` file at ``size`` bytes (a slot keeps its place)."""
        self.values.release()
        os.truncate(self.path, size)
        with open(self.path, "r+b") as file:  # the map keeps a descriptor of its own
            self.map = mmap.mmap(file.fileno(), size)
        self.values, self.size = memoryview(self.map).cast("d"), size

    def add(self, *series: Sequence[str]) -> tuple[int, ...]:
        """The slots of new series, at 0: each a sample's name, then label values."""
        keys = [json.dumps(key) for key in series]
        self.keys += keys
        return self._write(keys)

    def _write(self, keys: list[str]) -> tuple[int, ...]:
        first, self.slots = self.slots, self.slots + len(keys)
        if 8 * self.slots > self.size:
            self.grow(max(2 * self.size, 8 * self.slots))
        data = "".join(f"{key}\n" for key in keys).encode()
        while data:  # the slots first: a line read is a slot there
            data = data[os.write(self.keys_fd, data) :]
        return tuple(range(first, self.slots))


def read(
    folder: str,
) -> tuple[dict[tuple[str, ...], float], dict[tuple[str, ...], float]]:
    """Every series in ``folder``: the counts summed over the processes, the
    health's lowest; each by its key (the sample's name, then label values)."""
    counts: dict[tuple[str, ...], float] = {}
    lowest: dict[tuple[str, ...], float] = {}
    for path in glob.glob(os.path.join(folder, "*.keys")):
        kind, pid, _ = os.path.basename(path).split("-", 2)
        if kind == LOWEST and not _alive(int(pid)):
            # A dead worker's health, which no server's hook forgot (Granian has
            # none): forgotten now, as gunicorn's child_exit would.
            _forget(folder, int(pid))
            continue
        try:
            with open(path, "rb") as file:
                lines = file.read().split(b"\n")[:-1]  # complete lines only
            with open(path.removesuffix(".keys") + ".values", "rb") as file:
                data = file.read(8 * len(lines))
        except FileNotFoundError:  # a dead worker's health, forgotten meanwhile
            continue
        for line, value in zip(lines, memoryview(data).cast("d"), strict=True):
            key = tuple(json.loads(line))
            if kind == COUNTS:
                counts[key] = counts.get(key, 0.0) + value
            elif kind == LOWEST:
                lowest[key] = min(lowest.get(key, value), value)
    return counts, lowest


class Metrics:
    """The counters, histogram and gauge of docs/operating.md, "Metrics", counted
    in ``folder``."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.counts = SeriesFile(folder, COUNTS)
        self.health_checks = SeriesFile(folder, LOWEST)
        self.lock = threading.Lock()  # a host may serve in threads
        # Slots by label set, made at its first request: (requests, duration's
        # sum, duration's buckets) and, by mount, (429s, replays, storage faults).
        self._requests: dict[
            tuple[str, str, str, int], tuple[int, int, tuple[int, ...]]
        ] = {}
        self._mounts: dict[str, tuple[int, ...]] = {}
        self._checks: dict[tuple[str, str], int] = {}
        # A forked child counts in files of its own, from 0 (gunicorn's --preload
        # makes the app before the fork).
        reopen = weakref.WeakMethod(self._reopen)
        os.register_at_fork(after_in_child=lambda: (reopen() or _nothing)())

    def _reopen(self) -> None:
        self.lock = threading.Lock()
        self.counts.open()
        # A child has checked nothing yet: its parent's gauges at 0 would read as
        # failing checks (the lowest wins) until its first /healthz.
        self.health_checks.keys, self._checks = [], {}
        self.health_checks.open()

    def _series(self, mount: str, route: str, method: str, status: int) -> None:
        """Make the slots of a label set."""
        if mount not in self._mounts:
            self._mounts[mount] = self.counts.add(
                *((name, mount) for name, _, _ in MOUNT_COUNTERS)
            )
        name = DURATION[0]
        slots = self.counts.add(
            (REQUESTS[0], mount, route, method, str(status)),
            (f"{name}_sum", mount, route, method),
            *((f"{name}_bucket", mount, route, method, bound) for bound in BOUNDS),
        )
        self._requests[mount, route, method, status] = (slots[0], slots[1], slots[2:])

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
        (``AS_REPLAY``, ``AS_STORAGE_FAULT``, or ``AS_RATE_LIMITED``: a refusal
        of a rate limit, so a 429 the lab was asked for is a request only)."""
        method = method if method in METHODS else "other"
        key = (mount, route, method, status)
        with self.lock:
            series = self._requests.get(key)
            if series is None:  # the label set's first request
                self._series(*key)
                series = self._requests[key]
            count, total, buckets = series
            # PERF: a request counted in 8,300 instructions, not 29,600 through
            # prometheus-client's values, make bench-instructions
            counters = self.counts.values
            counters[count] += 1
            counters[total] += seconds
            # The first bucket whose bound is at least the seconds (each bucket
            # holds its own count; a scrape adds them up).
            counters[buckets[bisect.bisect_left(BUCKETS, seconds)]] += 1
            if counted_as:
                rate_limited, replays, storage_errors = self._mounts[mount]
                counters[rate_limited] += counted_as == AS_RATE_LIMITED
                counters[replays] += counted_as == AS_REPLAY
                counters[storage_errors] += counted_as == AS_STORAGE_FAULT

    def health(self, mount: str, checks: dict[str, str]) -> None:
        """Set the health gauge from the result of each check of ``/healthz``."""
        with self.lock:
            for check, result in checks.items():
                if (mount, check) not in self._checks:
                    [slot] = self.health_checks.add((HEALTH[0], mount, check))
                    self._checks[mount, check] = slot
                self.health_checks.values[self._checks[mount, check]] = (
                    1.0 if result == "ok" else 0.0
                )

    def collect(self) -> Iterable[Metric]:
        """The families, summed over every process counting in the folder."""
        from prometheus_client.core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
        )

        counts, lowest = read(self.folder)
        counters = {
            name: CounterMetricFamily(name, text, labels=labels)
            for name, text, labels in (REQUESTS, *MOUNT_COUNTERS)
        }
        durations = HistogramMetricFamily(*DURATION[:2], labels=DURATION[2])
        health = GaugeMetricFamily(*HEALTH[:2], labels=HEALTH[2])
        sums: dict[tuple[str, ...], float] = {}
        buckets: dict[tuple[str, ...], list[float]] = {}
        for key, value in counts.items():
            name, labels = key[0], key[1:]
            if name in counters:
                counters[name].add_metric(labels, value)
            elif name == f"{DURATION[0]}_sum":
                sums[labels] = value
            elif name == f"{DURATION[0]}_bucket":  # its bound last
                own = buckets.setdefault(labels[:-1], [0.0] * len(BOUNDS))
                own[BOUNDS.index(labels[-1])] = value
        for labels, own in buckets.items():
            cumulative = list(zip(BOUNDS, itertools.accumulate(own), strict=True))
            durations.add_metric(labels, cumulative, sums.get(labels, 0.0))
        for key, value in lowest.items():
            health.add_metric(key[1:], value)
        return [*counters.values(), durations, health]

    def render(self) -> bytes:
        """The text format, summed over every process counting in the folder."""
        from prometheus_client import generate_latest

        return generate_latest(self)


def _nothing() -> None:
    """What a fork runs for a ``Metrics`` gone since."""


def process_metrics() -> Metrics:
    """This process's figures in the folder ``REFAPI_METRICS_DIR`` names now (one
    made and named first if none is): one instance a folder, so an app made after
    the folder changed (a test of its own) counts in the new one."""
    folder = os.environ.get(FOLDER) or folders.prepare(FOLDER, PREFIX, os.environ)
    return _metrics_in(folder)


@functools.cache
def _metrics_in(folder: str) -> Metrics:
    return Metrics(folder)
