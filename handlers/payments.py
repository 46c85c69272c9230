"""Payments, created at most once per idempotency key.

A client that times out cannot know whether its payment was made; with an
``Idempotency-Key`` (draft-ietf-httpapi-idempotency-key-header, after Stripe) it
simply retries with the same key:

- first request: executed; its status and body are stored with the payment, in one
  transaction;
- same key, same body: the stored status and body again, byte for byte, with
  ``Idempotent-Replayed: true``, and no second payment;
- same key, different body: ``422 IDEMPOTENCY_KEY_REUSED``.

Amounts are judged, stored and compared by value: ``1``, ``1.0`` and ``1.00`` are one
amount, kept in its shortest form (``1``), and so one request under one key.

Keys are scoped to the caller and remembered for 24 hours. A request that fails
validation, or fails with a 5xx, stores nothing, so a retry can still succeed.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from ..errors import (
    IdempotencyKeyInUse,
    IdempotencyKeyInvalid,
    IdempotencyKeyRequired,
    IdempotencyKeyReused,
    found,
)
from ..storage.base import KeyInUse, PaymentStore, iso
from ..web import (
    JSON_TYPE,
    Request,
    Response,
    canonical_json,
    json_bytes,
    json_response,
)

# An sf-string's escapes (RFC 8941 section 3.3.3): \" and \\ only. No library in
# our dependencies parses structured fields, hence KEY_SCHEMA's pattern and this.
_SF_ESCAPE = re.compile(r'\\(["\\])')
# What ``idempotency_key`` accepts, as the OpenAPI document states it: 1-255 printable
# ASCII characters without a comma and not opening with a double quote, nor with or
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


def idempotency_key(raw: str | None) -> str:
    """The key from the header: 1-255 printable ASCII, an sf-string unquoted first."""
    if raw is None:
        raise IdempotencyKeyRequired()
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


def by_value(amount: int | Decimal) -> Decimal:
    """The amount in its shortest form: ``1.50`` is ``1.5``, ``1E+2`` is ``100``."""
    value = Decimal(amount)
    if value == value.to_integral_value():
        return value.quantize(Decimal(1))
    return value.normalize()


# A payment's id in the OpenAPI document (schemas/payment.json says the same):
# new_payment_id's 38 characters, with room for the microseconds to grow.
ID_SCHEMA = {"type": "string", "maxLength": 64, "pattern": "^pay_[0-9a-f]+$"}


def new_payment_id(now: float) -> str:
    """``pay_`` + microseconds in hex + 80 random bits: unique and time-ordered, so
    new rows append to the primary key's index instead of landing at random."""
    return f"pay_{int(now * 1e6):014x}{secrets.token_hex(10)}"


def create_payment(
    request: Request,
    store: PaymentStore,
    clock: Callable[[], float],
    new_id: Callable[[float], str],
) -> Response:
    key = idempotency_key(request.headers.get("Idempotency-Key"))
    body = {**request.payload, "amount": by_value(request.payload["amount"])}
    digest = fingerprint(body)
    now = clock()
    payment = {
        "id": new_id(now),
        "amount": body["amount"],
        "currency": body["currency"],
        "createdAt": iso(now),
    }
    # Rendered before anything is stored: if rendering fails, nothing is written.
    try:
        outcome = store.create_payment(
            _owner(request), key, digest, payment, json_bytes(payment), now
        )
    except KeyInUse as busy:
        raise IdempotencyKeyInUse(busy.retry_after) from None
    if outcome.fingerprint != digest:
        raise IdempotencyKeyReused()
    headers = [
        ("Content-Type", JSON_TYPE),
        ("Location", request.link(f"/v1/payments/{outcome.resource_id}")),
    ]
    if outcome.replayed:
        headers.append(("Idempotent-Replayed", "true"))
    return Response(outcome.body, outcome.status, headers)


def get_payment(request: Request, store: PaymentStore, id: str) -> Response:
    # Another caller's payment is as unknown as a missing one (OWASP API1:2023).
    payment = store.get_payment(id, _owner(request))
    return json_response(found(payment, "Payment", id))


def _owner(request: Request) -> str:
    """Whose payments and keys these are: the principal, never a token string."""
    return request.require_principal().caller
