"""Idempotency keys on the API's creates (docs/api.md, "Idempotent creates").

A client that lost an answer cannot know whether its create was made; with an
``Idempotency-Key`` (draft-ietf-httpapi-idempotency-key-header, after Stripe) it
sends the same request again under the same key:

- first request: executed; its status and body are stored with what it made, in
  one transaction;
- same key, same body (compared as canonical JSON): the stored status and body
  again, byte for byte, with ``Location`` and ``Idempotent-Replayed: true``;
  nothing is made twice;
- same key, another body: ``422 IDEMPOTENCY_KEY_REUSED``.

A key names one request of one caller on one route: it is scoped by the caller
(the principal, else the client address), the method and the route, so one key
used on an article and on a payment names two requests. Whether a route takes a
key, and must, is its row's ``Idempotency-Key`` parameter (``routes.py``); the
router reads the header (``read``) and the handler claims the key with the body as
it compares it (``Keyed.claim``), through the store, which keeps it 24 hours.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import (
    IdempotencyKeyInUse,
    IdempotencyKeyInvalid,
    IdempotencyKeyRequired,
    IdempotencyKeyReused,
)
from ..storage.base import Claim, Idempotent, KeyInUse
from .auth import client_address
from .wsgi import JSON_TYPE, Request, Response, canonical_json

# An sf-string's escapes (RFC 8941 section 3.3.3): \" and \\ only. No library in
# our dependencies parses structured fields, hence KEY_SCHEMA's pattern and this.
_SF_ESCAPE = re.compile(r'\\(["\\])')
# What ``key`` accepts, as the OpenAPI document states it: 1-255 printable ASCII
# characters without a comma and not opening with a double quote, nor with or
# ending in a space (HTTP strips those, RFC 9110 section 5.5); or an sf-string of
# 1-255 such characters, any of them, with ``"`` and ``\`` escaped. The quoted form's
# longest spelling is 2 + 2 * 255 characters.
KEY_SCHEMA: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 512,
    "pattern": r'^(?:"(?:[ !#-\[\]-~]|\\["\\]){1,255}"'
    r"|[!#-+\--~](?:[ -+\--~]{0,253}[!-+\--~])?)$",
    "description": "1-255 printable ASCII characters, no comma, no space at either "
    'end; or the same in double quotes (an RFC 8941 sf-string, `\\"` and `\\\\` '
    "escaped), where a comma is allowed.",
}
_KEY = re.compile(KEY_SCHEMA["pattern"])


def key(raw: str) -> str:
    """The key from the header: 1-255 printable ASCII, an sf-string unquoted first."""
    quoted = raw.startswith('"')
    if not quoted and "," in raw:
        # Two header lines reach the app joined by a comma (RFC 9110 section 5.3).
        raise IdempotencyKeyInvalid("Send one Idempotency-Key, not several.")
    if not _KEY.fullmatch(raw):
        raise IdempotencyKeyInvalid()
    return _SF_ESCAPE.sub(r"\1", raw[1:-1]) if quoted else raw


def fingerprint(body: object) -> str:
    """SHA-256 of the body's canonical JSON: key order and spacing do not matter."""
    return hashlib.sha256(canonical_json(body)).hexdigest()


@dataclass(frozen=True, slots=True)
class Keyed:
    """A request's idempotency key with what it is scoped by."""

    owner: str  # the caller: user:7, client:2, or addr:<address> when anonymous
    method: str
    route: str  # the row's template, with its action: /api/demo.php?action=create
    key: str

    def claim(self, body: object) -> Claim:
        """The key claimed by a request whose body, as compared, is ``body``."""
        return Claim(self.owner, self.method, self.route, self.key, fingerprint(body))


def read(request: Request, route: str, required: bool) -> Keyed | None:
    """The request's key on ``route`` (its method is the request's); None when it
    sent none and the route does not require one."""
    raw = request.environ.get("HTTP_IDEMPOTENCY_KEY")  # no header object made
    if raw is None:
        if required:
            raise IdempotencyKeyRequired()
        return None
    principal = request.principal
    owner = (
        principal.caller
        if principal is not None
        else "addr:" + client_address(request.environ)
    )
    return Keyed(owner, request.environ["REQUEST_METHOD"], route, key(raw))


def answer(
    claim: Claim, store: Callable[[], Idempotent], location: Callable[[str], str]
) -> Response:
    """The answer to a create under ``claim``: ``store()`` makes it, or finds the
    first request's outcome; ``location`` is the URL of the resource of an id."""
    try:
        outcome = store()
    except KeyInUse as busy:
        raise IdempotencyKeyInUse(busy.retry_after) from None
    if outcome.fingerprint != claim.fingerprint:
        raise IdempotencyKeyReused()
    headers = [
        ("Content-Type", JSON_TYPE),
        ("Location", location(outcome.resource_id)),
    ]
    if outcome.replayed:
        headers.append(("Idempotent-Replayed", "true"))
    return Response(outcome.body, outcome.status, headers)
