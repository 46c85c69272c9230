"""Request bodies: read within the size limit, whole, typed, and parsed as JSON (or,
at the OAuth token endpoint, as a form).

The limit is the route's (``Route.body_limit`` in routes.py, or
``REFAPI_MAX_BODY_BYTES`` where that is smaller): a few kilobytes, what the route's
schema accepts written at its longest, so that no body costs more to refuse than
one the route would take (docs/api.md, "Request bodies"). The order of refusals
follows what can be known soonest: ``413`` from the ``Content-Length`` header alone
(the body is never read), or for a chunked body once one byte past the limit has
been read (reading stops there), ``415`` from the ``Content-Type``, then ``400``
once the bytes are read: ``MALFORMED_REQUEST`` when the body did not arrive whole (a
broken chunked encoding, or fewer bytes than ``Content-Length`` said: RFC 9112
sections 6.3 and 7.1), ``INVALID_JSON`` when the bytes do not parse or nest deeper
than the configured depth.

Parsing costs at most linear time and bounded recursion: nesting is measured on the
bytes before the (recursive) decoder sees them, and a number token of over 32
characters is never converted (``int()`` refuses over 4,300 digits; a ``Decimal``
keeps every one) but kept as an ``OverlongNumber``, which validation reports at
its field.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from werkzeug.datastructures import MultiDict
from werkzeug.http import parse_options_header

from ..errors import (
    InvalidJson,
    MalformedRequest,
    PayloadTooLarge,
    RequestTimeout,
    UnsupportedMediaType,
    ValidationError,
)
from .negotiation import API_VERSIONS, VENDOR

if TYPE_CHECKING:
    from wsgiref.types import WSGIEnvironment

MAX_NUMBER_CHARS = 32
FORM = "application/x-www-form-urlencoded"


class OverlongNumber:
    """A JSON number token of over ``MAX_NUMBER_CHARS`` characters, left unread:
    written back as its text (``web/wsgi.py``), as the lab's echo shows a body."""

    __slots__ = ("token",)

    def __init__(self, token: str) -> None:
        self.token = token

    @property
    def length(self) -> int:
        return len(self.token)

    def __repr__(self) -> str:
        return f"OverlongNumber(length={self.length})"


def _number(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    """A decoder hook that converts a number token, unless it is over-long."""

    def parse(token: str) -> Any:
        if len(token) > MAX_NUMBER_CHARS:
            return OverlongNumber(token)
        try:
            return convert(token)
        except InvalidOperation:
            # An exponent past what Decimal holds (1e-99999999999999999999): the
            # decoder's ValueError, so INVALID_JSON, not a 500 (RFC 8259 section 9
            # lets a parser limit the range of numbers).
            raise ValueError(f"the number {token} is out of range") from None

    return parse


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


# Numbers with a fraction or exponent become Decimal: amounts stay exact.
_decoder = json.JSONDecoder(
    parse_float=_number(Decimal),
    parse_int=_number(int),
    parse_constant=_reject_constant,
)

# For measuring nesting: string contents (escapes first, so an escaped quote does
# not end a string), then every byte that is not a bracket, then brackets as parens.
_ESCAPED = (b"\\\\", b'\\"')
_STRING = re.compile(rb'"[^"]*"')
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))
_AS_PARENS = bytes.maketrans(b"[]{}", b"()()")
# A surrogate can only come from a \uD800-\uDFFF escape: bytes.decode refuses them.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


# A pure function of the depth (a configured number: one or two a process), so
# instances with the same limit share the compiled pattern and others never meet.
@functools.cache
def _nested_within(limit: int) -> re.Pattern[bytes]:
    """Parens nested at most ``limit`` deep; a group may still be open at the end."""
    group = b""
    for _ in range(limit):
        # Possessive (*+): a repeat never gives back what it matched, so matching
        # is linear and stops at the first opener one level past the limit.
        group = rb"(?:\(" + group + rb"(?:\)|\Z))*+"
    return re.compile(group)


def _too_deep(raw: bytes, limit: int) -> bool:
    """Does ``raw`` nest arrays and objects deeper than ``limit``?

    Hand-written because the standard decoder recurses once a level and offers no
    limit. Every step runs in C over the bytes: the strings are cut out, the
    brackets kept as parens, and one regular expression (``limit`` groups deep)
    matches them. It stops early at an opener past the limit, or at a stray closer
    (broken JSON, which the decoder reports before it goes any deeper).
    """
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False
    for escape in _ESCAPED:
        raw = raw.replace(escape, b"")
    brackets = _STRING.sub(b"", raw).translate(_AS_PARENS, _NOT_BRACKETS)
    matched = _nested_within(limit).match(brackets)  # it matches at least b""
    end = matched.end() if matched else 0
    return brackets[end : end + 1] == b"("


def _has_lone_surrogate(value: Any) -> bool:
    """Does any string or key hold a surrogate code point (a half of a pair)?"""
    stack = [value]  # a loop, not recursion: nesting depth never costs the stack
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")  # UTF-8 cannot encode a surrogate
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def parse_json(raw: bytes, max_depth: int) -> Any:
    """Parse a UTF-8 JSON text nested at most ``max_depth`` deep, or raise 400."""
    if _too_deep(raw, max_depth):
        raise InvalidJson(
            f"The request body nests deeper than {max_depth} levels.",
            details={"maxDepth": max_depth},
        )
    try:
        value = _decoder.decode(raw.decode("utf-8"))
    except ValueError as exc:  # UnicodeDecodeError is one too
        raise InvalidJson(details={"reason": str(exc)[:200]}) from None
    if _SURROGATE_ESCAPE.search(raw) and _has_lone_surrogate(value):
        raise InvalidJson(details={"reason": "a string holds an unpaired surrogate"})
    return value


