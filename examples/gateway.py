"""Two instances of refapi in one WSGI process: ``/prod`` and ``/dev``.

An API gateway's *API mapping* ties a custom domain and a path prefix to a backend:
``api.example.com/prod`` to the production stage, ``/dev`` to the development one.
A mapping decides only where a request goes; the backend behind each prefix is a
whole service of its own. This is the same thing inside one process, with Werkzeug's
``DispatcherMiddleware``: it moves the matched prefix from ``PATH_INFO`` to
``SCRIPT_NAME`` (PEP 3333), so each instance routes ``/v1/...`` as usual and puts
the prefix back on every URL it emits (``Location``, ``Link``).

The two instances share no data, secret, rate-limit bucket, file or connection:
each has its own data folder (``REFAPI_DATA_DIR``, where its first admin's password
file goes), its own database, its own secret key kept in that database (a cursor of
``/prod`` is refused at ``/dev``), its own bucket file beside it, its own store.
What belongs to the process is shared: logging, and gunicorn's workers.

Run it from the repository's root (``make run-gateway`` does)::

    REFAPI_DATA_DIR=data/gateway \
        gunicorn --config examples/gateway.conf.py 'examples.gateway:create_gateway()'

(``gateway.conf.py``: the project's gunicorn settings, with start lines that name
the gateway's URLs and each instance's password file), which lays its files out
apart from those of ``make run`` (``data/``)::

    data/gateway/gunicorn.ctl          the gateway's control socket (gunicorn.conf.py)
    data/gateway/prod/refapi.db        /prod's database
    data/gateway/prod/admin-password.txt
    data/gateway/dev/refapi.db         /dev's, and the same files beside it

``REFAPI_DATA_DIR`` is the gateway's folder, each instance's is the folder under it
named after its prefix. ``PROD_DATABASE_URL`` and ``DEV_DATABASE_URL`` name other
databases; every other setting is read from the environment as ``create_app()``
reads it, and applies to both.

This folder is not part of the installed package: it is an example of a host.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from werkzeug.middleware.dispatcher import DispatcherMiddleware

from refapi import App, Config, create_app
from refapi.errors import NotFound
from refapi.middleware import Cors, Errors, Observe, RequestId

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

PREFIXES = ("/prod", "/dev")


class Gateway(DispatcherMiddleware):
    """``DispatcherMiddleware`` over refapi instances, with ``close()`` for them all."""

    def __init__(
        self, instances: dict[str, App], cors_origins: tuple[str, ...]
    ) -> None:
        # What no mapping covers goes through the layers every instance puts around
        # its own 404: a request id, its log line, CORS (a browser can read it), the
        # error object.
        not_mapped = Errors(_NotMapped(sorted(instances)))
        outer = RequestId(Observe(Cors(not_mapped, origins=cors_origins)))
        mounts: dict[str, WSGIApplication] = dict(instances)
        super().__init__(outer, mounts)
        self.instances = instances

    def close(self) -> None:
        for instance in self.instances.values():
            instance.close()


class _NotMapped:
    """What no mapping covers (``/``, ``/staging/...``): the error object, 404."""

    def __init__(self, prefixes: list[str]) -> None:
        self.prefixes = prefixes
        self.message = f"No API is mapped here; the prefixes are {', '.join(prefixes)}."

    def __call__(
        self, environ: WSGIEnvironment, start_response: StartResponse
    ) -> Iterable[bytes]:
        raise NotFound(self.message, details={"mapped": self.prefixes})


def create_gateway(
    prod_url: str | None = None,
    dev_url: str | None = None,
    *,
    config: Config | None = None,
    clock: Callable[[], float] = time.time,
) -> Gateway:
    """Mount an instance at ``/prod`` and one at ``/dev``, each with its own data
    folder and database.

    ``config`` (default: the environment's) holds the settings both share; its data
    folder is the gateway's, and its database and secret key are replaced by each
    instance's own.
    """
    base = config or Config.from_env()
    instances: dict[str, App] = {}
    try:
        for prefix, own in instance_configs(base, prod_url, dev_url).items():
            instances[prefix] = create_app(own, clock=clock)
    except BaseException:
        for instance in instances.values():
            instance.close()
        raise
    return Gateway(instances, base.cors_origins)


def instance_configs(
    base: Config, prod_url: str | None = None, dev_url: str | None = None
) -> dict[str, Config]:
    """Each instance's configuration by its prefix: ``base``'s, with the instance's
    own database (``prod_url``, else ``PROD_DATABASE_URL``, else a SQLite file in
    its folder; the same for ``/dev``), data folder (``base``'s, then the prefix)
    and secret key. Also what the gateway's start lines name (``gateway.conf.py``)."""
    env = os.environ
    named = {
        "/prod": prod_url or env.get("PROD_DATABASE_URL"),
        "/dev": dev_url or env.get("DEV_DATABASE_URL"),
    }
    folders = {prefix: os.path.join(base.data_dir, prefix[1:]) for prefix in PREFIXES}
    urls = {
        prefix: named[prefix] or f"sqlite:///{folders[prefix]}/refapi.db"
        for prefix in PREFIXES
    }
    if urls["/prod"] == urls["/dev"]:
        raise ValueError(f"/prod and /dev must not share a database: {urls['/prod']}")
    # secret_key=None: each database generates and keeps its own, so one
    # REFAPI_SECRET_KEY cannot make a cursor of one instance good at the other.
    return {
        prefix: dataclasses.replace(
            base, database_url=urls[prefix], secret_key=None, data_dir=folders[prefix]
        )
        for prefix in PREFIXES
    }
