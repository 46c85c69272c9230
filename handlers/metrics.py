"""Metrics: Prometheus' text format (version 0.0.4) for a monitoring system to scrape.

Off unless ``REFAPI_METRICS`` names who may read it: then ``404 NOT_FOUND``, as if
there were no such path. A client whose address is in one of those networks reads
it without a credential (a Prometheus server on the host or its network); any other
needs an admin's, a session's too (``403 FORBIDDEN`` without). A scrape runs the
checks of ``/healthz`` too, so ``refapi_health_check`` is fresh at every scrape.
Never rate limited, so a monitor is never starved, and never cached.
"""

from __future__ import annotations

import ipaddress

from ..config import Config, networks
from ..errors import Forbidden, Unauthenticated
from ..metrics import process_metrics
from ..web import Request, Response
from ..web.auth import cleared_cookie
from ..web.environ import mount_of
from .health import CheckedStore, run_checks

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def get_metrics(request: Request, store: CheckedStore, config: Config) -> Response:
    # A credential is needed from any other address, so an admin's session counts
    # (a GET: no CSRF token), and a stale one is 401 with the cookie cleared, as
    # on every route that needs one (docs/authentication.md, "Sessions and CSRF").
    auth = request.auth
    principal = request.principal or auth.session
    admin = principal is not None and principal.role == "admin"
    if not admin and not _allowed(config, request.environ.get("REMOTE_ADDR", "")):
        if principal is None and auth.stale_session:
            raise Unauthenticated(clear_cookie=cleared_cookie(**request.cookie_scope))
        raise Forbidden(
            "Metrics are for the addresses REFAPI_METRICS names, or an admin."
        )
    figures = process_metrics()
    figures.health(mount_of(request.environ), run_checks(store))
    return Response(figures.render(), 200, [("Content-Type", CONTENT_TYPE)])


def _allowed(config: Config, address: str) -> bool:
    try:
        client = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False  # a Unix socket's peer has no address
    if isinstance(client, ipaddress.IPv6Address) and client.ipv4_mapped is not None:
        client = client.ipv4_mapped
    return any(client in network for network in networks(config.metrics))
