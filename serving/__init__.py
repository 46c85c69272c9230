"""Serving: what runs the app on a server, one module a server. ``gunicorn.py``:
its worker, which answers the requests gunicorn refuses itself as the error object
and puts a deadline on each request, and the master's hooks, which
``gunicorn.conf.py`` hands to gunicorn.

It may import the configuration and the start's checks (``config``, ``startup``),
the error family, the logs, the metrics, the slots and the web helpers; never a
handler, the route table, the router, the app or the lab, which stand above it
(which is why the answer to a refusal is a web helper, ``web/refusals.py``: the
explainer shows it too, whichever server runs the app).

Here, what both servers' masters do alike: make the folders their workers share,
say where they are, remove them when the server stops, and forget the release
they started with when they reload.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterable

from gunicorn.systemd import sd_notify

from .. import metrics, slots
from ..config import Config
from ..logs import LOGGER, StandardOutput
from ..storage import mark_served


def prepare_folders(configs: Iterable[Config] = ()) -> None:
    """Make the folders the workers share: the host's slots for slow work and, with
    ``REFAPI_METRICS``, the one of the workers' figures (docs/operating.md, "Slow
    work shares the host", "Metrics"), in the master before any app is made; and
    mark the databases of ``configs`` served (``prepare_databases``)."""
    slots.prepare_folder()
    if os.environ.get("REFAPI_METRICS"):
        metrics.prepare_folder()
    prepare_databases(configs)


def prepare_databases(configs: Iterable[Config]) -> None:
    """Mark each configuration's database as served from now, in the master before
    its workers: a worker respawned after the database's files were deleted makes
    no new one in their place (docs/operating.md, "When storage fails")."""
    for config in configs:
        mark_served(config.database_url)


def folder_lines(config: Config) -> list[str]:
    """The start's lines that say where those folders are."""
    lines = [
        f"slow work: at most {config.slots - 1} of the {config.slots} slots,"
        f" locks in {os.environ[slots.FOLDER]}"
    ]
    if os.environ.get("REFAPI_METRICS"):
        lines.append(f"metrics: figures in {os.environ[metrics.FOLDER]}")
    return lines


def remove_folders() -> None:
    """Remove the folders ``prepare_folders`` made, when the server stops."""
    slots.remove_folder()
    if os.environ.get("REFAPI_METRICS"):
        metrics.remove_folder()


def forget_release() -> None:
    """Forget every module of refapi's this master imported, and the handler of the
    logs ``logs.configure`` added (a ``--preload``'ed app adds it in the master),
    so that the workers a reload starts, which fork from the master, import each
    from the files installed now, not beside those of the release the master
    started with (docs/operating.md, "Upgrading"). What the old modules made (the
    folders, their locks) stays."""
    log = logging.getLogger(LOGGER)
    for handler in [h for h in log.handlers if isinstance(h, StandardOutput)]:
        log.removeHandler(handler)
    for name in [name for name in sys.modules if name.partition(".")[0] == "refapi"]:
        del sys.modules[name]


def tell_ready(
    port: int, ready: str, log: logging.Logger, wait_s: float = 60.0
) -> None:
    """Tell systemd ``ready`` (sd_notify) once a socket listens on ``port``:
    Granian's workers each bind the port themselves, after the master's start
    hook, so saying it there told a Type=notify unit ready while connections were
    still refused (docs/operating.md, "Under systemd"). Past ``wait_s`` it is
    said all the same: the unit's own start timeout decides. Nothing without
    ``NOTIFY_SOCKET`` (no systemd to tell).

    It runs in a thread of the master while the workers fork, so it looks where
    no lock is taken that a child could inherit held: the kernel's table of
    sockets (a connection's name lookup would hold glibc's, and a worker forked
    then hung at its own)."""
    if not os.environ.get("NOTIFY_SOCKET"):
        return
    listening = f":{port:04X} 00000000000000000000000000000000:0000 0A"
    listening4 = f":{port:04X} 00000000:0000 0A"
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        tables = []
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with contextlib.suppress(OSError), open(table) as file:
                tables.append(file.read())
        if any(listening4 in text or listening in text for text in tables):
            break
        time.sleep(0.02)
    sd_notify(ready, log)
