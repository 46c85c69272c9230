"""What the lab's rows take: each parameter with its bounds, as the lab's OpenAPI
document gives them and the handlers read them (lab/routes.py's table uses them).

Each schema is the rule its handler holds to, written once: a pattern or an enum
the handler matches too, so the document and the handler admit the same
requests (docs/lab.md, "Conventions"). Where nothing in the app bounds a value,
``x-bounded-by`` names what does (the request line gunicorn takes), for the
linters (tools/contract/.spectral.yaml).
"""

from __future__ import annotations

from ..router.route import Param
from . import (
    bodies,
    caching,
    cookies,
    digest,
    handlers,
    redirects,
    response_headers,
    slow,
)
from .handlers import BY_REQUEST_LINE

CODES = Param("codes", "string", "path", True, handlers.CODE_SCHEMA)
# Its bounds are the configuration's: the document reads them (openapi/).
SECONDS = Param("seconds", "number", "path", True, {
    "type": "number", "minimum": 0,
    "description": "Seconds to wait: more than REFAPI_LAB_MAX_DELAY wait that many "
    "(clamped, as httpbin's)."})  # fmt: skip
COUNT = Param(
    "n",
    "integer",
    "path",
    True,
    {
        "type": "integer",
        "format": "int32",
        "minimum": 1,
        "maximum": redirects.MAX_REDIRECTS,
    },
)
URL = {
    "type": "string",
    "maxLength": redirects.URL_MAX,
    "pattern": redirects.URL_PATTERN,
    "description": "Where to: relative to this URL, a path from the lab's root, "
    "or an http(s) URL of this host or one of REFAPI_LAB_REDIRECT_HOSTS.",
}
REDIRECT_STATUS = {
    "type": "integer",
    "format": "int32",
    "minimum": min(redirects.STATUSES),
    "maximum": max(redirects.STATUSES),
    "enum": sorted(redirects.STATUSES),
}
ABSOLUTE = Param("absolute", "string", schema={
    "type": "string", "enum": ["true", "false"],
    "description": "true: the chain's Locations are URLs."})  # fmt: skip
# The lab's own challenge's user and password: any one path segment.
# The password is a credential: the request's log line writes it [redacted].
USER, PASSWD = (Param(name, "string", "path", True,
                      {"type": "string", "pattern": "^[^/]+$",
                       "x-bounded-by": BY_REQUEST_LINE}, secret=secret)
                for name, secret in (("user", False), ("passwd", True)))  # fmt: skip
# httpbin's Digest challenge's (docs/lab.md, "Digest authentication").
QOP = Param("qop", "string", "path", True, {
    "type": "string", "enum": list(digest.QOPS),
    "description": "The qop the challenge offers: auth, auth-int (the body "
    "hashed too), or both."})  # fmt: skip
ALGORITHM = Param("algorithm", "string", "path", True, {
    "type": "string", "enum": list(digest.ALGORITHMS),
    "description": "The challenge's algorithm (MD5 where the path names "
    "none)."})  # fmt: skip
STALE_AFTER = Param("stale_after", "string", "path", True, {
    "type": "string", "maxLength": len(digest.NEVER),  # the longest it takes
    "pattern": digest.STALE_AFTER_PATTERN,
    "description": "How many requests a nonce serves (its nc) before it is "
    f"stale: an integer from 1 to {digest.MAX_STALE_AFTER}, or never (as where "
    "the path names none)."})  # fmt: skip
# Any path below /lab/anything/, slashes included, as httpbin's.
REST = Param("path", "string", "path", True,
             {"type": "string", "pattern": "^[\\s\\S]+$",
              "x-bounded-by": BY_REQUEST_LINE,
              "description": "Any path below /lab/anything/, slashes included."},
             rest=True)  # fmt: skip


# A query of any names, each a cookie (docs/lab.md, "Cookies") or a header field:
# OpenAPI's form style, exploded, writes an object's members so.
SET_COOKIES, DELETE_COOKIES, FIELDS = (
    Param(name, "object", schema=schema)
    for name, schema in (("cookies", cookies.SET_SCHEMA),
                         ("cookies", cookies.DELETE_SCHEMA),
                         ("fields", response_headers.FIELDS_SCHEMA))
)  # fmt: skip


