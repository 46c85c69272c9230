"""Notes on the client's own request: what a careful reader of HTTP's RFCs would
say of what it sent (docs/lab.md, "Notes on your request").

httplint and REDbot judge a server's answers; the echo (``/lab/anything``) and the
explainer also judge the request, so that a learner writing a client sees what to
change. Each note is one dict: its ``level`` (``bad``: the request breaks a MUST;
``warning``: a SHOULD, or what a server may refuse), the ``subject`` it is about (a
field's name, or ``body``), the ``spec`` that says so, and a one-line ``summary``
of what to change. A request with nothing to say gets no note: the notes read only
what a client chose to send, never what a server or a proxy adds.

Header fields are read as the WSGI server hands them: a field sent twice arrives
as one, its values joined by commas (RFC 9110 section 5.3), so a field that may
not repeat is found repeated by a comma its own grammar has no place for.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from werkzeug.datastructures import MIMEAccept
from werkzeug.http import parse_accept_header, parse_options_header

from ..errors import ApiError
from ..web.body import parse_json

Note = dict[str, str]
SEMANTICS = "RFC 9110 section "

# RFC 9110 section 8.8.3: entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE, and the
# conditions' lists of them (13.1.1, 13.1.2): "*" alone, or tags and commas.
_ETAG = r'(?:W/)?"[\x21\x23-\x7e\x80-\xff]*"'
_ETAGS = re.compile(rf"\*|{_ETAG}(?:[ \t]*,[ \t]*{_ETAG})*")
# RFC 6265 section 4.2.1: cookie-string = cookie-pair *( ";" SP cookie-pair ),
# cookie-pair = token "=" cookie-value, the value's octets or them quoted.
_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_OCTETS = r"[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*"
_PAIR = rf'{_TOKEN}=(?:{_OCTETS}|"{_OCTETS}")'
_COOKIE = re.compile(rf"{_PAIR}(?:; {_PAIR})*")
# Fields that may occur once (their grammar is no list), each with its section of
# RFC 9110 and how a second copy, joined to the first by the server, shows: a comma
# where none may be.
_SINGLE: dict[str, tuple[str, Callable[[str], bool]]] = {
    "HTTP_HOST": ("7.2", lambda value: "," in value),
    "CONTENT_LENGTH": ("8.6", lambda value: "," in value),
    "CONTENT_TYPE": ("8.3", lambda value: "," in re.sub(r'"[^"]*"', "", value)),
    "HTTP_MAX_FORWARDS": ("7.6.2", lambda value: "," in value),
    # An HTTP-date holds one comma (section 5.6.7): a second date, a second one.
    "HTTP_IF_MODIFIED_SINCE": ("13.1.3", lambda value: value.count(",") > 1),
    "HTTP_IF_UNMODIFIED_SINCE": ("13.1.4", lambda value: value.count(",") > 1),
    # One credential; Digest's parameters hold commas, so a second shows as a
    # scheme after one: ", Bearer ...".
    "HTTP_AUTHORIZATION": (
        "11.6.2",
        lambda value: bool(
            re.search(r",\s*(?:Basic|Bearer|Digest)\s", value, re.IGNORECASE)
        ),
    ),
}
CREDENTIALS = {
    "HTTP_AUTHORIZATION": "Authorization",
    "HTTP_PROXY_AUTHORIZATION": "Proxy-Authorization",
    "HTTP_X_API_KEY": "X-API-Key",
}


def request_notes(
    environ: dict[str, Any], body: bytes, *, answers: str, max_depth: int
) -> list[Note]:
    """The notes on the request of ``environ`` with ``body`` (as read), to a
    resource that ``answers`` in that media type; JSON is read at most
    ``max_depth`` deep, as the service reads it."""
    notes: list[Note] = []
    for check in (_repeated, _body, _conditions, _accept, _cookie, _plain):
        notes += check(environ, body, answers, max_depth)
    return notes


def _note(level: str, subject: str, spec: str, summary: str) -> Note:
    return {"level": level, "subject": subject, "spec": spec, "summary": summary}


def _field(key: str) -> str:
    """The field's name as written, from its WSGI key (``HTTP_IF_MATCH``)."""
    return key.removeprefix("HTTP_").replace("_", "-").title()


def _repeated(environ: dict[str, Any], *_: object) -> list[Note]:
    return [
        _note(
            "bad",
            _field(key),
            SEMANTICS + section,
            f"{_field(key)} may be sent once; this request sent it more than once"
            " (or with a comma its grammar has no place for): send one.",
        )  # fmt: skip
        for key, (section, repeated) in _SINGLE.items()
        if (value := environ.get(key)) and repeated(value)
    ]


