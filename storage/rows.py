"""Rows to API records, shared by every backend so a backend writes SQL alone.

A backend selects the columns named here, in this order, and hands each row to
the mapper of its resource, or a page of rows to the page's (``each``, or a
resource read only in pages: ``items``). Times are stored as RFC 3339 text made by
``base.iso`` when written, so a record shows them as they are.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from decimal import Decimal
from json.encoder import encode_basestring
from typing import Any

from .base import Record, iso

Row = Sequence[Any]
Page = Callable[[Sequence[Row]], list[Record]]  # a page of rows to its records


def each(one: Callable[[Row], Record]) -> Page:
    """The page's mapper of a resource also read one at a time: its row's
    mapper, called a row."""

    def page(found: Sequence[Row]) -> list[Record]:
        return [one(row) for row in found]

    return page


ARTICLE_COLUMNS = "id, title, tags, created_at, updated_at, author_type, author_id"
NOTE_COLUMNS = "id, text, created_at"
USER_COLUMNS = "id, email, first_name, last_name, role, created_at, updated_at"
API_KEY_COLUMNS = "id, name, user_id, created_at"
OAUTH_CLIENT_COLUMNS = "id, name, client_id, created_at"
TODO_COLUMNS = "user_id, id, title, completed"
ITEM_COLUMNS = "id, name, created_at"
PAYMENT_COLUMNS = "id, amount, currency, created_at"
PAYMENT_ROW_COLUMNS = (
    "id, amount, currency, created_at, scope, idempotency_key, fingerprint, status,"
    " body, created"
)


def qualified(alias: str, columns: str) -> str:
    """``columns`` of the table named ``alias`` in a join: ``a.id, a.title, ...``."""
    return ", ".join(f"{alias}.{column}" for column in columns.split(", "))


def page_size(limit: int) -> int:
    """How many rows a page's query fetches: one past the page, so the caller
    tells whether a next page exists without a second query."""
    return limit + 1


def email_key(email: str) -> str:
    """The form an email is unique and looked up in."""
    # casefold, not lower: "STRASSE" and "straße" name one mailbox to a person.
    return email.casefold()


def tags_text(tags: list[str]) -> str:
    """An article's tags as stored: a JSON array, non-ASCII kept as it is.

    Each tag is a string (the schemas say so), written by the json module's own
    string encoder, with the separators ``json.dumps`` writes by default, so the
    text is the one rows written before hold; without an encoder's set-up around
    a list of strings.
    PERF: about 4,000 instructions a created article, make bench-instructions"""
    return "[" + ", ".join(map(encode_basestring, tags)) + "]"


# The stored text is what ``tags_text`` wrote: one array, nothing around it, so it
# is decoded as it is, without ``json.loads``'s checks for what it never holds.
_TAGS = json.JSONDecoder()


def article(row: Row) -> Record:
    return {
        "id": row[0],
        "title": row[1],
        "tags": _TAGS.raw_decode(row[2])[0],
        "author": {"type": row[5], "id": row[6]} if row[5] is not None else None,
        "createdAt": row[3],
        "updatedAt": row[4],
    }


articles = each(article)


def changed_article(current: Record, changes: Record, now: float) -> Record | None:
    """``current`` with ``changes`` and a new ``updatedAt``; None when the changes
    change nothing (then nothing is written and ``updatedAt`` stays)."""
    updated = {**current, **changes}
    if updated == current:
        return None
    updated["updatedAt"] = iso(now)
    return updated


def user(row: Row) -> Record:
    return {
        "id": row[0],
        "email": row[1],
        "firstName": row[2],
        "lastName": row[3],
        "role": row[4],
        "createdAt": row[5],
        "updatedAt": row[6],
    }


users = each(user)


def api_key(row: Row) -> Record:
    return {"id": row[0], "name": row[1], "userId": row[2], "createdAt": row[3]}


api_keys = each(api_key)


def oauth_client(row: Row) -> Record:
    return {"id": row[0], "name": row[1], "clientId": row[2], "createdAt": row[3]}


oauth_clients = each(oauth_client)


def note(row: Row) -> Record:
    return {"id": row[0], "text": row[1], "createdAt": row[2]}


notes = each(note)


def todo(row: Row) -> Record:
    return {"userId": row[0], "id": row[1], "title": row[2], "completed": bool(row[3])}


def items(found: Sequence[Row]) -> list[Record]:
    """A page of items, each row mapped in the comprehension: items are read only
    in pages, of up to 100, so no row's mapper is called a row.
    PERF: 35,000 instructions a 100-item page, make bench-instructions"""
    return [{"id": row[0], "name": row[1], "createdAt": row[2]} for row in found]


def payment_row(
    owner: str, key: str, fingerprint: str, payment: Record, body: bytes, now: float
) -> tuple[Any, ...]:
    """A new payment's row, in the order of ``PAYMENT_ROW_COLUMNS``: the payment,
    its owner's key, and the first answer (201, ``body``) to replay."""
    return (
        payment["id"], str(payment["amount"]), payment["currency"],
        payment["createdAt"], owner, key, fingerprint, 201, body, now,
    )  # fmt: skip


def payment(row: Row) -> Record:
    # The amount is stored as text: exact, whatever the backend's numbers.
    return {
        "id": row[0],
        "amount": Decimal(row[1]),
        "currency": row[2],
        "createdAt": row[3],
    }