# The bodies' and caches' types and parameters (docs/lab.md, "Bodies", "Ranges",
# "Caching"). An integer of the path is one the router reads, up to an id's bound;
# a count past what the lab makes is clamped to it, as httpbin's.
PLAIN, OCTETS = "text/plain", bodies.OCTETS
MOST = 2**63 - 1
SEED = Param("seed", "integer")  # what repeats a draw: statuses, bytes, streams


def _count(name: str, least: int, said: str) -> Param:
    """An integer of the path from ``least``, any larger one taken."""
    return Param(name, "integer", "path", True,
                 {"type": "integer", "format": "int64", "minimum": least,
                  "maximum": MOST, "description": said})  # fmt: skip


BYTES = _count("n", 0, "Bytes asked: more than REFAPI_LAB_MAX_BYTES get that many.")
RANGE_SIZE = _count(
    "n", 1, "Bytes of the body: more than REFAPI_LAB_MAX_BYTES get that many."
)
LINKS = _count("n", 1, f"Links asked: more than {bodies.MAX_LINKS} get that many.")
OFFSET = _count("offset", 0, "The link shown as the current page: its number alone.")
MAX_AGE = _count("n", 0, "Seconds any cache may keep the answer (max-age).")
VALUE = Param("value", "string", "path", True,
              {"type": "string", "minLength": 2, "maxLength": bodies.BASE64_MAX,
               "pattern": bodies.BASE64_PATTERN,
               "description": "URL-safe base64 (RFC 4648 section 5), padded or "
               "not."})  # fmt: skip
ETAG = Param("etag", "string", "path", True,
             {"type": "string", "maxLength": caching.ETAG_MAX,
              "pattern": caching.ETAG_PATTERN,
              "description": "The entity tag the answer has, unquoted."})  # fmt: skip
# /lab/etag/{etag}'s ETag is the path's, quoted: any of etagc, not the router's hash.
ANY_ETAG = {"type": "string", "pattern": '^"' + caching.ETAG_PATTERN[1:-1] + '"$'}

# The streams, the drip and the events (docs/lab.md, "Streams").
_CLAMPED = "more than {} get that many, as httpbin's"
LINES = Param("n", "integer", "path", True, {  # 0: no line, as httpbin's
    "type": "integer", "format": "int64", "minimum": 0, "maximum": MOST,
    "description": "Lines asked: " + _CLAMPED.format(slow.MAX_ITEMS)})  # fmt: skip


def _seconds(name: str, said: str) -> Param:
    return Param(name, "number", schema={
        "type": "number", "minimum": 0,
        "description": said + " (all the waits together at most "
        "REFAPI_LAB_MAX_DELAY: clamped)."})  # fmt: skip


def _integer(name: str, said: str) -> Param:
    return Param(name, "integer", schema={
        "type": "integer", "format": "int64", "minimum": 1, "maximum": MOST,
        "description": said})  # fmt: skip


CHUNK_SIZE = _integer(
    "chunk_size",
    f"Bytes a chunk; {slow.STREAM_CHUNK} unless said; more when n "
    f"bytes would take more than {slow.MAX_STEPS} chunks.",
)
DRIP = (
    _seconds("duration", "Seconds the bytes are spread over; 2 unless said"),
    _integer("numbytes", "Asterisks to send; 10 unless said; "
             + _CLAMPED.format("REFAPI_LAB_MAX_BYTES")),
    Param("code", "integer", schema={
        "type": "integer", "format": "int32", "enum": list(slow.DRIP_CODES),
        "minimum": min(slow.DRIP_CODES), "maximum": max(slow.DRIP_CODES),
        "description": "The status to answer; 200 unless said."}),
    _seconds("delay", "Seconds before the first byte; 0 unless said"),
)  # fmt: skip
EVENTS = (
    _integer("count", "Events to send; 10 unless said; "
             + _CLAMPED.format(slow.MAX_ITEMS)),
    _seconds("delay", "Seconds between two events; 1 unless said"),
    Param("Last-Event-ID", "string", "header", schema={
        "type": "string", "pattern": "^[0-9]*$",
        "x-bounded-by": "the header field: gunicorn's limit_request_field_size, 431",
        "description": "The id of the last event had: the events after it are "
        "sent (an EventSource sends it when it reconnects)."}),
)  # fmt: skip
