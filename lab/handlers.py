"""The lab's answers: make it answer as asked, and what the reflections share.

- ``/lab/anything`` (the echo) and httpbin's request endpoints are in
  ``reflect.py``; the redaction of what may be a credential
  (``redacted_headers``) and the kinds of credential sent (``credentials``), which
  they and the explainer show, are here.
- ``/lab/status/{codes}`` answers with that status and what the status requires
  (RFC 9110 section 15): ``Location`` on 201 and the redirects but 304,
  ``WWW-Authenticate`` on 401, ``Allow`` on 405, ``Retry-After`` on 429 and 503,
  no body on 204 and 304, and on a 4xx or 5xx the error object, code
  ``SIMULATED``. ``200:0.8,503:0.2`` picks one by relative weight; ``?seed=``
  makes the pick repeatable.
- ``/lab`` answers the lab's front: its document and its paths.

The delay, the streams, the drip and the events are in ``slow.py``. Each takes
the methods of ``METHODS``. The random source is passed in, as the clock is, so
every pick is known (docs/lab.md).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ValidationError
from ..web import (
    Request,
    Response,
    empty_response,
    json_response,
    permanent_redirect,
)
from ..web.auth import SESSION_COOKIE, request_cookies
from ..web.statuses import PHRASES
from ..web.wsgi import positive_int
from .errors import Simulated

if TYPE_CHECKING:
    from ..router.route import Route

# The lab's paths before it had a wing of its own: each answers 308 to its new path
# until the sunset (docs/lab.md, "Moved").
MOVED = {
    "/api/echo": "/lab/anything",
    "/api/status/": "/lab/status/",
    "/api/delay/": "/lab/delay/",
    "/api/explain": "/lab/explain",
}
DEPRECATION = "@1795910400"  # 2026-11-29, the release that moved them (RFC 9745)
SUNSET = "Sun, 31 May 2027 00:00:00 GMT"  # RFC 8594
MAX_SEED = 2**63 - 1  # as an id's bound: what any client's integer type holds
ECHO = "/lab/anything"  # where a simulated 201 or redirect points
# What each of the lab's paths takes (HEAD with GET; OPTIONS is the router's).
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
ALLOW = ", ".join(sorted({*METHODS, "HEAD", "OPTIONS"}))

# What bounds a path or query parameter that has no maxLength: the request line
# gunicorn takes (414), not the app, as the OPTIONS segment's (openapi/methods.py,
# SEGMENT); x-bounded-by says so to the linters (tools/contract/.spectral.yaml).
BY_REQUEST_LINE = "the request line: gunicorn's limit_request_line, 414"

# Shown as [redacted]: the credentials this service reads and any header whose
# name says it may carry one (docs/lab.md, "Echo").
REDACTED = "[redacted]"
SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "cookie", "x-api-key", "x-csrf-token"}
)
SECRET_WORDS = ("auth", "token", "key", "secret", "session", "cookie", "jwt",
                "signature")  # fmt: skip

# The statuses served: 200-599 as the phrase table has them, but those whose
# meaning needs what a simulation cannot give (a range, a proxy's challenge).
SERVED = frozenset(code for code in PHRASES if 200 <= code <= 599) - {206, 407, 416}
MAX_CHOICES = 10
RETRY_AFTER = 1  # seconds, on a simulated 429 or 503
_CODE_RULE = (
    "must be a status of the service's table from 200 to 599 (not 206, 407 or"
    " 416: not 299 nor 499, which no RFC defines), or up to "
    f"{MAX_CHOICES} of them with weights, as in 200:0.8,503:0.2"
)


def _positive(digits: int) -> str:
    """1 to ``digits`` decimal digits, not all of them 0."""
    rest = [f"[0-9]{{0,{digits - 1 - zeros}}}" for zeros in range(digits - 1)]
    return "(?:" + "|".join(
        "0" * zeros + "[1-9]" + more for zeros, more in enumerate([*rest, ""])
    ) + ")"  # fmt: skip


# What the path takes, as one pattern: the OpenAPI document gives it (``CODE_SCHEMA``)
# and the handler matches it, so both admit the same codes. A code of SERVED, and a
# weight above 0 of up to 6 digits before and after the point: a regular expression
# spells "above 0" as "a digit other than 0 somewhere". The pattern bounds the
# length (ten choices of at most 17 characters, with the commas: 179), which
# x-bounded-by says to the linters in place of a maxLength: with one, a generator
# asked for a string of exactly that length matching this pattern draws
# thousands before it gives up (schemathesis' coverage phase: 10 s of CPU).
_STATUS = "(?:" + "|".join(map(str, sorted(SERVED))) + ")"
_WEIGHT = rf"(?:{_positive(6)}(?:\.[0-9]{{1,6}})?|0{{1,6}}\.{_positive(6)})"
_ONE = f"{_STATUS}(?::{_WEIGHT})?"
_PATTERN = f"^{_ONE}(?:,{_ONE}){{0,{MAX_CHOICES - 1}}}$"
CODE_SCHEMA = {
    "type": "string",
    "x-bounded-by": "the pattern: ten choices, 503:123456.123456 at their longest",
    "pattern": _PATTERN,
    "description": "A status of RFC 9110's and the others the service's table"
    " holds, 200-599 but 206, 407 and 416 (`503`), or up to "
    f"{MAX_CHOICES} with relative weights above 0 (`200:0.8,503:0.2`).",
}
_CODE = re.compile(_PATTERN)


def redacted_headers(request: Request) -> dict[str, str]:
    """The header fields by name, as httpbin shows them: one that is or may carry
    a credential ``[redacted]`` (docs/lab.md, "Echo")."""
    return {
        name: REDACTED if _secret(name) else value
        for name, value in request.headers.items()
    }


def _secret(name: str) -> bool:
    lowered = name.lower()
    return lowered in SECRET_HEADERS or any(word in lowered for word in SECRET_WORDS)


def credentials(environ: Mapping[str, Any]) -> list[str]:
    """The kinds of credential sent, none of them checked: ``bearer``, ``basic``
    or ``other`` (another scheme) for ``Authorization``, ``api_key``, ``session``."""
    kinds = []
    header = environ.get("HTTP_AUTHORIZATION")
    if header is not None:
        scheme = (header.split() or [""])[0].lower()
        kinds.append(scheme if scheme in ("bearer", "basic") else "other")
    if "HTTP_X_API_KEY" in environ:
        kinds.append("api_key")
    if SESSION_COOKIE in request_cookies(environ):
        kinds.append("session")
    return kinds


def answer_status(request: Request, codes: str, rand: Callable[[], float]) -> Response:
    choices = _choices(codes)
    seed = request.arg("seed")
    if seed is None:
        number = rand()
    else:  # the same seed, the same pick, on any host and any Python
        number = random.Random(positive_int("seed", seed, MAX_SEED)).random()
    status = _pick(choices, number)
    phrase = PHRASES[status]
    if status >= 400:
        headers = []
        if status == 401:
            headers.append(("WWW-Authenticate", 'Bearer realm="refapi"'))
        elif status == 405:
            headers.append(("Allow", ALLOW))
        retry_after = RETRY_AFTER if status in (429, 503) else None
        if retry_after is not None:
            headers.append(("Retry-After", str(retry_after)))
        raise Simulated(status, phrase, retry_after=retry_after, headers=headers)
    if status in (204, 304):
        return empty_response(status)
    headers = []
    if status == 201 or 300 <= status < 400:
        # Built from the mount point, never from the request's Host.
        headers.append(("Location", request.link(ECHO)))
    body = {"status": status, "message": f"{phrase}, as asked"}
    return json_response(body, status, headers)


def _choices(text: str) -> list[tuple[int, float]]:
    """``503`` or ``200:0.8,503:0.2`` as (status, weight) pairs; 400 otherwise."""
    if not _CODE.fullmatch(text):
        raise ValidationError.one("codes", _CODE_RULE)
    choices = []
    for part in text.split(","):
        status, _, weight = part.partition(":")
        choices.append((int(status), float(weight or 1)))
    return choices


def _pick(choices: list[tuple[int, float]], number: float) -> int:
    """The status whose share of the weights holds ``number``, in [0, 1)."""
    point = number * sum(weight for _, weight in choices)
    for status, weight in choices:
        point -= weight
        if point < 0:
            return status
    return choices[-1][0]


def lab_index(request: Request, routes: tuple[Route, ...]) -> Response:
    """``/lab``: the lab's document and every path it answers, under the mount
    point, as the service's front page links its own (docs/lab.md)."""
    # ``routes``: every row served, the core's too (the catalogue's).
    paths = dict.fromkeys(
        route.path
        for route in routes
        if route.documented and (route.path + "/").startswith("/lab/")
    )
    return json_response({
        "document": request.link("/lab/openapi.json"),
        "paths": [request.link(path) for path in paths],
    })  # fmt: skip


def to_lab_index(request: Request) -> Response:
    """``/lab/``: ``308`` to ``/lab``, the lab's front (a path of the document ends
    in no slash: the linters' rule)."""
    return permanent_redirect(request, "/lab")


def get_lab_document(request: Request, document: Callable[[str], Any]) -> Response:
    """The lab's OpenAPI document, made by the core's generator from the lab's
    table (the front door hands it in: ``document``)."""
    return json_response(document(request.script_root))


def moved(request: Request) -> Response:
    """``308`` from an old path of the lab to its new one, method, body and query
    kept, with ``Deprecation`` and ``Sunset`` (docs/lab.md, "Moved")."""
    path = request.path  # as sent, percent-encoded
    old = next(old for old in MOVED if path.startswith(old))
    answer = permanent_redirect(request, MOVED[old] + path[len(old) :])
    answer.headers += [("Deprecation", DEPRECATION), ("Sunset", SUNSET)]
    return answer


def moved_status(request: Request, code: str) -> Response:
    return moved(request)


def moved_delay(request: Request, seconds: str) -> Response:
    return moved(request)
