"""Health check: is the process up, and can it reach its storage?

``200`` with ``"status": "ok"`` when a trivial storage query succeeds, ``503`` with
the same shape and the failing check named when it does not, so a load balancer can
take the instance out of rotation. Never cached, limited or authenticated.
"""

from __future__ import annotations

from ..storage import StorageUnavailable
from ..web import Request, Response, json_response


def get_health(request: Request) -> Response:
    try:
        request.store.ping()
        storage, status, code = "ok", "ok", 200
    except StorageUnavailable:
        storage, status, code = "unavailable", "unavailable", 503
    body = {
        "status": status,
        "checks": {"storage": storage},
        "version": request.config.version,
    }
    return json_response(body, code, [("Cache-Control", "no-store")])
