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
import functools
import os
import shutil
import sys
import tempfile
from typing import Any

FOLDER = "PROMETHEUS_MULTIPROC_DIR"
# Methods a label may name; any other (a client may send anything) counts as one.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# Seconds: most answers take about a millisecond, so the finer end is finer than
# prometheus-client's default.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


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


class Metrics:
    """The counters, histogram and gauge of docs/operating.md, "Metrics"."""

    def __init__(self) -> None:
        from prometheus_client import (
            CollectorRegistry,
            Counter,
            Gauge,
            Histogram,
            values,
        )

        # prometheus-client imported before any folder was named (by a host that
        # uses it): one process's figures, in a registry of our own.
        self.registry = (
            None if values.ValueClass is not values.MutexValue else CollectorRegistry()
        )
        registry = self.registry  # None: registered nowhere, read from the files
        self.requests = Counter(
            "refapi_requests_total", "Requests answered.",
            ("mount", "route", "method", "status"), registry=registry,
        )  # fmt: skip
        self.duration = Histogram(
            "refapi_request_duration_seconds", "Seconds from request to answer.",
            ("mount", "route", "method"), buckets=BUCKETS, registry=registry,
        )  # fmt: skip
        self.rate_limited = Counter(
            "refapi_rate_limited_total",
            "Requests answered 429.",
            ("mount",),
            registry=registry,
        )
        self.replays = Counter(
            "refapi_idempotent_replays_total",
            "Responses with Idempotent-Replayed: true.", ("mount",), registry=registry,
        )  # fmt: skip
        self.storage_errors = Counter(
            "refapi_storage_errors_total",
            "Requests answered 503 for a storage fault.", ("mount",), registry=registry,
        )  # fmt: skip
        # One series per host: the lowest value over the live workers.
        self.health_checks = Gauge(
            "refapi_health_check", "1 while the check of /healthz passes, else 0.",
            ("mount", "check"), multiprocess_mode="livemin", registry=registry,
        )  # fmt: skip
        self._children: dict[tuple[str, str, str, int], tuple[Any, Any]] = {}

    def request(
        self,
        mount: str,
        route: str,
        method: str,
        status: int,
        seconds: float,
        *,
        replayed: bool = False,
        storage_fault: bool = False,
    ) -> None:
        """Count one answered request."""
        method = method if method in METHODS else "other"
        key = (mount, route, method, status)
        children = self._children.get(key)
        if children is None:  # labels() validates each time: once per label set
            for counter in (self.rate_limited, self.replays, self.storage_errors):
                counter.labels(mount)  # a series from the start, at 0
            children = self._children[key] = (
                self.requests.labels(mount, route, method, str(status)),
                self.duration.labels(mount, route, method),
            )
        children[0].inc()
        children[1].observe(seconds)
        if status == 429:
            self.rate_limited.labels(mount).inc()
        if replayed:
            self.replays.labels(mount).inc()
        if storage_fault:
            self.storage_errors.labels(mount).inc()

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


@functools.cache
def process_metrics() -> Metrics:
    """This process's figures, made on first use (a folder named first if none is)."""
    if not os.environ.get(FOLDER) and "prometheus_client" not in sys.modules:
        folder = prepare_folder()
        atexit.register(shutil.rmtree, folder, True)
    return Metrics()
