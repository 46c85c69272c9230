"""A small client for refapi that retries as docs/client.md, "The retry policy", says.

    retries      3 by default, so at most retries + 1 = 4 attempts
    base delay   300 ms by default
    wait i       2**i x base delay before retry i (counting from 0), or, when the
                 answer carried Retry-After, its integer seconds x 1000 ms
    success      any 2xx ends the loop
    exhausted    MaxRetriesExceeded, carrying the last response

Which statuses are retried is an option; by default every non-success is (a
client treats any non-success status as a failure). A connection error counts
as a failed attempt too. A ``POST`` to a create that takes an ``Idempotency-Key``
(``/v1/articles``, ``/v1/payments``, ``/api/demo.php?action=create``) always
carries one (generated when the caller gives none) and keeps the same key across
its retries, so a retry can never make a second record. Any other ``POST`` would
be made twice if the server acted on it and its answer was lost: it is sent again
only after a ``429``, or a ``503`` with ``Retry-After`` (the server says it did not
act on it), or when no connection was made (nothing was sent); never after a lost
answer or another status (docs/client.md, "Which requests are sent again"). Header
names are case-insensitive (RFC 9110 section 5.1): a caller's ``idempotency-key``
or ``content-type`` replaces the client's own, it is never sent beside it.

Writes need a credential: a Bearer token (``token=``, sent as ``Authorization:
Bearer <token>``, RFC 6750) or an API key (``api_key=``, sent as ``X-API-Key``),
on every request. ``login(email, password)`` gets a token from ``POST /api/login``
and keeps it. A login is a ``POST`` like any other that takes no key: sent again
only after a ``429`` or a ``503`` with ``Retry-After``, or when no connection was
made, so a wrong password is never sent twice. The client never
prints or logs a credential.

Command line (exit status 0 on a 2xx, 1 on a failure, 2 on a usage error)::

    python -m refapi.client GET /v1/todos/1
    REFAPI_TOKEN=... python -m refapi.client POST /v1/payments \
        '{"amount": 10, "currency": "EUR"}'

The base URL comes from ``REFAPI_URL`` (default ``http://127.0.0.1:8000``), the
credential from ``REFAPI_TOKEN`` or ``REFAPI_API_KEY``: from the environment, never
the arguments, so it stays out of the shell's history and of ``ps``.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qs

import urllib3
from urllib3 import HTTPHeaderDict


class RequestFailed(Exception):
    """A non-success answer that is not to be retried."""

    def __init__(self, response: urllib3.BaseHTTPResponse | None, message: str) -> None:
        super().__init__(message)
        self.response = response


class MaxRetriesExceeded(RequestFailed):
    """Every attempt failed; ``response`` is the last one (None if none arrived)."""


def retry_any_failure(status: int) -> bool:
    return True


def retry_transient(status: int) -> bool:
    """Only what may pass on its own: too many requests, or an unavailable upstream."""
    return status in (429, 502, 503, 504)


# The creates that take an Idempotency-Key (docs/api.md, "Idempotent creates"): sent
# again under one key, such a create is answered as the first, never made twice.
KEYED_CREATES = ("/v1/articles", "/v1/payments")
DEMO = "/api/demo.php"


def takes_key(path: str) -> bool:
    """Whether a ``POST`` to ``path`` is a create that takes an Idempotency-Key."""
    route, _, query = path.partition("?")
    route = route.rstrip("/")
    if route.endswith(DEMO):
        return parse_qs(query).get("action") == ["create"]
    return route.endswith(KEYED_CREATES)


def not_acted_on(response: urllib3.BaseHTTPResponse) -> bool:
    """A ``429``, or a ``503`` with ``Retry-After``: the server did not act on the
    request, so even a create that takes no key may be sent again."""
    status = response.status
    return status == 429 or (status == 503 and "Retry-After" in response.headers)


def _merged(base: Mapping[str, str], given: Mapping[str, str] | None) -> HTTPHeaderDict:
    """``base`` overridden by ``given``, names compared case-insensitively."""
    merged = HTTPHeaderDict(base)
    for name, value in (given or {}).items():
        merged[name] = value  # replaces a field of that name in any case
    return merged


class Client:
    def __init__(
        self,
        base_url: str,
        *,
        retries: int = 3,
        base_delay: float = 0.3,
        retry_on: Callable[[int], bool] = retry_any_failure,
        sleep: Callable[[float], None] = time.sleep,
        headers: Mapping[str, str] | None = None,
        timeout: float = 10.0,
        token: str | None = None,
        api_key: str | None = None,
    ) -> None:
        if token and api_key:
            raise ValueError("give a token or an API key, not both")
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        self.base_delay = base_delay
        self.retry_on = retry_on
        self.sleep = sleep
        self.headers = _merged({"Accept": "application/json"}, headers)
        # Apart from the other headers, so a login can go without a stale one.
        self._credential: dict[str, str] = {}
        if token:
            self._credential = {"Authorization": f"Bearer {token}"}
        elif api_key:
            self._credential = {"X-API-Key": api_key}
        # urllib3's own retries are off: this class is the one retry policy.
        self.pool = urllib3.PoolManager(retries=False, timeout=timeout)

    def wait_before(
        self, retry: int, response: urllib3.BaseHTTPResponse | None
    ) -> float:
        """Seconds to wait before retry number ``retry`` (from 0)."""
        retry_after = response.headers.get("Retry-After") if response else None
        if retry_after is not None and retry_after.strip().isdigit():
            return float(int(retry_after))
        return (2**retry) * self.base_delay

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> urllib3.BaseHTTPResponse:
        """Send with retries and the credential; return the first 2xx response.
        ``path`` starts with ``/``: joined to the base URL, anything else could
        name another host (``@evil.example/``) and take the credential there."""
        if not path.startswith("/"):
            raise ValueError(f"the path must start with '/', not {path[:1]!r}")
        given = _merged(self._credential, headers)
        # A POST without a key would be made twice if its answer were lost.
        once = method == "POST" and not takes_key(path)
        return self._send(method, path, body, given, self.retry_on, once)

    def login(self, email: str, password: str) -> str:
        """Log in once, keep the token for every later request, and return it."""
        # Without the credential held so far: a stale token would make it a 401.
        response = self._send(
            "POST", "/api/login", {"email": email, "password": password},
            {}, retry_transient, once=True,
        )  # fmt: skip
        token: str = response.json()["token"]
        self._credential = {"Authorization": f"Bearer {token}"}
        return token

    def _send(
        self,
        method: str,
        path: str,
        body: Any,
        headers: Mapping[str, str],
        retry_on: Callable[[int], bool],
        once: bool = False,
    ) -> urllib3.BaseHTTPResponse:
        """Send, retrying the failures ``retry_on`` accepts; the first 2xx response.
        ``once``: sent again only when the server did not act on it (or no
        connection was made), as a create that takes no key must be."""
        all_headers = _merged(self.headers, headers)
        if method == "POST" and takes_key(path):
            # One key for every attempt: the server then makes one record at most.
            all_headers.setdefault("Idempotency-Key", str(uuid.uuid4()))
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            all_headers.setdefault("Content-Type", "application/json")
        response = None
        for attempt in range(self.retries + 1):
            response = self._attempt(method, path, payload, all_headers, once)
            if response is not None:
                if 200 <= response.status < 300:
                    return response
                if not retry_on(response.status) or (
                    once and not not_acted_on(response)
                ):
                    raise RequestFailed(response, f"{method} {path}: {response.status}")
            if attempt < self.retries:
                self.sleep(self.wait_before(attempt, response))
        status = response.status if response is not None else "no response"
        raise MaxRetriesExceeded(
            response,
            f"{method} {path}: max retries ({self.retries}) exceeded; last: {status}",
        )

    def _attempt(
        self,
        method: str,
        path: str,
        payload: bytes | None,
        headers: HTTPHeaderDict,
        once: bool,
    ) -> urllib3.BaseHTTPResponse | None:
        """One attempt: its answer, or None when none came. ``once``: an answer
        lost after the request was sent fails at once (it may have been made)."""
        try:
            return self.pool.request(
                method, self.base_url + path, body=payload, headers=headers
            )
        except urllib3.exceptions.ConnectTimeoutError:
            return None  # no connection made (refused too): nothing was sent
        except urllib3.exceptions.HTTPError as lost:
            if once:  # only a key would make sending it again safe
                raise RequestFailed(
                    None, f"{method} {path}: no answer, not sent again ({lost})"
                ) from lost
            return None


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print("usage: python -m refapi.client METHOD PATH [JSON_BODY]", file=sys.stderr)
        return 2
    method, path = argv[0].upper(), argv[1]
    if not path.startswith("/"):  # else it could name another host, Client.request
        print(f"refapi.client: PATH must start with '/', got {path!r}", file=sys.stderr)
        return 2
    try:
        body = json.loads(argv[2]) if len(argv) == 3 else None
    except ValueError as error:
        print(f"refapi.client: JSON_BODY is not valid JSON: {error}", file=sys.stderr)
        return 2
    try:
        client = Client(
            os.environ.get("REFAPI_URL", "http://127.0.0.1:8000"),
            token=os.environ.get("REFAPI_TOKEN"),
            api_key=os.environ.get("REFAPI_API_KEY"),
        )
    except ValueError:
        print("refapi.client: set REFAPI_TOKEN or REFAPI_API_KEY, not both",
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        response = client.request(method, path, body)
    except RequestFailed as failure:
        print(failure, file=sys.stderr)
        if failure.response is not None:
            print(failure.response.data.decode(errors="replace"))
        return 1
    print(response.status, response.data.decode(errors="replace"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
