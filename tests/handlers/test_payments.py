"""POST /v1/payments and GET /v1/payments/{id}: validation and idempotency keys."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from decimal import Decimal

import pytest

from refapi.handlers.payments import new_payment_id
from refapi.storage.base import iso
from tests.conftest import ADMIN, bearer
from tests.storage import sqlite_peek

# On both backends: a payment and its key are one transaction.
pytestmark = pytest.mark.every_backend

KEY = {"Idempotency-Key": "order-42"}


def pay(app, body, headers=KEY, **kwargs):
    return app.post_json("/v1/payments", body, headers=headers, **kwargs)


def payments_made(app, payment_ids, caller=None) -> int:
    """How many payments the caller (the admin, unless another's environ) has, read
    through the API: a payment is stored under an id the service handed out."""
    found = [
        app.get(f"/v1/payments/{id}", extra_environ=caller, status=[200, 404])
        for id in payment_ids.given
    ]
    return sum(response.status_int == 200 for response in found)


def test_create_returns_201_with_location_and_the_payment(app, clock):
    response = pay(app, {"amount": 10.5, "currency": "EUR"}, status=201)
    payment = response.json
    assert set(payment) == {"id", "amount", "currency", "createdAt"}
    assert payment["id"].startswith("pay_")
    assert payment["amount"] == 10.5 and payment["currency"] == "EUR"
    assert response.headers["Location"] == f"/v1/payments/{payment['id']}"
    assert "Idempotent-Replayed" not in response.headers
    assert app.get(response.headers["Location"]).json == payment


@pytest.mark.parametrize(
    "raw, shown",
    [("0.3", "0.3"), ("0.30", "0.3"), ("1000000", "1000000"),
     ("999999.99", "999999.99"), ("0.01", "0.01"), ("12", "12"), ("1E+2", "100")],
    ids=["tenths", "trailing-zero", "maximum", "largest-cents", "one-cent", "whole",
         "exponent"],
)  # fmt: skip
def test_amounts_round_trip_exactly(app, raw, shown):
    body = f'{{"amount": {raw}, "currency": "USD"}}'
    response = app.post(
        "/v1/payments", body, headers={**KEY, "Content-Type": "application/json"}
    )
    assert f'"amount":{shown},' in response.text
    assert f'"amount":{shown},' in app.get(response.headers["Location"]).text


def test_replay_returns_the_stored_bytes_and_creates_nothing(app, payment_ids):
    first = pay(app, {"amount": 5, "currency": "GBP"}, status=201)
    again = app.post(
        "/v1/payments",
        '{ "currency" : "GBP", "amount" : 5.00 }',  # same JSON, other spelling
        headers={**KEY, "Content-Type": "application/json"},
        status=201,
    )
    assert again.body == first.body
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.headers["Location"] == first.headers["Location"]
    assert payments_made(app, payment_ids) == 1


def test_same_key_other_body_is_422(app, payment_ids):
    pay(app, {"amount": 5, "currency": "GBP"}, status=201)
    response = pay(app, {"amount": 6, "currency": "GBP"}, status=422)
    assert response.json["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert payments_made(app, payment_ids) == 1


def test_keys_are_scoped_to_the_caller(app, payment_ids):
    mine = pay(app, {"amount": 5, "currency": "GBP"}, status=201)
    register = {"email": "eve@example.com", "password": "eve-password"}
    app.post_json("/api/users", register, status=201)
    eve = bearer(app, **register)
    other = pay(app, {"amount": 5, "currency": "GBP"}, extra_environ=eve, status=201)
    assert "Idempotent-Replayed" not in other.headers
    assert payments_made(app, payment_ids) == 1
    assert payments_made(app, payment_ids, eve) == 1
    # Nor does one caller read another's payment: it is as unknown as a missing one.
    hidden = app.get(mine.headers["Location"], extra_environ=eve, status=404)
    assert hidden.headers["Cache-Control"] == "no-store"
    app.get(other.headers["Location"], extra_environ=eve, status=200)
    app.get(other.headers["Location"], status=404)


def test_a_renewed_token_keeps_the_keys(app, payment_ids):
    pay(app, {"amount": 5, "currency": "GBP"}, status=201)
    app.extra_environ = bearer(app, ADMIN["email"], ADMIN["password"])
    again = pay(app, {"amount": 5, "currency": "GBP"}, status=201)
    assert again.headers["Idempotent-Replayed"] == "true"
    assert payments_made(app, payment_ids) == 1


def test_payments_need_a_credential(anon):
    response = pay(anon, {"amount": 5, "currency": "GBP"}, status=401)
    assert response.json["code"] == "UNAUTHENTICATED"
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="refapi"'
    anon.get("/v1/payments/pay_x", status=401)


def test_keys_expire_after_24_hours(app, payment_ids, clock):
    pay(app, {"amount": 5, "currency": "GBP"}, status=201)
    clock.advance(24 * 3600 + 1)
    app.extra_environ = bearer(app, ADMIN["email"], ADMIN["password"])  # expired
    response = pay(app, {"amount": 7, "currency": "GBP"}, status=201)
    assert response.json["amount"] == 7
    assert payments_made(app, payment_ids) == 2


@pytest.mark.parametrize(
    "headers, code",
    [({}, "IDEMPOTENCY_KEY_REQUIRED"),
     ({"Idempotency-Key": ""}, "IDEMPOTENCY_KEY_INVALID"),
     ({"Idempotency-Key": "k" * 256}, "IDEMPOTENCY_KEY_INVALID"),
     ({"Idempotency-Key": "caf\u00e9"}, "IDEMPOTENCY_KEY_INVALID"),
     ({"Idempotency-Key": "tab\there"}, "IDEMPOTENCY_KEY_INVALID"),
     ({"Idempotency-Key": '""'}, "IDEMPOTENCY_KEY_INVALID")],
    ids=["missing", "empty", "too-long", "non-ascii", "control-char", "empty-quoted"],
)  # fmt: skip
def test_bad_keys_are_400_and_store_nothing(app, payment_ids, headers, code):
    response = pay(app, {"amount": 1, "currency": "EUR"}, headers=headers, status=400)
    assert response.json["code"] == code
    assert payments_made(app, payment_ids) == 0


@pytest.mark.parametrize(
    "key",
    ["a,b", "order-1, order-2", ",", 'a,"b"', '"a","b"', '"a" ,"b"', '"a\\"'],
    ids=["joined", "joined-spaced", "comma", "plain-then-quoted", "two-quoted",
         "two-quoted-spaced", "unterminated-escape"],
)  # fmt: skip
def test_two_keys_joined_or_a_broken_quoted_key_are_400(app, payment_ids, key):
    # Two Idempotency-Key lines reach the app joined by a comma (RFC 9110 5.3): that
    # is two keys, not one.
    response = pay(
        app, {"amount": 1, "currency": "EUR"}, headers={"Idempotency-Key": key},
        status=400,
    )  # fmt: skip
    assert response.json["code"] == "IDEMPOTENCY_KEY_INVALID"
    assert payments_made(app, payment_ids) == 0


@pytest.mark.parametrize(
    "quoted, key",
    [('"a,b"', "a,b"), ('"say \\"hi\\""', 'say "hi"'),
     ('"back\\\\slash"', "back\\slash")],
    ids=["comma-inside-quotes", "escaped-quote", "escaped-backslash"],
)  # fmt: skip
def test_a_structured_field_string_may_hold_a_comma(app, store, clock, quoted, key):
    first = pay(
        app, {"amount": 1, "currency": "EUR"}, headers={"Idempotency-Key": quoted}
    )
    assert first.status_int == 201
    # The key is stored as the string the field carries: offered to the store under
    # that string (by the admin, who made the payment), it is the key already taken.
    admin, _ = store.user_login(ADMIN["email"])
    now = clock()
    other = {"id": new_payment_id(now), "amount": Decimal(2), "currency": "EUR",
             "createdAt": iso(now)}  # fmt: skip
    outcome = store.create_payment(
        f"user:{admin['id']}", key, "another body", other, b"{}", now
    )
    assert outcome.replayed and outcome.body == first.body


def test_quoted_key_is_the_same_key(app, payment_ids):
    pay(app, {"amount": 1, "currency": "EUR"}, headers={"Idempotency-Key": '"abc"'})
    again = pay(
        app, {"amount": 1, "currency": "EUR"}, headers={"Idempotency-Key": "abc"}
    )
    assert again.headers["Idempotent-Replayed"] == "true"
    assert payments_made(app, payment_ids) == 1


@pytest.mark.parametrize(
    "body, fields",
    [({}, ["/amount", "/currency"]), ({"amount": 0, "currency": "EUR"}, ["/amount"]),
     ({"amount": -1, "currency": "EUR"}, ["/amount"]),
     ({"amount": 1000000.01, "currency": "EUR"}, ["/amount"]),
     ({"amount": 1.005, "currency": "EUR"}, ["/amount"]),
     ({"amount": "10", "currency": "EUR"}, ["/amount"]),
     ({"amount": True, "currency": "EUR"}, ["/amount"]),
     ({"amount": 10, "currency": "eur"}, ["/currency"]),
     ({"amount": 10, "currency": "XYZ"}, ["/currency"]),
     ({"amount": 10, "currency": "EUR", "note": "x"}, ["/note"]),
     ({"amount": 1.001, "currency": "ABC"}, ["/amount", "/currency"])],
    ids=["empty", "zero", "negative", "over-max", "three-decimals", "string", "bool",
         "lower-case", "unlisted", "unknown-field", "two-at-once"],
)  # fmt: skip
def test_invalid_payments_list_every_field_and_store_nothing(
    app, payment_ids, body, fields
):
    response = pay(app, body, status=400)
    assert response.json["code"] == "VALIDATION_ERROR"
    assert sorted({e["field"] for e in response.json["details"]["errors"]}) == fields
    assert payments_made(app, payment_ids) == 0
    # The key was not consumed: a valid retry with it succeeds.
    pay(app, {"amount": 1, "currency": "EUR"}, status=201)


def test_configured_currencies_replace_the_default(make_app):
    app = make_app(currencies=("SEK",))
    pay(app, {"amount": 1, "currency": "SEK"}, status=201)
    pay(
        app,
        {"amount": 1, "currency": "EUR"},
        headers={"Idempotency-Key": "x"},
        status=400,
    )


def test_huge_exponent_is_rejected_not_crashed(app, payment_ids):
    response = app.post(
        "/v1/payments",
        '{"amount": 1e999999999, "currency": "EUR"}',
        headers={**KEY, "Content-Type": "application/json"},
        status=400,
    )
    assert response.json["details"]["errors"][0]["field"] == "/amount"
    assert payments_made(app, payment_ids) == 0


@contextlib.contextmanager
def answers_fail_to_store(path: str) -> Iterator[None]:
    """SQLite fails every write that stores a payment's answer, inside that write.

    Triggers run in the writing statement, after its row is in: a write that is
    one transaction leaves nothing; a key reserved in a write of its own (and the
    answer stored by a second) would stay behind.
    """
    fault = "BEGIN SELECT RAISE(ABORT, 'disk on fire'); END"
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute(f"CREATE TRIGGER fail_insert AFTER INSERT ON payments"
                     f" WHEN length(NEW.body) > 0 {fault}")  # fmt: skip
        conn.execute(f"CREATE TRIGGER fail_update AFTER UPDATE OF body ON payments"
                     f" WHEN length(NEW.body) > 0 {fault}")  # fmt: skip
        try:
            yield
        finally:
            conn.execute("DROP TRIGGER fail_insert")
            conn.execute("DROP TRIGGER fail_update")


@pytest.mark.sqlite_only
def test_sqlite_a_write_failing_midway_stores_nothing_and_the_retry_pays_once(
    app, store, payment_ids
):
    body = {"amount": 3, "currency": "EUR"}
    store.ping()  # the tables exist before the fault is planted
    with answers_fail_to_store(store.path):
        failed = pay(app, body, status="*")
    assert failed.status_int >= 500
    assert set(failed.json) == {"code", "message", "details"}
    assert payments_made(app, payment_ids) == 0
    # The key was not consumed: the retry pays, once, and is then replayed.
    made = pay(app, body, status=201)
    assert "Idempotent-Replayed" not in made.headers
    again = pay(app, body, status=201)
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.body == made.body
    assert payments_made(app, payment_ids) == 1


def test_unknown_payment_is_404(app):
    assert app.get("/v1/payments/pay_nope", status=404).json["code"] == "NOT_FOUND"


def pay_raw(app, amount: str, key: str = "order-42", **kwargs):
    """POST a payment whose amount is the JSON number token ``amount``, as sent."""
    return app.post(
        "/v1/payments",
        f'{{"amount": {amount}, "currency": "EUR"}}',
        headers={"Idempotency-Key": key, "Content-Type": "application/json"},
        **kwargs,
    )


@pytest.mark.parametrize(
    "amount",
    ["1." + "0" * 900, "1." + "0" * 31, "1" * 33, "1" * 950, "0." + "0" * 30 + "1"],
    ids=["902-characters", "33-characters", "33-digits", "950-digits",
         "33-characters-fraction"],
)  # fmt: skip
def test_an_amount_over_32_characters_is_400_at_amount(app, payment_ids, amount):
    response = pay_raw(app, amount, status=400)
    assert response.json["code"] == "VALIDATION_ERROR"
    assert response.json["details"]["errors"] == [
        {"field": "/amount", "message": "must be a number of at most 32 characters"}
    ]
    assert payments_made(app, payment_ids) == 0


@pytest.mark.parametrize("amount", ["1", "1.0", "1.00", "1." + "0" * 30, "1E+0"])
def test_amounts_equal_by_value_are_one_amount(app, payment_ids, amount):
    first = pay_raw(app, "1", status=201)
    again = pay_raw(app, amount, status=201)
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.body == first.body
    assert payments_made(app, payment_ids) == 1


@pytest.mark.parametrize(
    "amount, kept",
    [("1." + "0" * 30, "1"), ("10.50", "10.5"), ("1E+2", "100"), ("0.10", "0.1"),
     ("999999.990", "999999.99")],
    ids=["32-characters", "trailing-zero", "exponent", "tenth", "largest"],
)  # fmt: skip
@pytest.mark.sqlite_only
def test_amounts_are_stored_normalized_sqlite_column(app, store, amount, kept):
    created = pay_raw(app, amount, status=201)
    assert sqlite_peek.rows(store, "SELECT amount FROM payments") == [(kept,)]
    assert f'"amount":{kept},' in created.text


def test_every_payment_answer_is_no_store(app):
    # A payment depends on who asks (its idempotency scope): no cache may keep it.
    first = pay(app, {"amount": 3, "currency": "EUR"}, status=201)
    replay = pay(app, {"amount": 3, "currency": "EUR"}, status=201)
    again = app.get(first.headers["Location"])
    for response in (first, replay, again):
        assert response.headers["Cache-Control"] == "no-store"


def test_an_unknown_payment_id_is_quoted_cut_short(app):
    """An error quotes at most 100 characters of what was sent (docs/api.md)."""
    missing = app.get("/v1/payments/" + "p" * 3000, status=404)
    assert missing.json["message"] == f"Payment {'p' * 100}… does not exist."
