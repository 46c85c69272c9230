"""httpbin's range: a body a client may fetch in parts (RFC 9110 section 14).

``/lab/range/{n}`` answers ``n`` bytes (at most ``REFAPI_LAB_MAX_BYTES``) of the
alphabet, ``abc...zabc...``, the same every time, with ``Accept-Ranges: bytes``
and a strong ``ETag``. Its ``Range`` header, on a GET:

- one range (``bytes=0-99``, ``bytes=100-``, ``bytes=-100``, the last 100) that
  holds a byte of the body is ``206 Partial Content``, those bytes alone, with
  ``Content-Range: bytes first-last/n`` (section 14.4); a last byte past the end
  and a suffix longer than the body stop at its end (section 14.1.3);
- one that holds none (``bytes=n-``) is ``416``, with ``Content-Range: bytes */n``
  (section 15.5.17);
- several ranges, another unit, or a value that is not a range at all are ignored,
  as section 14.2 allows: the whole body, ``200``. So is a ``Range`` whose
  ``If-Range`` (section 13.1.5) does not name the body's entity tag, strongly: the
  client's part is of another body, so it gets the whole new one.

A matching ``If-None-Match`` is ``304`` before any range is read (section
13.2.2), and a HEAD ignores ``Range`` (only GET defines ranges, section 14.2).
httpbin's ``chunk_size`` and ``duration``, which trickle the body, are not taken
(docs/lab.md, "Ranges").
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from werkzeug.datastructures import ContentRange, Range
from werkzeug.http import (
    parse_etags,
    parse_if_range_header,
    parse_range_header,
    quote_etag,
    unquote_etag,
)

from ..web import Request, Response
from ..web.conditional import etag_of
from .errors import RangeNotSatisfiable

if TYPE_CHECKING:
    from ..config import Config

OCTETS = "application/octet-stream"
ALPHABET = b"abcdefghijklmnopqrstuvwxyz"
_NO_BYTES = re.compile(r"bytes\s*=\s*-0+", re.IGNORECASE)  # the last 0 bytes


def send_range(request: Request, config: Config, n: int) -> Response:
    size = min(n, config.lab_max_bytes)
    body = (ALPHABET * (size // len(ALPHABET) + 1))[:size]
    etag = etag_of(body, OCTETS)
    whole = Response(body, 200, [("Content-Type", OCTETS), ("Accept-Ranges", "bytes")])
    whole.etag = etag  # the router sends it, and answers If-None-Match (304)
    headers = request.headers
    if_none_match = headers.get("If-None-Match")
    if request.environ["REQUEST_METHOD"] != "GET" or (
        if_none_match is not None and parse_etags(if_none_match).contains_weak(etag)
    ):
        return whole
    sent = headers.get("Range")
    asked = parse_range_header(sent)
    if sent is None or not if_range_holds(headers.get("If-Range"), etag):
        return whole
    if asked is None:
        # A suffix of no bytes is no range a body can satisfy (RFC 9110 section
        # 14.1.1), not a malformed one: Werkzeug reads it as the latter.
        if _NO_BYTES.fullmatch(sent.strip()):
            raise RangeNotSatisfiable(size)
        return whole
    span = byte_span(asked, size)
    if span is None:
        return whole  # several, or another unit
    start, stop = span
    if start >= stop:
        raise RangeNotSatisfiable(size)
    part = [
        ("Content-Type", OCTETS),
        ("Accept-Ranges", "bytes"),
        ("Content-Range", ContentRange("bytes", start, stop, size).to_header()),
        ("ETag", quote_etag(etag)),  # the router tags a 200 only
    ]
    return Response(body[start:stop], 206, part)


def if_range_holds(value: str | None, etag: str) -> bool:
    """Whether a ``Range`` applies: no ``If-Range``, or one naming ``etag``. A
    date never holds (the body has no ``Last-Modified``), nor a weak tag, which
    Werkzeug reads as strong: If-Range compares strongly."""
    if value is None:
        return True
    _, weak = unquote_etag(value.strip())
    return parse_if_range_header(value).etag == etag and not weak


def byte_span(asked: Range, size: int) -> tuple[int, int] | None:
    """The one byte range asked, as (start, stop), stop past its last byte, both
    within the body (start == stop: none of it is); None for several ranges or
    another unit, which are ignored."""
    if asked.units != "bytes" or len(asked.ranges) != 1:
        return None
    start, stop = asked.ranges[0]
    if stop is None and start < 0:
        # A suffix: the last -start bytes, or the whole of a shorter body (RFC
        # 9110 section 14.1.3); Werkzeug's Range.range_for_length refuses it.
        return max(size + start, 0), size
    stop = size if stop is None else min(stop, size)
    return min(start, size), stop
