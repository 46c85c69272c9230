"""Behind reverse proxies: the client's address, scheme, host and mount point.

A proxy passes on what it saw in ``X-Forwarded-For``, ``-Proto``, ``-Host`` and
``-Prefix``. Werkzeug's ``ProxyFix`` applies them, taking from each header the value
the configured number of trusted proxies (``REFAPI_TRUST_PROXY``) appended: values
further left were written by the client and are ignored.

The prefix becomes the mount point of every URL the service emits (``Location``,
``Link``), so it is kept only when it is a plain path prefix: ``/`` or segments of
URL path characters, each after one ``/``. ``//evil.example``, a scheme, a backslash,
a space, a control character or an angle bracket would turn ``Location`` into a
link to another site, or into a header that cannot be sent; such a prefix is
ignored and the mount point stays what the host set.

Reads the ``X-Forwarded-*`` headers; rewrites ``REMOTE_ADDR``, ``wsgi.url_scheme``,
``HTTP_HOST``, ``SERVER_NAME``/``SERVER_PORT`` and ``SCRIPT_NAME``, keeping the
originals in ``werkzeug.proxy_fix.orig``. It needs no other layer; the layers inside
it (``RateLimit``, ``Authenticate``) see the client's address, which is why
``app.py`` puts it outermost.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from werkzeug.middleware.proxy_fix import ProxyFix

from ..web.environ import PROXIED

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

# RFC 3986 pchar (unreserved, percent-encoded, sub-delims, ":" and "@"), per segment.
PLAIN_PREFIX = re.compile(r"(?:/[A-Za-z0-9\-._~%!$&'()*+,;=:@]+)*/?")


class TrustedProxy(ProxyFix):
    """``ProxyFix`` for ``hops`` proxies; ``X-Forwarded-Prefix`` only if plain."""

    def __init__(self, app: WSGIApplication, *, hops: int) -> None:
        if hops < 0:
            # ProxyFix would index from the left, where the client writes.
            raise ValueError(f"hops must be 0 or more, got {hops}")
        super().__init__(
            _PlainPrefix(app), x_for=hops, x_proto=hops, x_host=hops, x_prefix=hops
        )


class _PlainPrefix:
    """Undo ``ProxyFix``'s prefix when it is not a plain path."""

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app

    def __call__(
        self, environ: WSGIEnvironment, start_response: StartResponse
    ) -> Iterable[bytes]:
        if not PLAIN_PREFIX.fullmatch(environ.get("SCRIPT_NAME", "")):
            # ProxyFix keeps the values it replaced (documented, under this key).
            environ["SCRIPT_NAME"] = environ[PROXIED]["SCRIPT_NAME"]
        return self.app(environ, start_response)
