"""The HTTP fields and statuses this service reads or sends, one line each: what it
means, and the section of the specification that defines it.

HTTP Semantics (RFC 9110) defines most of them, caching (RFC 9111) a few, and
other RFCs, W3C and WHATWG documents and IETF drafts the rest; a field that no
specification defines (``X-Request-Id``, a convention) names none. Two readers
share this table, so they cannot say two things: the OpenAPI document, whose
description of a standard response header starts with its line here
(``openapi/vocabulary.py``), and the explainer, which annotates every status and
field of an exchange with it (docs/explain.md, "Annotations"). What refapi does
with a field, beyond what it means, is said where the field is described for the
document, and in the guides.
"""

from __future__ import annotations

from typing import NamedTuple


class Entry(NamedTuple):
    meaning: str
    spec: str | None  # where it is defined; None for a convention


def _rfc(number: int, section: str = "") -> str:
    return f"RFC {number}" + (f" section {section}" if section else "")


SEMANTICS, CACHING, FETCH = 9110, 9111, "WHATWG Fetch, CORS protocol"
RATELIMIT = "draft-ietf-httpapi-ratelimit-headers-11"

# Field name (as usually written) -> what it means, where it is defined.
FIELDS: dict[str, Entry] = {
    "Accept": Entry("The media types the client takes, with preferences (q).", _rfc(SEMANTICS, "12.5.1")),
    "Accept-Encoding": Entry("The content codings the client takes.", _rfc(SEMANTICS, "12.5.3")),
    "Accept-Language": Entry("The natural languages the client prefers.", _rfc(SEMANTICS, "12.5.4")),
    "Accept-Ranges": Entry("The range units the resource takes in Range (bytes).", _rfc(SEMANTICS, "14.3")),
    "Access-Control-Allow-Headers": Entry("A preflight's answer: the request headers a script may send.", FETCH),
    "Access-Control-Allow-Methods": Entry("A preflight's answer: the methods a script may send.", FETCH),
    "Access-Control-Allow-Origin": Entry("Which origin's scripts may read the answer.", FETCH),
    "Access-Control-Expose-Headers": Entry("The response headers a cross-origin script may read.", FETCH),
    "Access-Control-Max-Age": Entry("How many seconds a browser may keep a preflight's answer.", FETCH),
    "Access-Control-Request-Headers": Entry("A preflight's question: the headers the script wants to send.", FETCH),
    "Access-Control-Request-Method": Entry("A preflight's question: the method the script wants to send.", FETCH),
    "Age": Entry("Seconds the answer has spent in caches.", _rfc(CACHING, "5.1")),
    "Allow": Entry("The methods the resource answers.", _rfc(SEMANTICS, "10.2.1")),
    "Authorization": Entry("The client's credentials.", _rfc(SEMANTICS, "11.6.2")),
    "Cache-Control": Entry("What caches may do with the message.", _rfc(CACHING, "5.2")),
    "Connection": Entry("Options of this connection only; close ends it after the answer.", _rfc(SEMANTICS, "7.6.1")),
    "Content-Disposition": Entry("Whether to show the body or save it, and under which name.", _rfc(6266, "4")),
    "Content-Encoding": Entry("The codings applied to the body (gzip...).", _rfc(SEMANTICS, "8.4")),
    "Content-Language": Entry("The natural language of the body.", _rfc(SEMANTICS, "8.5")),
    "Content-Length": Entry("The body's length in bytes.", _rfc(SEMANTICS, "8.6")),
    "Content-Location": Entry("A URL of this very representation.", _rfc(SEMANTICS, "8.7")),
    "Content-Range": Entry("Which bytes of the whole the body holds, and the whole's length.", _rfc(SEMANTICS, "14.4")),
    "Content-Security-Policy": Entry("What a page may load and run.", "W3C Content Security Policy Level 3"),
    "Content-Type": Entry("The body's media type.", _rfc(SEMANTICS, "8.3")),
    "Cookie": Entry("The cookies the client holds for this site.", _rfc(6265, "5.4")),
    "Date": Entry("When the message was made.", _rfc(SEMANTICS, "6.6.1")),
    "Deprecation": Entry("The resource is, or will be, deprecated.", _rfc(9745)),
    "ETag": Entry("An entity tag: a validator of this representation.", _rfc(SEMANTICS, "8.8.3")),
    "Expect": Entry("What the client expects first, e.g. 100-continue.", _rfc(SEMANTICS, "10.1.1")),
    "Expires": Entry("When the answer becomes stale.", _rfc(CACHING, "5.3")),
    "Forwarded": Entry("What proxies saw of the client.", _rfc(7239)),
    "Host": Entry("The host and port the request is for.", _rfc(SEMANTICS, "7.2")),
    "Idempotency-Key": Entry("Makes a retried POST count once.", "draft-ietf-httpapi-idempotency-key-header"),
    "If-Match": Entry("Act only if the current entity tag is one of these.", _rfc(SEMANTICS, "13.1.1")),
    "If-Modified-Since": Entry("Send the body only if changed since then.", _rfc(SEMANTICS, "13.1.3")),
    "If-None-Match": Entry("Send the body only if no listed entity tag is current.", _rfc(SEMANTICS, "13.1.2")),
    "If-Range": Entry("Send the Range asked only if this validator is current, else the whole.", _rfc(SEMANTICS, "13.1.5")),
    "If-Unmodified-Since": Entry("Act only if not changed since then.", _rfc(SEMANTICS, "13.1.4")),
    "Last-Event-ID": Entry("The id of the last server-sent event had: an EventSource sends it when it reconnects.", "WHATWG HTML, Server-sent events"),
    "Last-Modified": Entry("When the representation last changed: a validator.", _rfc(SEMANTICS, "8.8.2")),
    "Link": Entry("Typed links to other resources.", _rfc(8288, "3")),
    "Location": Entry("The URL of what was created, or where to go.", _rfc(SEMANTICS, "10.2.2")),
    "Origin": Entry("The origin of the page that made the request.", _rfc(6454, "7")),
    "Pragma": Entry("HTTP/1.0's no-cache, kept for old caches.", _rfc(CACHING, "5.4")),
    "RateLimit": Entry("Each bucket's tokens left (r) and seconds until one is back (t).", RATELIMIT),
    "RateLimit-Policy": Entry("Each bucket's capacity (q) and window in seconds (w).", RATELIMIT),
    "Range": Entry("Only these parts of the representation (bytes=0-99).", _rfc(SEMANTICS, "14.2")),
    "Referer": Entry("The page the request came from.", _rfc(SEMANTICS, "10.1.3")),
    "Retry-After": Entry("Seconds to wait before trying again.", _rfc(SEMANTICS, "10.2.3")),
    "Server": Entry("The software that answered.", _rfc(SEMANTICS, "10.2.4")),
    "Set-Cookie": Entry("A cookie for the client to keep and send back.", _rfc(6265, "4.1")),
    "Sunset": Entry("When the resource stops being served.", _rfc(8594)),
    "Traceparent": Entry("The distributed trace the request belongs to.", "W3C Trace Context"),
    "Transfer-Encoding": Entry("How the body is framed on the wire (chunked).", _rfc(9112, "6.1")),
    "User-Agent": Entry("The client's software.", _rfc(SEMANTICS, "10.1.5")),
    "Vary": Entry("The request headers the answer depends on.", _rfc(SEMANTICS, "12.5.5")),
    "Via": Entry("The proxies the message passed.", _rfc(SEMANTICS, "7.6.3")),
    "WWW-Authenticate": Entry("The challenge: how to authenticate.", _rfc(SEMANTICS, "11.6.1")),
    "X-API-Key": Entry("An API key: this service's credential header.", None),
    "X-Content-Type-Options": Entry("nosniff: take the Content-Type as sent.", "WHATWG Fetch, X-Content-Type-Options"),
    "X-CSRF-Token": Entry("Proves a cookie-authenticated request is the page's own.", None),
    "X-Forwarded-For": Entry("The client's address as a proxy saw it.", None),
    "X-Forwarded-Host": Entry("The Host the client asked a proxy for.", None),
    "X-Forwarded-Prefix": Entry("The path a proxy mounted the service under.", None),
    "X-Forwarded-Proto": Entry("The scheme the client used to reach a proxy.", None),
    "X-Next-Cursor": Entry("The cursor of the next page.", None),
    "X-Request-Id": Entry("The request's id, for logs and support.", None),
    "Idempotent-Replayed": Entry("This is a stored answer, replayed.", None),
}  # fmt: skip

