"""Health check: is the process up, and can it do what its requests need?

``200`` with ``"status": "ok"`` when every check passes, ``503`` with the same
shape, the failing check named and ``Retry-After`` when one does not, so a load
balancer takes the instance out of rotation exactly while its requests would fail:

- ``storage``: a write can be made now, within the store's short wait (its
  ``ping``: the database reachable, in place, writable, with room); reads may
  still work.
- ``rateLimit``: the shared token buckets can be used; every limited request
  needs them, so without them the instance answers 503 (see ``RateLimit``).

Never cached, limited or authenticated. With ``REFAPI_METRICS`` set, each answer
also sets this worker's ``refapi_health_check`` gauge, and a 503 counts in
``refapi_storage_errors_total`` as every answer refused for a storage fault does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..config import Config
from ..errors import NO_STORE, Unavailable
from ..metrics import process_metrics
from ..storage import StorageUnavailable
from ..storage.base import Buckets, MetaStore
from ..web import Request, Response, json_response
from ..web.environ import STORAGE_FAULT, mount_of


class CheckedStore(MetaStore, Protocol):
    """What the checks ask of storage: a write (``ping``), and the rate limiter's
    buckets kept beside the data."""

    buckets: Buckets


def _passes(check: Callable[[], None]) -> str:
    try:
        check()
    except StorageUnavailable:
        return "unavailable"
    return "ok"


def run_checks(store: CheckedStore) -> dict[str, str]:
    """Each check's name and its result, "ok" or "unavailable"."""
    return {
        "storage": _passes(store.ping),
        "rateLimit": _passes(store.buckets.ping),
    }


def get_health(request: Request, store: CheckedStore, config: Config) -> Response:
    checks = run_checks(store)
    if config.metrics:
        process_metrics().health(mount_of(request.environ), checks)
    headers = [NO_STORE]
    if all(result == "ok" for result in checks.values()):
        status, code = "ok", 200
    else:
        status, code = "unavailable", 503
        headers.append(("Retry-After", str(Unavailable.retry_after)))
        # A 503 for a storage fault like any other: counted as one (Observe).
        request.environ[STORAGE_FAULT] = True
    body = {"status": status, "checks": checks, "version": config.version}
    return json_response(body, code, headers)
