"""httpbin's ``/lab/response-headers``: the header fields the query names, sent.

``GET`` or ``POST /lab/response-headers?Name=value...`` answers ``200`` with each
pair as a response header field and, as httpbin's body, the fields asked for by
name (a list where one is repeated) with the answer's ``Content-Type``. The client
chooses what the answer says, so what a page could be made to do is bounded
(docs/lab.md, "Response headers"):

- ``Content-Type`` is one of ``CONTENT_TYPES`` (never markup: a page of a script's
  choosing would run as this origin's, psf/httpbin's CVE-2025-45286);
- the fields that frame the message or hold the connection, that would make a
  browser act for this origin, or that another layer or the server writes
  (``REFUSED``, ``REFUSED_PREFIXES``) are refused;
- ``Set-Cookie`` is held to the lab's cookie rules (``cookies.cookie_header``);
- a name is a token and a value visible ASCII, so nothing can split the header;
  ``Content-Type`` and ``Set-Cookie`` are read only so written.

The rules are ``FIELDS_SCHEMA``, which the lab's document gives, and its patterns,
which the handler matches: both admit the same requests. Each refusal is ``400
VALIDATION_ERROR`` on the field's name.
"""

from __future__ import annotations

import re

from ..errors import ValidationError
from ..web import Request, Response, json_response
from . import cookies
from .cookies import TOKEN, any_case
from .handlers import BY_REQUEST_LINE

# JSON first: the default, and the document's first.
CONTENT_TYPES = ("application/json", "text/plain; charset=utf-8",
                 "application/octet-stream")  # fmt: skip
# Hop-by-hop (RFC 9110 section 7.6.1) and framing (section 6.4, and
# Content-Encoding: a client would decode the body by it); a browser's levers on
# the origin, among them what it keeps for the origin past this answer (where
# later requests are reported, where later connections go, what later requests
# must carry, a worker's reach); what the service's layers or the server write
# themselves.
REFUSED = (
    "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "te",
    "trailer", "transfer-encoding", "upgrade", "content-length", "content-encoding",
    "refresh", "clear-site-data", "strict-transport-security",
    "content-security-policy", "content-security-policy-report-only",
    "nel", "report-to", "reporting-endpoints", "alt-svc", "accept-ch",
    "critical-ch", "service-worker-allowed", "origin-trial", "speculation-rules",
    "set-login",
    "x-content-type-options", "x-request-id", "etag", "date", "server",
)  # fmt: skip
REFUSED_PREFIXES = ("access-control-", "ratelimit")
READ = ("Content-Type", "Set-Cookie")  # so written, and no other way
_REFUSED = "|".join(map(any_case, (*REFUSED, *(name.lower() for name in READ))))
_PREFIXES = "|".join(map(any_case, REFUSED_PREFIXES))
NAME_PATTERN = (
    f"^(?:{'|'.join(READ)}|(?!(?:{_REFUSED})$)(?!{_PREFIXES}){TOKEN}+)$"
)  # fmt: skip
VALUE_PATTERN = r"^[\x20-\x7e]*$"  # RFC 9110 section 5.5, ASCII only
_NAME_RE, _VALUE_RE = re.compile(NAME_PATTERN), re.compile(VALUE_PATTERN)
FIELDS_SCHEMA = {
    "type": "object",
    "description": "Each a header field to send, name=value.",
    "propertyNames": {"pattern": NAME_PATTERN},
    "properties": {
        "Content-Type": {"type": "string", "enum": list(CONTENT_TYPES)},
        "Set-Cookie": {"type": "string", "pattern": cookies.SET_COOKIE_PATTERN,
                       "x-bounded-by": BY_REQUEST_LINE},
    },
    "additionalProperties": {"type": "string", "pattern": VALUE_PATTERN,
                             "x-bounded-by": BY_REQUEST_LINE},
}  # fmt: skip


def response_headers(request: Request) -> Response:
    content_type = "application/json"
    headers: list[tuple[str, str]] = []
    cookies_set = 0
    for name, value in request.args.items(multi=True):
        _allowed(name, value)
        if name == "Content-Type":
            content_type = value
        elif name == "Set-Cookie":
            headers.append((name, cookies.cookie_header(request, value, name)))
            cookies_set += 1
            if cookies_set > cookies.MAX_NAMES:
                raise ValidationError.one(  # as /lab/cookies/set holds them
                    name, f"must be at most {cookies.MAX_NAMES} cookies a request"
                )
        else:
            headers.append((name, value))
    shown: dict[str, str | list[str]] = {"Content-Type": content_type}
    for name, value in headers:
        before = shown.get(name)
        shown[name] = value if before is None else [*_listed(before), value]
    answer = json_response(shown, headers=headers)
    answer.headers[0] = ("Content-Type", content_type)
    return answer


def _allowed(name: str, value: str) -> None:
    if not _NAME_RE.fullmatch(name):
        raise ValidationError.one(
            name, "must be a token (RFC 9110 section 5.6.2) and a field the lab lets "
            "you set: not one that frames the message, holds the connection, moves "
            "a browser, or that the service writes; Content-Type and Set-Cookie "
            "written so"
        )  # fmt: skip
    if name == "Content-Type" and value not in CONTENT_TYPES:
        raise ValidationError.one(name, "must be one of " + ", ".join(CONTENT_TYPES))
    if not _VALUE_RE.fullmatch(value):
        raise ValidationError.one(name, "must be visible ASCII, spaces included")


def _listed(value: str | list[str]) -> list[str]:
    return value if isinstance(value, list) else [value]
