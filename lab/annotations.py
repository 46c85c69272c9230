"""What each part of an exchange means: the explainer's annotations and notes.

Every status and header field is annotated with its line of the table of HTTP
fields and statuses (``web/http_fields.py``: its meaning, its RFC section); where
refapi sent it by a rule of its own, with which layer set it and the docs section
that says why. Which layer comes from what each declares for the OpenAPI document:
a layer's ``Declared`` (the headers it adds, the errors it answers), a route row's
success headers, an error class's headers (``errors.py``); the docs sections are
this module's ``WHY_HEADER`` and ``WHY_STATUS``. ``Server``, ``Date`` and
``Connection`` are the server's (gunicorn's), as is all of an answer it gives
before the app runs.

The notes are httplint's (the linter behind REDbot) on the response: caching,
validators, ``Vary``, content negotiation. It is imported when a note is asked
for, so the rest of the service never loads it (docs/explain.md, "Notes").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import unquote

from ..middleware.headers import Declared, Layer, declared
from ..web import http_fields
from ..web.statuses import PHRASES

if TYPE_CHECKING:
    from ..errors import ApiError

Headers = Sequence[tuple[str, str]]
SERVER_FIELDS = frozenset({"server", "date", "connection"})
UNLISTED = http_fields.Entry("Not in refapi's table of fields.", None)
Annotation = dict[str, Any]

# The docs section that says why refapi sends each response header it sends, and
# why it answers a status (by the error's code; any other error: "Errors"), cited
# beside what the layers and rows declare (docs/explain.md, "Annotations");
# tests/lab/test_annotations.py checks each section exists.
WHY_HEADER = {
    "X-Request-Id": "docs/api.md#request-ids",
    "X-Content-Type-Options": "docs/api.md#representations",
    "RateLimit": "docs/rate-limits.md#the-ratelimit-fields",
    "RateLimit-Policy": "docs/rate-limits.md#the-ratelimit-fields",
    "ETag": "docs/api.md#conditional-requests",
    "Location": "docs/api.md#articles",
    "Link": "docs/api.md#pagination",
    "X-Next-Cursor": "docs/api.md#pagination",
    "Idempotent-Replayed": "docs/api.md#idempotent-creates",
    "Retry-After": "docs/rate-limits.md#429-too-many-requests",
    "Allow": "docs/api.md#order-of-checks",
    "Vary": "docs/api.md#representations",
    "Deprecation": "docs/api.md#versioning",
    "Sunset": "docs/api.md#versioning",
    "WWW-Authenticate": "docs/authentication.md#credentials",
    "Set-Cookie": "docs/authentication.md#login-logout-and-the-session",
    "Content-Disposition": "docs/api.md#the-endpoint-catalogue",
    "Access-Control-Allow-Origin": "docs/api.md#cors",
    "Access-Control-Expose-Headers": "docs/api.md#cors",
    "Access-Control-Allow-Methods": "docs/api.md#cors",
    "Access-Control-Allow-Headers": "docs/api.md#cors",
    "Access-Control-Max-Age": "docs/api.md#cors",
    "Content-Security-Policy": "docs/api.md#the-front-page",
    "Cache-Control": "docs/authentication.md#who-owns-what",
    "Content-Encoding": "docs/lab.md#bodies",
    "Accept-Ranges": "docs/lab.md#ranges",
    "Content-Range": "docs/lab.md#ranges",
    "Last-Modified": "docs/lab.md#caching",
}
# Where the lab sends them by rules of its own (a path under /lab/), its guide says
# why: its cookies, its challenges, its redirects.
LAB_WHY_HEADER = {
    "Set-Cookie": "docs/lab.md#cookies",
    "WWW-Authenticate": "docs/lab.md#authentication",
    "Location": "docs/lab.md#redirects",
}
WHY_STATUS = {
    "304": "docs/api.md#conditional-requests",
    "206": "docs/lab.md#ranges",
    "RANGE_NOT_SATISFIABLE": "docs/lab.md#ranges",
    "PRECONDITION_FAILED": "docs/api.md#conditional-requests",
    "RATE_LIMITED": "docs/rate-limits.md#429-too-many-requests",
    "NOT_ACCEPTABLE": "docs/api.md#representations",
    "INVALID_JSON": "docs/api.md#request-bodies",
    "PAYLOAD_TOO_LARGE": "docs/api.md#request-bodies",
    "UNSUPPORTED_MEDIA_TYPE": "docs/api.md#request-bodies",
    "METHOD_NOT_ALLOWED": "docs/api.md#order-of-checks",
    "UNAUTHENTICATED": "docs/authentication.md#credentials",
    "CSRF_FAILED": "docs/authentication.md#sessions-and-csrf",
    "URI_TOO_LONG": "docs/operating.md#what-gunicorn-refuses-itself",
    "REQUEST_HEADER_FIELDS_TOO_LARGE": "docs/operating.md#what-gunicorn-refuses-itself",
    "error": "docs/api.md#errors",
}
# What each name ``setBy`` can be is, in plain words, and the docs section about
# it: the server, each layer of app.py's stack in its order (outermost first), the
# router, the handler; tests/lab/test_annotations.py holds it to the stack.
SETTERS = {
    "server": (
        "The HTTP server the app runs in (gunicorn): it writes Server, Date and "
        "Connection, and answers itself what it refuses before the app runs.",
        "docs/operating.md#what-gunicorn-refuses-itself",
    ),
    "TrustedProxy": (
        "Believes X-Forwarded-* from the proxies you trust (REFAPI_TRUST_PROXY) "
        "only, so the client's address, scheme and mount point are the real ones.",
        "docs/operating.md#a-buffering-proxy-in-front",
    ),
    "RequestId": (
        "Gives each request an id, X-Request-Id (the client's own when "
        "well-formed), so an answer and its log line can be matched.",
        "docs/api.md#request-ids",
    ),
    "Observe": (
        "Writes each request's log line and counts it in the metrics.",
        "docs/operating.md#logs",
    ),
    "Cors": (
        "Cross-origin resource sharing: tells a browser which other sites' pages "
        "may read the answer, and answers its preflight OPTIONS.",
        "docs/api.md#cors",
    ),
    "Errors": (
        "Turns every failure beneath it into the one error object: code, message, "
        "details.",
        "docs/api.md#errors",
    ),
    "Authenticate": (
        "Finds who the credential speaks for (a Bearer token, an API key, the "
        "session cookie); whether the route needs one is the router's to say.",
        "docs/authentication.md#credentials",
    ),
    "RateLimit": (
        "Takes a token from the caller's bucket, says how many are left (the "
        "RateLimit fields), and answers 429 when none is.",
        "docs/rate-limits.md#the-ratelimit-fields",
    ),
    "Versioning": (
        "Serves a path without /v1 when Accept names the version "
        "(application/vnd.refapi+json;version=1), and says that form is deprecated.",
        "docs/api.md#versioning",
    ),
    "router": (
        "Matches the path to a route of the table, checks what the route asks (a "
        "credential, a body, Accept) and adds what it implies: ETag, Vary, "
        "Location, a 304.",
        "docs/development.md#follow-one-request",
    ),
    "handler": (
        "The route's own function: the resource's answer, its status and body.",
        "docs/development.md#follow-one-request",
    ),
}


class Exchange(NamedTuple):
    """A request the explainer ran and its answer, as annotated and linted: the
    response's ``body`` is the part shown (``SHOWN_BYTES`` at most)."""

    method: str
    target: str
    sent: Headers
    status: int
    headers: Headers
    body: bytes


