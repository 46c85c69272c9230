"""Keyset pagination with signed, opaque cursors.

A page is "the next ``limit`` records with ``id`` greater than the last one you saw",
never "skip N": a record inserted or deleted during a walk cannot shift the window,
so a walk never repeats or skips a record that existed throughout, and a page deep
in the collection costs one index seek, like the first.

The cursor names the collection, any filter, and the last id, signed with
HMAC-SHA256 under the app's secret key (RFC 2104) and encoded base64url (RFC 4648
section 5), so it is URL-safe, cannot be forged or moved to another collection or
filter (a cursor of ``?tag=a`` is refused with ``?tag=b`` or with no tag), and
survives a restart. It also carries the data's reset epoch, which a reset
(``make reset``) moves on: ids start again after one, so a cursor issued before it
would land on other records, and is refused instead, on every worker at once,
whichever key signs it. The next page is announced three ways: the ``X-Next-Cursor``
header, ``nextCursor`` in the body, and a ``Link: <...>; rel="next"`` header (RFC
8288) whose URL carries the filter too. The last page has none of them and
``nextCursor: null``.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..errors import InvalidCursor, ValidationError
from .keys import cursor_key
from .wsgi import Request, Response, json_response, positive_int

if TYPE_CHECKING:
    from ..config import Config
    from ..storage.base import MetaStore

_MAC_BYTES = 16
# What a cursor looks like, as the OpenAPI document states it: base64url without
# padding, never empty. Only a cursor this server issued for the same collection and
# filters is accepted; an empty ``cursor=`` is not one, so it is refused like any
# other (``INVALID_CURSOR``), never read as "the first page": a client that turns a
# ``null`` ``nextCursor`` into ``""`` would otherwise loop over page one for ever.
# A schema states the shape and no more: the signature (the MAC) is why a value of
# that shape may still be refused (docs/api.md, "Pagination").
# The longest one issued is under 900 characters: a 50-character tag, each
# character 4 bytes percent-encoded, in its scope, a 64-bit id and epoch, the MAC;
# base64url grows that by a third.
CURSOR_SCHEMA: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 1024,
    "pattern": "^[A-Za-z0-9_-]+$",
    "description": "The `nextCursor` of the previous page, as it was issued; "
    "any other value, an empty one included, is `400 INVALID_CURSOR`. A cursor is "
    "signed by the server for its collection and filters: the pattern is its "
    "shape, and a value of that shape the server did not sign is refused as well.",
}
_CURSOR = re.compile(CURSOR_SCHEMA["pattern"])


# At module level, yet no instance's state: a pure function of the key it is given,
# each entry found by that key alone, so instances with different keys share none;
# 8 holds every key of a process (an instance or two, and a restored file's key).
@functools.lru_cache(maxsize=8)
def _keyed(secret: bytes) -> hmac.HMAC:
    """HMAC-SHA256 already keyed with ``secret``: each use copies it, skipping the
    key schedule (the MAC is the same as ``hmac.new(secret, ...)``)."""
    return hmac.new(secret, digestmod=hashlib.sha256)


def _mac(secret: bytes, payload: bytes) -> bytes:
    mac = _keyed(secret).copy()
    mac.update(payload)
    return mac.digest()[:_MAC_BYTES]


def _b64(raw: bytes) -> str:
    """base64url without padding (RFC 4648 section 5)."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _filter_query(filters: Mapping[str, str | None] | None) -> str:
    """The filters given, sorted and percent-encoded: ``tag=a%2Fb``, or ``""``."""
    if not filters:  # most pages: no filter, nothing to sort or join
        return ""
    given = sorted((name, value) for name, value in filters.items() if value)
    return "&".join(f"{name}={quote(value, safe='')}" for name, value in given)


def scope(collection: str, filters: Mapping[str, str | None] | None = None) -> str:
    """What a cursor is issued for: the collection, and the filters if any.

    ``articles`` unfiltered (the form every cursor had before filters, so those
    stay good), else ``articles?tag=a%2Fb``: percent-encoded, so two different
    queries never share a scope, and plain ASCII.
    """
    query = _filter_query(filters)
    return f"{collection}?{query}" if query else collection


