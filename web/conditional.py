"""Conditional requests (RFC 9110 section 13) with strong entity tags.

Every ``200`` answer to a GET carries ``ETag``: a hash of the exact bytes sent, so it
is strong (byte-for-byte) and differs between JSON, XML and CSV of one record.

- ``If-None-Match`` on GET/HEAD: when a listed tag (weak comparison) or ``*`` matches,
  the answer is ``304 Not Modified`` with the ``ETag`` and no body; the client reuses
  its copy.
- ``If-Match`` on PATCH/DELETE: unless a listed tag (strong comparison) or ``*``
  matches the current JSON representation, the write is refused with
  ``412 PRECONDITION_FAILED``. The check runs inside the write's transaction, so two
  clients holding the same tag cannot both win ("lost update" prevention).
"""

from __future__ import annotations

import hashlib

from ..errors import PreconditionFailed
from ..storage.base import Check, Record
from .wsgi import Request, Response, json_bytes


def etag_of(body: bytes) -> str:
    return '"' + hashlib.blake2b(body, digest_size=12).hexdigest() + '"'


def _tags(header: str) -> list[str]:
    return [tag.strip() for tag in header.split(",") if tag.strip()]


def not_modified(if_none_match: str | None, response: Response) -> Response:
    """Tag a GET response, and turn it into 304 when the client's copy is current."""
    etag = etag_of(response.body)
    response.headers.append(("ETag", etag))
    if if_none_match is None:
        return response
    tags = _tags(if_none_match)
    if "*" in tags or etag in (tag.removeprefix("W/") for tag in tags):
        kept = [(k, v) for k, v in response.headers if k not in ("Content-Type",)]
        return Response(b"", 304, kept)
    return response


def if_match(request: Request) -> Check:
    """A check for the store's write transaction enforcing ``If-Match``."""
    header = request.headers.get("If-Match")

    def check(current: Record) -> None:
        if header is None:
            return
        tags = _tags(header)
        if "*" not in tags and etag_of(json_bytes(current)) not in tags:
            raise PreconditionFailed(details={"etag": etag_of(json_bytes(current))})

    return check
