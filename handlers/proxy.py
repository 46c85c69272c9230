"""The proxy: ``GET /api/proxy.php?url=...`` fetches a remote JSON resource for a
browser, which its same-origin policy would not let read it directly.

``web.ssrf`` decides whether the URL may be fetched and at which address; this
module fetches it with urllib3, connecting to that address while sending the
host's name in ``Host`` (and, over https, in SNI and the certificate check, against
``REFAPI_PROXY_CA_FILE`` or the system store). What comes back:

- the upstream status with its JSON body, re-serialised by our JSON helper, with
  ``Cache-Control: no-store`` (the upstream's own headers are not passed on);
- ``502 UPSTREAM_ERROR`` when the upstream cannot be reached, answers a redirect
  (never followed: it could point anywhere), sends a body over the cap (counted
  while reading, so a lying or absent ``Content-Length`` does not matter) or a body
  that is not JSON, whatever its ``Content-Type``;
- ``504 UPSTREAM_TIMEOUT`` when connecting or reading takes longer than allowed.
"""

from __future__ import annotations

import json
import math
from http import HTTPStatus
from typing import Any

import urllib3
from urllib3.exceptions import HTTPError, NewConnectionError, TimeoutError

from ..errors import UpstreamError, UpstreamTimeout
from ..web import Request, Response, json_bytes, json_response
from ..web.ssrf import Target, check_target, parse_allow_list

CHUNK = 64 * 1024
# Statuses passed on; a 1xx or 3xx one never is, nor one Python has no name for.
PASSED_ON = frozenset(s.value for s in HTTPStatus if s.value // 100 in (2, 4, 5))


def get_proxy(request: Request, url: str) -> Response:
    config = request.config
    target = check_target(
        url, parse_allow_list(config.proxy_allowed_hosts), request.resolve
    )
    status, body = _fetch(target, request)
    if status // 100 == 3:
        raise UpstreamError("The upstream answered a redirect; it is not followed.")
    if status not in PASSED_ON:
        raise UpstreamError(f"The upstream answered with status {status}.")
    return json_response(_parse(body), status, [("Cache-Control", "no-store")])


def _fetch(target: Target, request: Request) -> tuple[int, bytes]:
    config = request.config
    options: dict[str, Any] = {
        "timeout": urllib3.Timeout(
            connect=config.proxy_connect_timeout, read=config.proxy_read_timeout
        ),
        "retries": False,
        "maxsize": 1,
    }
    pool: urllib3.HTTPConnectionPool
    if target.scheme == "https":
        pool = urllib3.HTTPSConnectionPool(
            target.address,
            target.port,
            cert_reqs="CERT_REQUIRED",
            ca_certs=config.proxy_ca_file,
            server_hostname=target.host,
            assert_hostname=target.host,
            **options,
        )
    else:
        pool = urllib3.HTTPConnectionPool(target.address, target.port, **options)
    cap = config.proxy_max_body_bytes
    headers = {"Host": target.host_header, "Accept": "application/json"}
    try:
        with pool:
            upstream = pool.urlopen(
                "GET",
                target.target,
                headers=headers,
                redirect=False,
                preload_content=False,
                assert_same_host=False,
            )
            try:
                body = _read_capped(upstream, cap)
            finally:
                upstream.release_conn()
    except NewConnectionError:  # a subclass of the time-out error: refused, unreachable
        raise UpstreamError("The upstream server could not be reached.") from None
    except TimeoutError:
        raise UpstreamTimeout() from None
    except HTTPError:
        raise UpstreamError() from None
    return upstream.status, body


def _read_capped(upstream: urllib3.BaseHTTPResponse, cap: int) -> bytes:
    declared = upstream.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > cap:
        raise _too_large(cap)
    body = bytearray()
    while chunk := upstream.read(CHUNK):
        body += chunk
        if len(body) > cap:
            raise _too_large(cap)
    return bytes(body)


def _too_large(cap: int) -> UpstreamError:
    return UpstreamError(
        "The upstream body is larger than the limit.", details={"maxBytes": cap}
    )


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