def encode_cursor(secret: bytes, collection: str, last_id: int, epoch: int) -> str:
    payload = f"{collection}:{last_id}:{epoch}".encode()
    return _b64(payload + _mac(secret, payload))


def decode_cursor(secret: bytes, collection: str, cursor: str, epoch: int) -> int:
    """The last id a cursor stands for; ``INVALID_CURSOR`` unless we issued it here,
    for this ``collection`` (a ``scope``: collection and filters), since the last
    reset (``epoch``)."""
    # The document's pattern and length, empty included.
    if len(cursor) > CURSOR_SCHEMA["maxLength"] or not _CURSOR.fullmatch(cursor):
        raise InvalidCursor()
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (ValueError, binascii.Error):
        raise InvalidCursor() from None
    # One encoding per value: padding, stray characters or set spare bits are refused.
    if _b64(raw) != cursor:
        raise InvalidCursor()
    payload, mac = raw[:-_MAC_BYTES], raw[-_MAC_BYTES:]
    if len(raw) <= _MAC_BYTES or not hmac.compare_digest(mac, _mac(secret, payload)):
        raise InvalidCursor()
    fields = payload.decode().rsplit(":", 2)
    if len(fields) != 3:  # signed by a release whose cursors carried no epoch
        raise InvalidCursor()
    name, last_id, issued_in = fields
    if name != collection:
        raise InvalidCursor("The cursor belongs to another collection or filter.")
    if int(issued_in) != epoch:
        raise InvalidCursor(
            "The data was reset after the cursor was issued; start from the first page."
        )
    return int(last_id)


def text_filter(
    request: Request, name: str, min_length: int, max_length: int
) -> str | None:
    """The query parameter ``name``, given at most once (two values would be two
    filters, which one cursor cannot name), of ``min_length`` to ``max_length``
    characters; ``None`` when absent."""
    value = request.arg(name)
    if value is not None and not min_length <= len(value) <= max_length:
        raise ValidationError.one(
            name, f"must be {min_length} to {max_length} characters"
        )
    return value


class Pages:
    """Keyset pages of one app's collections: its page sizes, the key its cursors
    are signed with and its data's reset epoch, bound once at start-up."""

    def __init__(self, config: Config, store: MetaStore) -> None:
        self.default, self.max = config.page_size_default, config.page_size_max
        self.key = functools.partial(cursor_key, config, store)
        self.epoch = store.reset_epoch

    def list(
        self,
        request: Request,
        collection: str,
        fetch: Callable[[int, int], list[Any]],
        filters: Mapping[str, str | None] | None = None,
        keep: Mapping[str, str] | None = None,
    ) -> Response:
        """One keyset page of ``collection``: the window the request asks for,
        ``fetch(after, limit)`` from the store, and the answer with its next
        cursor, issued for ``scope(collection, filters)``; the next page's URL
        repeats the filters, after ``keep``: query parameters that name the
        operation rather than filter it (the demo's ``action=list``)."""
        limit, issued_for = self.limit(request), scope(collection, filters)
        # The reset epoch (docs/api.md, "Pagination") is read at most once, so the
        # incoming and the outgoing cursor name the same one.
        cursor, epoch, after = request.arg("cursor"), None, 0
        if cursor is not None:
            epoch = self.epoch()
            after = decode_cursor(self.key(), issued_for, cursor, epoch)
        records = fetch(after, limit)  # up to limit + 1: one more says there are
        if len(records) <= limit:
            return json_response({"data": records, "nextCursor": None})
        records = records[:limit]
        epoch = self.epoch() if epoch is None else epoch
        cursor = encode_cursor(self.key(), issued_for, records[-1]["id"], epoch)
        query = f"cursor={cursor}&limit={limit}"
        if keep:
            query = f"{_filter_query(keep)}&{query}"
        if filters_given := _filter_query(filters):
            query += f"&{filters_given}"
        link = f'<{request.link(f"{request.path}?{query}")}>; rel="next"'
        return json_response(
            {"data": records, "nextCursor": cursor},
            headers=[("X-Next-Cursor", cursor), ("Link", link)],
        )

    def limit(self, request: Request) -> int:
        """The page size the request asks for (``limit``), validated."""
        raw_limit = request.arg("limit")
        if raw_limit is None:
            return self.default
        return positive_int("limit", raw_limit, self.max)  # as a path's id is
