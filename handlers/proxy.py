"""The proxy: ``GET /api/proxy.php?url=...`` fetches a remote JSON resource for a
browser, which its same-origin policy would not let read it directly.

``web.ssrf`` decides whether the URL may be fetched and at which address, and
``web.upstream`` fetches it from that address. What comes back:

- the upstream status with its JSON body, re-serialised by our JSON helper, with
  ``Cache-Control: no-store`` (the upstream's own headers are not passed on);
- ``502 UPSTREAM_ERROR`` when the upstream cannot be reached, answers a redirect
  (never followed: it could point anywhere), sends a body over the cap (counted
  while reading, so a lying or absent ``Content-Length`` does not matter) or a body
  that is not JSON, whatever its ``Content-Type``;
- ``504 UPSTREAM_TIMEOUT`` when connecting or one read takes longer than allowed
  (``REFAPI_PROXY_CONNECT_TIMEOUT``, ``REFAPI_PROXY_READ_TIMEOUT``), or the whole
  fetch (connect, headers and every byte of the body) longer than
  ``REFAPI_PROXY_TOTAL_TIMEOUT``, so an upstream trickling a byte at a time cannot
  hold a worker.

A ``url`` whose path is the proxy's own (under the mount point, on any host) is
``400 VALIDATION_ERROR`` (``web.ssrf``): fetching it would go round, a worker held
at every level for the whole deadline.
"""

from __future__ import annotations

import json
import math
from http import HTTPStatus
from typing import Any

from ..config import Config
from ..errors import NO_STORE, UpstreamError
from ..hosts import parse_allow_list
from ..web import Request, Response, json_bytes, json_response
from ..web.ssrf import Resolver, check_target

PATH = "/api/proxy.php"  # the route's path (routes.py), which it never fetches

# Statuses passed on; a 1xx or 3xx one never is, nor one Python has no name for.
PASSED_ON = frozenset(s.value for s in HTTPStatus if s.value // 100 in (2, 4, 5))


def get_proxy(
    request: Request, config: Config, resolve: Resolver, url: str
) -> Response:
    allowed = parse_allow_list(config.proxy_allowed_hosts)
    target = check_target(url, allowed, resolve, own_path=request.link(PATH))
    # Imported here, on the first fetch: it brings urllib3, 1.5 MiB of a worker's
    # memory that a worker never proxying need not hold (docs/benchmarks.md).
    from ..web import upstream

    status, body = upstream.fetch(target, config)
    if status // 100 == 3:
        raise UpstreamError("The upstream answered a redirect; it is not followed.")
    if status not in PASSED_ON:
        raise UpstreamError(f"The upstream answered with status {status}.")
    return json_response(_parse(body), status, [NO_STORE])


def _parse(body: bytes) -> Any:
    """The upstream JSON, if it is JSON we can send on: no NaN or Infinity (also
    spelled as a number too large for a float), no lone surrogate (valid JSON text,
    yet no UTF-8 can carry it)."""

    def refuse(text: str) -> Any:
        raise ValueError(f"{text} is not a JSON number we can send on")

    def finite(text: str) -> float:
        number = float(text)
        return number if math.isfinite(number) else refuse(text)

    try:
        data = json.loads(body, parse_constant=refuse, parse_float=finite)
        json_bytes(data)  # UnicodeEncodeError on a lone surrogate
    except (ValueError, RecursionError):  # UnicodeError is a ValueError
        raise UpstreamError("The upstream body is not JSON.") from None
    return data