def annotate(
    exchange: Exchange,
    *,
    success: Mapping[str, bool],
    layers: Sequence[Layer],
    refused: bool,
) -> list[Annotation]:
    """The status, then each request field, then each response field, once each;
    ``success``: the headers the answering row's success carries (the router's)."""
    _, target, sent, status, headers, body = exchange
    path = unquote(target.partition("?")[0], "latin-1")
    stack = [(layer[0].__name__, declared(layer, path)) for layer in layers]
    code = _error_code(headers, body) if status >= 400 else None
    error = _error_class(code)
    if refused:
        by = "server"
    elif error is not None:
        by = _raised_by(error, stack)
    else:
        by = "router" if status == 304 else "handler"
    why = WHY_STATUS.get(code or str(status)) or (WHY_STATUS["error"] if code else None)
    lab = path.startswith("/lab/")
    why_header = {**WHY_HEADER, **LAB_WHY_HEADER} if lab else WHY_HEADER
    found = [_line("status", str(status), http_fields.status(status), by, why)]
    for name in _names(sent):
        found.append(_line("request", name, http_fields.field(name) or UNLISTED))
    for name in _names(headers):
        if refused or name.lower() in SERVER_FIELDS:
            setter = "server"
        elif error is not None and name in (*error.carries, *error.may_carry):
            setter = by
        elif name in success:
            setter = "router"
        else:
            setter = _added_by(name, stack) or by
        entry = http_fields.field(name) or UNLISTED
        found.append(_line("response", name, entry, setter, why_header.get(name)))
    return found


