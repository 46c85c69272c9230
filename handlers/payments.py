"""Payments, created at most once per idempotency key.

A client that times out cannot know whether its payment was made; with an
``Idempotency-Key`` it simply retries with the same key, as on every create
(``web/idempotency.py``: the first answer replayed, another body ``422``). Here the
key is required, and the payment and its key are one row: its id is made above
storage, so its answer is rendered before anything is written.

Amounts are judged, stored and compared by value: ``1``, ``1.0`` and ``1.00`` are one
amount, kept in its shortest form (``1``), and so one request under one key.

Keys are scoped to the caller and remembered for 24 hours. A request that fails
validation, or fails with a 5xx, stores nothing, so a retry can still succeed.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from decimal import Decimal

from ..errors import IdempotencyKeyRequired, found
from ..storage.base import PaymentStore, iso
from ..web import Request, Response, idempotency, json_bytes, json_response


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
    _owner(request)  # a payment is its maker's: never made without one
    keyed = request.idempotency
    if keyed is None:  # the row requires a key: the router refused it already
        raise IdempotencyKeyRequired()
    body = {**request.payload, "amount": by_value(request.payload["amount"])}
    claim = keyed.claim(body)
    now = clock()
    payment = {
        "id": new_id(now),
        "amount": body["amount"],
        "currency": body["currency"],
        "createdAt": iso(now),
    }
    # Rendered before anything is stored: if rendering fails, nothing is written.
    rendered = json_bytes(payment)
    return idempotency.answer(
        claim,
        lambda: store.create_payment(
            claim.owner, claim.key, claim.fingerprint, payment, rendered, now
        ),
        lambda made: request.link(f"/v1/payments/{made}"),
    )


def get_payment(request: Request, store: PaymentStore, id: str) -> Response:
    # Another caller's payment is as unknown as a missing one (OWASP API1:2023).
    payment = store.get_payment(id, _owner(request))
    return json_response(found(payment, "Payment", id))


def _owner(request: Request) -> str:
    """Whose payments and keys these are: the principal, never a token string."""
    return request.require_principal().caller
