"""Content negotiation (RFC 9110 section 12.5.1) and the API version in ``Accept``.

A client lists the media types it takes, each with a weight ``q`` from 0 to 1
(default 1); ``q=0`` means "not acceptable" (section 12.4.2). A range is a type
(``application/json``), a wildcard subtype (``text/*``) or ``*/*``; a request
without ``Accept`` takes anything. For each type an endpoint offers, the most
specific range that matches it gives its weight, and the offer of the highest
weight wins (ties: the more specific range, then our order, JSON first). When no
offer has a weight above 0 the answer is ``406 NOT_ACCEPTABLE``.

Types match case-insensitively and parameters do not stop a match
(``application/json; charset=utf-8`` asks for JSON), except the vendor type's
``version``: ``application/vnd.refapi+json;version=1`` is version 1 of this API (the
vendor type without a version is the current one), answered with that type. On a
versioned endpoint (``/v1/...``), a request whose every acceptable vendor type
names a version this server does not serve is ``406``, even for a bodiless answer;
an empty one (``version=``, or ``version`` with no value) is such a version.
An endpoint without a version reads the vendor type as ``application/json``,
whatever its version. Errors are always ``application/json``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from werkzeug.http import parse_accept_header, parse_options_header

from ..errors import NotAcceptable, quoted

JSON = "application/json"
XML = "application/xml"
CSV = "text/csv"
HTML = "text/html"  # the front page's, for a browser
VENDOR = "application/vnd.refapi+json"  # the one spelling of the vendor type
API_VERSIONS = ("1",)  # the versions served; each route's path names one (/v1/...)


def vendor_type(version: str) -> str:
    return f"{VENDOR};version={version}"


def content_type(media_type: str) -> str:
    """The ``Content-Type`` a negotiated media type is sent with."""
    if media_type.startswith(VENDOR):
        return media_type
    return f"{media_type}; charset=utf-8"


@dataclass(frozen=True)
class MediaRange:
    type: str  # lower case: "type/subtype", "type/*" or "*/*"
    version: str | None  # the vendor type's version parameter, when given
    q: float


ANYTHING = (MediaRange("*/*", None, 1.0),)
# A version parameter with no value: Werkzeug drops it, which would read as the
# vendor type without a version (the current one); written ``version=""``, it is
# kept, as the empty version no server serves.
_EMPTY_VERSION = re.compile(r";\s*version\s*=?\s*(?=[;,]|$)", re.IGNORECASE)


# Pure functions of their arguments, so every instance may share them; clients send a
# handful of distinct headers.
@functools.lru_cache(maxsize=256)
def media_ranges(accept: str) -> tuple[MediaRange, ...]:
    """The ranges of an ``Accept`` header, highest weight first."""
    if not accept.strip():
        return ANYTHING
    if "version" in accept.lower():
        accept = _EMPTY_VERSION.sub(';version=""', accept)
    ranges = []
    # Werkzeug parses the list, the parameters and q (dropping invalid q values)
    # and sorts by weight. Its MIMEAccept.best_match is not used: it lets a
    # parameter stop a match (``application/json; charset=utf-8`` would miss JSON).
    for value, q in parse_accept_header(accept):
        media_type, params = parse_options_header(value)
        media_type = media_type.lower()
        version = params.get("version") if media_type == VENDOR else None
        ranges.append(MediaRange(media_type, version, q))
    return tuple(ranges)


def vendor_version(accept: str) -> str | None:
    """The served version a request asks for by the vendor type, the current one if
    it asks only for others (so that the answer is 406), None if it does not ask."""
    if VENDOR not in accept.lower():
        return None  # the common case, without parsing
    asked = [r.version for r in media_ranges(accept) if r.type == VENDOR and r.q > 0]
    if not asked:
        return None
    served = [v or API_VERSIONS[-1] for v in asked if v in (None, *API_VERSIONS)]
    return served[0] if served else API_VERSIONS[-1]


@functools.lru_cache(maxsize=256)  # a handful of headers times a few offer lists
def negotiate(accept: str, offers: tuple[str, ...], version: str | None) -> str | None:
    """The offer that best satisfies ``accept`` (None when nothing is offered, as for
    a bodiless answer); 406 when none does, or when the API version is not served.
    """
    ranges = media_ranges(accept)
    if version is None:
        # Without a version, the vendor type is plain JSON whatever its version.
        ranges = tuple(
            MediaRange(JSON, None, r.q) if r.type == VENDOR else r for r in ranges
        )
    else:
        _check_version(ranges, version)
    if not offers:
        return None
    acceptable = [
        (*weight, -index, offer)
        for index, offer in enumerate(offers)
        if (weight := _weight(ranges, offer)) and weight[0] > 0
    ]
    if not acceptable:
        raise NotAcceptable(details={"available": list(offers)})
    return max(acceptable)[-1]  # highest q, then most specific, then first offered


def _check_version(ranges: tuple[MediaRange, ...], version: str) -> None:
    asked = [r.version for r in ranges if r.type == VENDOR and r.q > 0]
    if asked and all(v is not None and v != version for v in asked):
        raise NotAcceptable(
            f"API version {quoted(repr(asked[0]))} is not served.",
            details={"versions": [version]},
        )


def _weight(ranges: tuple[MediaRange, ...], offer: str) -> tuple[float, int] | None:
    """(q, specificity) of the most specific range matching ``offer``."""
    offer_type, _, offer_version = offer.partition(";version=")
    best: tuple[float, int] | None = None
    for r in ranges:
        if r.type == offer_type:
            if r.version is not None and r.version != offer_version:
                continue  # another version of the vendor type
            specificity = 3 if r.version is not None else 2
        elif r.type == "*/*":
            specificity = 0
        elif r.type.endswith("/*") and offer_type.startswith(r.type[:-1]):
            specificity = 1
        else:
            continue
        # Ranges come highest q first: among equally specific ones, the first counts.
        if best is None or specificity > best[1]:
            best = (r.q, specificity)
    return best