def _body(
    environ: dict[str, Any], body: bytes, answers: str, max_depth: int
) -> list[Note]:
    method = environ.get("REQUEST_METHOD", "")
    length = environ.get("CONTENT_LENGTH")
    notes = []
    if method in ("GET", "HEAD") and length not in (None, ""):
        notes.append(_note(
            "warning", "Content-Length", SEMANTICS + "8.6",
            f"A {method} has no content to measure: send no Content-Length (a"
            " client sends none where the method anticipates no content).",
        ))  # fmt: skip
    expect = environ.get("HTTP_EXPECT", "").strip().lower()
    if expect == "100-continue" and not body and length in (None, "", "0"):
        notes.append(_note(
            "bad", "Expect", SEMANTICS + "10.1.1",
            "Expect: 100-continue asks leave to send content, and this request has"
            " none: send the expectation only with a body.",
        ))  # fmt: skip
    if not body:
        return notes
    declared = environ.get("CONTENT_TYPE", "")
    if not declared:
        notes.append(_note(
            "warning", "Content-Type", SEMANTICS + "8.3",
            "The body has no Content-Type, so the server must guess what it is:"
            " send one (application/json for JSON).",
        ))  # fmt: skip
        return notes
    media_type = parse_options_header(declared)[0].lower()
    json_declared = media_type == "application/json" or media_type.endswith("+json")
    looks_json = body.lstrip()[:1] in (b"{", b"[")
    if not (json_declared or looks_json):
        return notes
    try:
        parse_json(body, max_depth)
        parses = True
    except ApiError:
        parses = False
    if json_declared and not parses:
        notes.append(_note(
            "bad", "body", "RFC 8259 section 2",
            f"The body is declared {media_type} but is not JSON that parses: send"
            " valid JSON in UTF-8, or declare what it is.",
        ))  # fmt: skip
    elif parses and not json_declared and not media_type.startswith("multipart/"):
        notes.append(_note(
            "warning", "Content-Type", SEMANTICS + "8.3",
            f"The body is JSON but is declared {media_type}: declare it"
            " application/json.",
        ))  # fmt: skip
    return notes


def _conditions(environ: dict[str, Any], *_: object) -> list[Note]:
    return [
        _note(
            "bad",
            name,
            SEMANTICS + section,
            f'{name} is "*" or a list of entity tags, each quoted ("v1", W/"v1"):'
            " send the ETag a response gave, as it gave it.",
        )  # fmt: skip
        for key, name, section in (
            ("HTTP_IF_MATCH", "If-Match", "13.1.1"),
            ("HTTP_IF_NONE_MATCH", "If-None-Match", "13.1.2"),
        )
        if key in environ and not _ETAGS.fullmatch(environ[key].strip(" \t"))
    ]


def _accept(
    environ: dict[str, Any], body: bytes, answers: str, *_: object
) -> list[Note]:
    value = environ.get("HTTP_ACCEPT")
    if value is None or parse_accept_header(value, MIMEAccept).best_match([answers]):
        return []
    return [_note(
        "warning", "Accept", SEMANTICS + "12.5.1",
        f"Nothing this Accept allows can be sent here ({answers} is what this"
        " answers): a server may refuse it 406; accept the type you can read, or"
        " */* with a lower q.",
    )]  # fmt: skip


def _cookie(environ: dict[str, Any], *_: object) -> list[Note]:
    value = environ.get("HTTP_COOKIE")
    if value is None or _COOKIE.fullmatch(value):
        return []
    return [_note(
        "warning", "Cookie", "RFC 6265 section 4.2.1",
        "Cookie is name=value pairs joined by \"; \" (a semicolon and one space),"
        " each name a token and each value without spaces, commas, semicolons,"
        " backslashes or quotes inside: send the cookies as a server set them.",
    )]  # fmt: skip


def _plain(environ: dict[str, Any], *_: object) -> list[Note]:
    if environ.get("wsgi.url_scheme") != "http":
        return []
    return [
        _note(
            "warning",
            name,
            SEMANTICS + "17.16.1",
            f"{name} went over plain HTTP, readable by anyone on the path: send"
            " credentials over https only.",
        )  # fmt: skip
        for key, name in CREDENTIALS.items()
        if key in environ
    ]