# Status code -> what it means, where it is defined.
STATUSES: dict[int, Entry] = {
    100: Entry("Continue: send the body.", _rfc(SEMANTICS, "15.2.1")),
    200: Entry("OK: the request succeeded.", _rfc(SEMANTICS, "15.3.1")),
    201: Entry("Created: Location names the new resource.", _rfc(SEMANTICS, "15.3.2")),
    202: Entry("Accepted: to be done later.", _rfc(SEMANTICS, "15.3.3")),
    204: Entry("No Content: done, no body.", _rfc(SEMANTICS, "15.3.5")),
    206: Entry("Partial Content: the ranges asked for.", _rfc(SEMANTICS, "15.3.7")),
    301: Entry("Moved Permanently (a POST may become a GET).", _rfc(SEMANTICS, "15.4.2")),
    302: Entry("Found: elsewhere for now (a POST may become a GET).", _rfc(SEMANTICS, "15.4.3")),
    303: Entry("See Other: GET the answer at Location.", _rfc(SEMANTICS, "15.4.4")),
    304: Entry("Not Modified: the client's copy is current.", _rfc(SEMANTICS, "15.4.5")),
    307: Entry("Temporary Redirect: same method, elsewhere.", _rfc(SEMANTICS, "15.4.8")),
    308: Entry("Permanent Redirect: same method, elsewhere for good.", _rfc(SEMANTICS, "15.4.9")),
    400: Entry("Bad Request: the client must change the request.", _rfc(SEMANTICS, "15.5.1")),
    401: Entry("Unauthorized: valid credentials are needed.", _rfc(SEMANTICS, "15.5.2")),
    403: Entry("Forbidden: understood, and refused.", _rfc(SEMANTICS, "15.5.4")),
    404: Entry("Not Found: no such resource.", _rfc(SEMANTICS, "15.5.5")),
    405: Entry("Method Not Allowed: Allow lists those it takes.", _rfc(SEMANTICS, "15.5.6")),
    406: Entry("Not Acceptable: no representation fits Accept.", _rfc(SEMANTICS, "15.5.7")),
    408: Entry("Request Timeout: the request did not arrive in time.", _rfc(SEMANTICS, "15.5.9")),
    409: Entry("Conflict: with the resource's current state.", _rfc(SEMANTICS, "15.5.10")),
    410: Entry("Gone: and not coming back.", _rfc(SEMANTICS, "15.5.11")),
    411: Entry("Length Required: send Content-Length.", _rfc(SEMANTICS, "15.5.12")),
    412: Entry("Precondition Failed: a condition (If-Match) was false.", _rfc(SEMANTICS, "15.5.13")),
    413: Entry("Content Too Large: the body is over the limit.", _rfc(SEMANTICS, "15.5.14")),
    414: Entry("URI Too Long: the request target is over the limit.", _rfc(SEMANTICS, "15.5.15")),
    415: Entry("Unsupported Media Type: the body's type or coding.", _rfc(SEMANTICS, "15.5.16")),
    416: Entry("Range Not Satisfiable.", _rfc(SEMANTICS, "15.5.17")),
    417: Entry("Expectation Failed: Expect cannot be met.", _rfc(SEMANTICS, "15.5.18")),
    421: Entry("Misdirected Request: wrong server for this host.", _rfc(SEMANTICS, "15.5.20")),
    422: Entry("Unprocessable Content: well-formed, but not acceptable.", _rfc(SEMANTICS, "15.5.21")),
    425: Entry("Too Early: replayed early data is refused.", _rfc(8470, "5.2")),
    426: Entry("Upgrade Required: use another protocol.", _rfc(SEMANTICS, "15.5.22")),
    428: Entry("Precondition Required: send a condition (If-Match).", _rfc(6585, "3")),
    429: Entry("Too Many Requests: slow down; see Retry-After.", _rfc(6585, "4")),
    431: Entry("Request Header Fields Too Large.", _rfc(6585, "5")),
    451: Entry("Unavailable For Legal Reasons.", _rfc(7725, "3")),
    500: Entry("Internal Server Error: the server failed.", _rfc(SEMANTICS, "15.6.1")),
    501: Entry("Not Implemented: a feature the server lacks.", _rfc(SEMANTICS, "15.6.2")),
    502: Entry("Bad Gateway: the upstream's answer was unusable.", _rfc(SEMANTICS, "15.6.3")),
    503: Entry("Service Unavailable: try again later.", _rfc(SEMANTICS, "15.6.4")),
    504: Entry("Gateway Timeout: the upstream did not answer in time.", _rfc(SEMANTICS, "15.6.5")),
    505: Entry("HTTP Version Not Supported.", _rfc(SEMANTICS, "15.6.6")),
    508: Entry("Loop Detected: the request came round again.", _rfc(5842, "7.2")),
}  # fmt: skip

# A status not listed is understood by its class (RFC 9110 section 15).
CLASSES = {
    1: Entry("Informational: an interim answer.", _rfc(SEMANTICS, "15.2")),
    2: Entry("Successful.", _rfc(SEMANTICS, "15.3")),
    3: Entry("Redirection: look elsewhere.", _rfc(SEMANTICS, "15.4")),
    4: Entry("Client Error: the client must change the request.", _rfc(SEMANTICS, "15.5")),
    5: Entry("Server Error: the server failed.", _rfc(SEMANTICS, "15.6")),
}  # fmt: skip

_BY_LOWER_NAME = {name.lower(): entry for name, entry in FIELDS.items()}


def field(name: str) -> Entry | None:
    """The line of a field, whatever the case of ``name``; None if not listed."""
    return _BY_LOWER_NAME.get(name.lower())


def status(code: int) -> Entry:
    """The line of a status, else that of its class (RFC 9110 section 15)."""
    return STATUSES.get(code) or CLASSES[code // 100]


def described(name: str) -> str:
    """A field's meaning and where it is defined, as one sentence."""
    entry = FIELDS[name]
    return f"{entry.meaning[:-1]} ({entry.spec})." if entry.spec else entry.meaning