def linked(
    answer: dict[str, Any], guides: str, served: Callable[[str], str | None]
) -> dict[str, Any]:
    """``answer`` with the docs it cites as links to the guides the service serves
    (``guides``: their URL under the mount point; ``served``: where under it a
    file of the repository is, the guides' own lookup): each annotation's ``guide``,
    and ``setters``, what each name ``setBy`` names is (docs/explain.md,
    "Annotations")."""
    found = answer["annotations"]
    for line in found:
        if "docs" in line:
            line["guide"] = guides + (served(line["docs"]) or "")
    named = {line.get("setBy") for line in found}
    answer["setters"] = [
        {"name": name, "meaning": meaning, "docs": docs,
         "guide": guides + (served(docs) or "")}
        for name, (meaning, docs) in SETTERS.items()
        if name in named
    ]  # fmt: skip
    return answer


def _line(
    part: str,
    name: str,
    entry: http_fields.Entry,
    by: str | None = None,
    why: str | None = None,
) -> Annotation:
    line: Annotation = {"part": part, "name": name}
    line.update(meaning=entry.meaning, spec=entry.spec)
    if by is not None:
        line["setBy"] = by
    if why is not None:
        line["docs"] = why
    return line


def _names(fields: Headers) -> list[str]:
    """Each field name once, in the order first sent."""
    return list({name.lower(): name for name, _ in reversed(fields)}.values())[::-1]


def _error_code(headers: Headers, body: bytes) -> str | None:
    """The ``code`` of an error object, or None for another body."""
    kind = next((v for n, v in headers if n.lower() == "content-type"), "")
    if "json" not in kind:
        return None
    try:
        found = json.loads(body)
    except ValueError:
        return None
    code = found.get("code") if isinstance(found, dict) else None
    return code if isinstance(code, str) else None


def _error_class(code: str | None) -> type[ApiError] | None:
    """The error class of ``code``, among every subclass of ``ApiError``."""
    from ..errors import ApiError

    if code is None:
        return None
    classes, seen = [ApiError], []
    while classes:
        cls = classes.pop()
        seen.append(cls)
        classes += cls.__subclasses__()
    return next((cls for cls in seen if cls.code == code), None)


def _raised_by(error: type[ApiError], stack: list[tuple[str, Declared]]) -> str:
    """The layer that answers ``error`` itself, outermost first; else the router
    (or a handler beneath it)."""
    for name, found in stack:
        if any(error is raised or error.code == raised.code for raised in found.raises):
            return name
    return "router"


def _added_by(name: str, stack: list[tuple[str, Declared]]) -> str | None:
    lowered = name.lower()
    for layer, found in stack:
        if lowered in (added.lower() for added in (*found.adds, *found.may_add)):
            return layer
    return None


# docs/explain.md, "Notes": httplint is an extra, so a first install stays light.
NO_HTTPLINT = {
    "category": "General",
    "level": "info",
    "subject": "httplint",
    "summary": "httplint's notes need httplint: pip install 'refapi[notes]' "
    "(in a checkout, .venv/bin/pip install httplint), then restart.",
}


def lint(scheme: str, exchange: Exchange, *, whole: int) -> list[dict[str, str]]:
    """httplint's notes on the response to the request, each as plain text; without
    httplint (the ``notes`` extra), one note that says how to add it. ``body`` is
    what is shown of a body of ``whole`` bytes: only it is read (docs/explain.md,
    "Limits"), and a body cut is said in a note of its own."""
    try:
        from httplint import HttpRequestLinter, HttpResponseLinter
    except ImportError:
        return [NO_HTTPLINT]

    method, target, sent, status, headers, body = exchange
    host = next(value for name, value in sent if name == "Host")
    request = HttpRequestLinter()
    uri = f"{scheme}://{host}{target}"
    request.process_request_topline(method.encode(), uri.encode(), b"HTTP/1.1")
    request.process_headers([_raw(field) for field in sent])
    request.finish_content(True)
    response = HttpResponseLinter()
    response.request = request
    # The phrase the service sends (web/statuses.py), not this Python's.
    phrase = PHRASES.get(status, "").encode()
    response.process_response_topline(b"HTTP/1.1", str(status).encode(), phrase)
    response.process_headers([_raw(field) for field in headers])
    response.feed_content(body)
    cut = len(body) < whole
    response.finish_content(not cut)  # a cut may end inside a character
    notes = [
        {
            "category": str(note.category.value),
            "level": note.level.value,
            "subject": note.subject,
            "summary": str(note.summary),
        }
        for note in response.notes
        # httplint checks Content-Length against what it read: the part shown.
        if not (cut and note.subject == "field-content-length")
    ]
    return [*notes, _cut_note(len(body), whole)] if cut else notes


def _cut_note(shown: int, whole: int) -> dict[str, str]:
    return {
        "category": "General",
        "level": "info",
        "subject": "body",
        "summary": f"The body is cut at {shown:,} of its {whole:,} bytes: these notes "
        "read only what is shown, so its Content-Length is not checked.",
    }


def _raw(field: tuple[str, str]) -> tuple[bytes, bytes]:
    name, value = field
    return name.encode("latin-1"), value.encode("latin-1")
