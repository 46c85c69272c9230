"""Conditional requests (RFC 9110 section 13) with strong entity tags.

Every ``200`` answer to a GET carries ``ETag``: a hash of its ``Content-Type`` and
its exact bytes, so it is strong (byte-for-byte) and names one representation
(section 8.8.1): JSON, the vendor type, XML and CSV of one record each have their
own, even where two of them are the same bytes.

- ``If-None-Match`` on GET/HEAD: when a listed tag (weak comparison) or ``*`` matches
  the representation the request would get, the answer is ``304 Not Modified`` with
  the ``ETag`` and no body; the client reuses its copy.
- ``If-Match`` on a GET/HEAD of a record or a page: unless a listed tag (strong
  comparison) or ``*`` matches the representation the request would get, ``412
  PRECONDITION_FAILED`` (section 13.1.1), before ``If-None-Match`` is read.
- ``If-Match`` on PATCH/DELETE: unless a listed tag (strong comparison) or ``*``
  matches the current JSON document, as ``application/json`` or as the vendor type
  (a client may have read it as either), the write is refused with
  ``412 PRECONDITION_FAILED``. The check runs inside the write's transaction, so two
  clients holding the same tag cannot both win ("lost update" prevention).
- ``If-None-Match`` on PATCH/DELETE: when a listed tag (weak comparison) or ``*``
  matches, the write is refused with ``412`` too (section 13.1.2): ``*`` says
  "only if it does not exist", which an article being changed does.
"""

from __future__ import annotations

import hashlib

from werkzeug.http import parse_etags, quote_etag

from ..errors import PreconditionFailed
from ..storage.base import Check, Record
from .negotiation import API_VERSIONS, JSON, content_type, vendor_type
from .wsgi import Request, Response, json_bytes

# The Content-Types the JSON document of a record is sent as.
_JSON_TYPES = tuple(content_type(t) for t in (JSON, *map(vendor_type, API_VERSIONS)))


# What every entity tag the service makes looks like, quoted (``etag_of``): for
# the OpenAPI document's ETag header. (The lab's /lab/etag/{etag} sends the one
# its path names, which its row and the error object's details.etag describe.)
ETAG_SCHEMA = {"type": "string", "maxLength": 26, "pattern": '^"[0-9a-f]{24}"$'}


def etag_of(body: bytes, sent_as: str) -> str:
    """The entity tag (unquoted) of ``body`` sent with ``Content-Type: sent_as``:
    the hash of the type, a newline and the body, the first two hashed once a type.
    PERF: 1,900 instructions an answer, make bench-instructions"""
    digest = (_SEEDED.get(sent_as) or _seeded(sent_as)).copy()
    digest.update(body)
    return digest.hexdigest()


# Each Content-Type's hash so far; the lab sends any type its caller names.
_SEEDED: dict[str, hashlib.blake2b] = {}
_SEEDED_TYPES = 64


def _seeded(sent_as: str) -> hashlib.blake2b:
    """The hash of ``sent_as`` and a newline, kept for the next body of the type."""
    if len(_SEEDED) >= _SEEDED_TYPES:  # a type the lab was asked to send
        _SEEDED.clear()
    seeded = _SEEDED[sent_as] = hashlib.blake2b(
        sent_as.encode() + b"\n", digest_size=12
    )
    return seeded


def tag(response: Response) -> str:
    """Give a response its ``ETag`` (the tag its handler knew, a static file's,
    made once: ``web/static.py``, else its body's) and return the tag."""
    etag = response.etag
    if etag is None:
        etag = etag_of(response.body, response.header("Content-Type") or "")
        # Hex digits: nothing to escape (PERF: 600 instructions a GET, make
        # bench-instructions)
        response.headers.append(("ETag", f'"{etag}"'))
    else:
        response.headers.append(("ETag", quote_etag(etag)))
    return etag


def not_modified(
    if_none_match: str | None, response: Response, if_match: str | None = None
) -> Response:
    """Tag a GET response; refuse it 412 unless ``if_match`` (when given) names
    its tag or ``*`` (strong comparison, before ``If-None-Match``: RFC 9110
    section 13.2.2); turn it into 304 when the client's copy is current."""
    etag = tag(response)
    if if_match is not None and not parse_etags(if_match).contains(etag):
        raise PreconditionFailed(details={"etag": quote_etag(etag)})
    if if_none_match is None or not parse_etags(if_none_match).contains_weak(etag):
        return response
    kept = [(k, v) for k, v in response.headers if k != "Content-Type"]
    return Response(b"", 304, kept)


def preconditions(request: Request) -> Check:
    """A check for the store's write transaction enforcing ``If-Match``, then
    ``If-None-Match``, in RFC 9110's order (section 13.2.2)."""
    if_match = request.headers.get("If-Match")
    if_none_match = request.headers.get("If-None-Match")

    def check(current: Record) -> None:
        if if_match is None and if_none_match is None:
            return
        body = json_bytes(current)
        tags = [etag_of(body, t) for t in _JSON_TYPES]
        # The tag of what this request would get, so the client can compare.
        own = quote_etag(etag_of(body, content_type(request.media_type or JSON)))
        if if_match is not None:
            listed = parse_etags(if_match)
            if not any(listed.contains(tag) for tag in tags):
                raise PreconditionFailed(details={"etag": own})
        if if_none_match is not None:
            listed = parse_etags(if_none_match)
            if any(listed.contains_weak(tag) for tag in tags):  # "*" too: it exists
                raise PreconditionFailed(
                    "If-None-Match matches the current representation.",
                    details={"etag": own},
                )

    return check
