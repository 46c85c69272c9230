"""The proxy: ``GET /api/proxy.php?url=...`` fetches a remote JSON resource for a
browser, which its same-origin policy would not let read it directly.

This package is the whole of it: the handler (here); its address policy,
``ssrf`` (whether the URL may be fetched, and at which address) with
``special_addresses`` (the IANA registries' table it judges addresses by); and
the fetch from that address, ``upstream``, loaded on the first fetch. It may
import the configuration, the error family, ``hosts.py`` (the allow-list's
entries, which ``Config`` parses at start, so they stand below it), the slots,
the storage interface and the web helpers; ``ssrf`` and ``special_addresses``
no more than the errors and ``hosts.py``, so the router and the app take the
resolver from ``ssrf`` and the route table its URL schema. No other handler
imports from here.

What comes back:

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

The proxy must not fetch itself round and round: a URL that proxies to the proxy
would hold a worker at every level for the whole deadline (as many levels as fit
in 2,048 characters), and charge each inner hop to the service's own address.
So it names itself in ``Via`` (RFC 9110 section 7.6.3) on every fetch, as
``1.1 refapi-`` and 8 hex digits of an HMAC of the secret key
(``web.keys.via_pseudonym``: no host or address, the same on every worker and
host sharing the data), and a request to the proxy that already carries that
name is refused at once, ``508 LOOP_DETECTED``, before anything is fetched.
Only the proxy's route refuses it: the proxy may fetch any other page of the
service once, and only a second pass through the proxy goes round. The
``Via`` it sends is what it builds, as every header it sends is: of the client's
``Via`` only the names of refapi services go on (the names of the client's own
proxies stay here), so a loop through two services with different keys is seen
by the first one it comes back to. ``Via`` is read for that and nothing else:
never for the client's address, the caller or a bucket. A ``url`` whose path is
the proxy's own (under the mount point, on any host) is ``400 VALIDATION_ERROR``
before that (``ssrf``).

A fetch is slow work: it holds one of the host's share of slots until its answer
is closed, and finds the share taken as ``503 BUSY`` at once (``slots.py``), so
proxying the service itself, a few times at once, never holds every worker.
"""

from __future__ import annotations

import json
import math
from http import HTTPStatus
from typing import Any

from ...config import Config
from ...errors import NO_STORE, Busy, UpstreamError
from ...hosts import Resolver, parse_allow_list
from ...slots import Slots
from ...storage.base import MetaStore
from ...web import Request, Response, empty_response, json_bytes, json_response
from ...web.keys import refuse_loop
from .ssrf import check_target

PATH = "/api/proxy.php"  # the route's path (routes.py), which it never fetches

# Statuses passed on; a 1xx or 3xx one never is, nor one Python has no name for.
PASSED_ON = frozenset(s.value for s in HTTPStatus if s.value // 100 in (2, 4, 5))
# Statuses that carry no content (RFC 9110 sections 15.3.5 and 15.3.6).
NO_CONTENT = frozenset({204, 205})


def get_proxy(
    request: Request,
    config: Config,
    store: MetaStore,
    resolve: Resolver,
    slots: Slots,
    url: str,
) -> Response:
    ours, passed = refuse_loop(request, config, store)
    allowed = parse_allow_list(config.proxy_allowed_hosts)
    target = check_target(url, allowed, resolve, own_path=request.link(PATH))
    via = ", ".join(f"1.1 {name}" for name in dict.fromkeys([*passed, ours]))
    # Imported here, on the first fetch: it brings urllib3, 1.5 MiB of a worker's
    # memory that a worker never proxying need not hold (docs/benchmarks.md).
    from . import upstream

    if slots.take(request.environ, config.proxy_total_timeout):
        raise Busy()
    status, body = upstream.fetch(target, config, via)
    if status // 100 == 3:
        raise UpstreamError("The upstream answered a redirect; it is not followed.")
    if status not in PASSED_ON:
        raise UpstreamError(f"The upstream answered with status {status}.")
    if status in NO_CONTENT:  # whatever the upstream sent with it
        return empty_response(status, [NO_STORE])
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
