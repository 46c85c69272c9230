"""httpbin's caching: answers a cache may keep, and validators to ask about them.

Each answers ``/lab/get``'s members (the query, the headers, the client, the URL),
with what a cache reads (RFC 9111) and what a conditional request compares (RFC
9110 section 13):

- ``/lab/cache`` sends ``Last-Modified`` and ``ETag``, and takes any conditional
  request, ``If-Modified-Since`` or ``If-None-Match`` of any value, as one whose
  copy is current: ``304`` with those validators and no body, as httpbin's does.
- ``/lab/cache/{n}`` sends ``Cache-Control: public, max-age=n``: any cache may keep
  it for ``n`` seconds.
- ``/lab/etag/{etag}`` has the entity tag the path names: ``If-Match`` that does
  not list it (strong comparison) is ``412``, then ``If-None-Match`` that does
  (weak comparison) is ``304``, in RFC 9110's order (section 13.2.2).

Their answers are not ``no-store``, unlike the other reflections': being kept is
what they are for, and what they show of a credential is ``[redacted]``
(docs/lab.md, "Caching"). The router gives every ``200`` its ``ETag`` and answers
a matching ``If-None-Match`` with ``304`` (web/conditional.py), here as anywhere.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from werkzeug.http import http_date, parse_etags, quote_etag

from ..errors import PreconditionFailed, ValidationError
from ..web import Request, Response, json_response
from ..web.conditional import not_modified
from .reflect import get_members

# An entity tag's characters (RFC 9110 section 8.8.3, etagc) but obs-text and "/",
# which would end the path's segment; the document's pattern (lab/routes.py).
ETAG_MAX = 256
ETAG_PATTERN = r"^[!#-.0-~]+$"
_ETAG = re.compile(ETAG_PATTERN)


def answer_cache(request: Request, clock: Callable[[], float]) -> Response:
    """``/lab/cache``: ``304`` to any conditional request, else the reflection with
    ``Last-Modified`` (now) and the router's ``ETag``."""
    answer = json_response(
        get_members(request), headers=[("Last-Modified", http_date(clock()))]
    )
    headers = request.headers
    if not (headers.get("If-Modified-Since") or headers.get("If-None-Match")):
        return answer
    # Any condition is taken as met, as httpbin's: "*" matches every entity tag.
    # The 304 keeps the validators a 200 would have had (RFC 9110 section 15.4.5).
    return not_modified("*", answer)


def answer_cache_for(request: Request, n: int) -> Response:
    """``/lab/cache/{n}``: the reflection, fresh for ``n`` seconds in any cache."""
    return json_response(
        get_members(request), headers=[("Cache-Control", f"public, max-age={n}")]
    )


def answer_etag(request: Request, etag: str) -> Response:
    """``/lab/etag/{etag}``: the reflection, its entity tag the path's."""
    if len(etag) > ETAG_MAX or not _ETAG.fullmatch(etag):
        raise ValidationError.one(
            "etag",
            f'must be 1 to {ETAG_MAX} visible ASCII characters, but " and /',
        )
    if_match = request.headers.get("If-Match")
    if if_match is not None and not parse_etags(if_match).contains(etag):
        raise PreconditionFailed(details={"etag": quote_etag(etag)})
    answer = json_response(get_members(request))
    answer.etag = etag  # the router sends it, and answers If-None-Match
    return answer
