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

import logging
import os
import sys
from collections.abc import Iterable

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