def _read_whole(environ: WSGIEnvironment, declared: int | None, limit: int) -> bytes:
    """The body's bytes, all of them, or ``MALFORMED_REQUEST``."""
    stream = environ["wsgi.input"]
    if declared == 0 or (declared is None and not environ.get("wsgi.input_terminated")):
        return b""  # PEP 3333: without a length, there is no body to read
    try:
        # Chunked, no Content-Length: one byte past the limit shows an excess.
        raw = stream.read(declared if declared is not None else limit + 1)
    except TimeoutError:  # the server's deadline for the request (serving/gunicorn.py)
        raise RequestTimeout() from None
    except Exception as exc:
        # PEP 3333 names no error for a body that cannot be read; the server's
        # reader raises its own (gunicorn: InvalidChunkSize, ChunkMissingTerminator,
        # NoMoreData...), and what it means here is that the framing is broken.
        raise MalformedRequest(details={"reason": str(exc)[:200]}) from None
    if declared is not None and len(raw) < declared:
        # The client stopped sending early: a short read is a broken request.
        raise MalformedRequest(
            details={"reason": f"{len(raw)} of {declared} bytes arrived"}
        )
    if len(raw) > limit:
        raise PayloadTooLarge(limit)
    return raw


def _read_typed(
    environ: WSGIEnvironment, limit: int, accepted: tuple[str, ...]
) -> bytes:
    """The body's bytes, at most ``limit``, in one of the ``accepted`` media types
    (UTF-8) and no content coding: 413, then 415, then ``MALFORMED_REQUEST``."""
    length = environ.get("CONTENT_LENGTH") or ""
    declared = int(length) if length.isascii() and length.isdigit() else None
    if declared is not None and declared > limit:
        # Refused from the header alone: the body is never read.
        raise PayloadTooLarge(limit)
    if not _acceptable(environ.get("CONTENT_TYPE"), accepted):
        raise UnsupportedMediaType(accepted)
    coding = environ.get("HTTP_CONTENT_ENCODING")
    if coding is not None and coding.strip().lower() not in ("", "identity"):
        # A gzipped body would be read as broken JSON: refused as what it is.
        raise UnsupportedMediaType(accepted, coding)
    return _read_whole(environ, declared, limit)


# A pure function of the header and the route's types, which are few; a client's
# every new header costs what it always did. PERF: 3,000 instructions a body, make
# bench-layers
@functools.lru_cache(maxsize=256)
def _acceptable(content_type: str | None, accepted: tuple[str, ...]) -> bool:
    """Whether a body of ``content_type`` is one of the ``accepted`` media types, in
    UTF-8; a body in the vendor type may name its version, one that is served (as
    in Accept, where another is 406)."""
    media_type, params = parse_options_header(content_type)
    media_type = media_type.lower()
    charset = (params.get("charset") or "utf-8").lower()
    version = params.get("version") if media_type == VENDOR else None
    served = version is None or version in API_VERSIONS
    return media_type in accepted and charset == "utf-8" and served


def read_bytes(environ: WSGIEnvironment, limit: int) -> bytes:
    """The body's bytes as sent, whatever its type, at most ``limit``: 413, then
    ``MALFORMED_REQUEST`` (the lab's echo, docs/lab.md)."""
    length = environ.get("CONTENT_LENGTH") or ""
    declared = int(length) if length.isascii() and length.isdigit() else None
    if declared is not None and declared > limit:
        raise PayloadTooLarge(limit)  # refused from the header, never read
    return _read_whole(environ, declared, limit)


def read_json(
    environ: WSGIEnvironment, accepted: tuple[str, ...], limit: int, max_depth: int
) -> Any:
    """Read and parse a JSON body of at most ``limit`` bytes: 413, then 415, then
    400, in that order."""
    raw = _read_typed(environ, limit, accepted)
    return parse_json(raw, max_depth)


def read_form(
    environ: WSGIEnvironment, limit: int, max_fields: int
) -> MultiDict[str, str]:
    """Read an HTML form body (``application/x-www-form-urlencoded``, the body of an
    OAuth token request) of at most ``limit`` bytes and ``max_fields`` parameters:
    413, then 415, then ``MALFORMED_REQUEST``, then ``VALIDATION_ERROR``.

    Bytes that are not UTF-8 become U+FFFD, as in the query string, so a value
    never fails to decode: it only fails to match.
    """
    raw = _read_typed(environ, limit, (FORM,))
    try:
        return parse_form(raw, max_fields)
    except ValueError:
        message = f"must have at most {max_fields} parameters"
        raise ValidationError.one("", message) from None


def parse_form(raw: bytes, max_fields: int) -> MultiDict[str, str]:
    """An ``application/x-www-form-urlencoded`` body's fields, bytes that are not
    UTF-8 read as U+FFFD; ``ValueError`` past ``max_fields``."""
    # parse_qsl counts the separators before it splits: ``a=&a=&...`` to the limit
    # costs a count, not 16,000 pairs (docs/benchmarks.md).
    pairs = parse_qsl(
        raw.decode("utf-8", "replace"), keep_blank_values=True, errors="replace",
        max_num_fields=max_fields,
    )  # fmt: skip
    return MultiDict(pairs)
