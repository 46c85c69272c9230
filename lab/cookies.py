"""httpbin's cookies, kept to the lab's own path (docs/lab.md, "Cookies").

- ``/lab/cookies`` answers ``{"cookies": {...}}``: the cookies the request sent, but
  the service's own (``refapi_``..., the UI's session among them), which the lab
  never shows.
- ``/lab/cookies/set?name=value...`` answers ``302`` to ``/lab/cookies`` with a
  ``Set-Cookie`` for each pair; the query names ``Path``, ``Max-Age``,
  ``SameSite``, ``Secure`` and ``HttpOnly``, written so, are attributes of every
  cookie the request sets, so a learner can see what each does.
- ``/lab/cookies/delete?name...`` answers ``302`` to ``/lab/cookies`` with each
  cookie expired (``Max-Age=0`` and an ``Expires`` in 1970).

Every cookie the lab sets (here and through ``/lab/response-headers``, which reads
its ``Set-Cookie`` with ``cookie_header``) is the lab's only: its ``Path`` is read
from the lab's root, under the mount point (``/`` is ``<prefix>/lab/``), and it has
no ``Domain``, so a browser sends it nowhere else; a name starting ``refapi_``,
``__Host-`` or ``__Secure-`` is refused, so the lab can neither shadow the UI's
session nor claim a prefix's guarantees; at most ``MAX_NAMES`` names a request, a
name of at most ``NAME_MAX`` characters and a value of at most ``VALUE_MAX`` (256
bytes together), kept at most a day. Each breach is ``400 VALIDATION_ERROR`` on the
query name that holds it. The rules are the patterns and schemas below, which the
lab's document gives (lab/routes.py), so the document and the handler admit the
same requests. The answers are ``no-store``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

from werkzeug.http import parse_date

from ..errors import ValidationError
from ..web import Request, Response, json_response
from ..web.auth import request_cookies
from .handlers import BY_REQUEST_LINE

MAX_NAMES = 10  # a request's cookies and attributes, set or deleted
NAME_MAX, VALUE_MAX = 64, 192  # characters (ASCII): 256 bytes together
MAX_AGE = 86400  # seconds: a day
SERVICE_S = "refapi_"  # the prefix of the service's cookies, lower-cased
EXPIRED = "Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0"


def any_case(text: str) -> str:
    """``text`` as a pattern of any letter case, for ECMA-262 as for Python."""
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else c for c in text)


# RFC 9110 section 5.6.2's token, but the service's prefix and those whose
# guarantees browsers enforce (RFC 6265bis section 4.1.3), in any case; RFC 6265
# section 4.1.1's cookie-value; its path-value, from the lab's root.
TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]"
_NAME = (
    "(?!" + "|".join(map(any_case, (SERVICE_S, "__host-", "__secure-"))) + ")"
    f"{TOKEN}{{1,{NAME_MAX}}}"
)
_OCTET = r"[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]"
_VALUE = f'(?:{_OCTET}{{0,{VALUE_MAX}}}|"{_OCTET}{{0,{VALUE_MAX - 2}}}")'
_PATH = r"/[\x21-\x3a\x3c-\x7e]*"
# 0 to 86400 without leading zeros: a pattern for the Set-Cookie text, where a
# schema's maximum cannot reach.
_MAX_AGE = "(?:0|[1-9][0-9]{0,3}|[1-7][0-9]{4}|8[0-5][0-9]{3}|86[0-3][0-9]{2}|86400)"
NAME_PATTERN, VALUE_PATTERN = f"^{_NAME}$", f"^{_VALUE}$"
PATH_PATTERN = f"^{_PATH}$"
SAME_SITE = ("Strict", "Lax", "None")
FLAGS = ("", "true", "false")  # Secure and HttpOnly in the query: on, on, off
# A Set-Cookie a client may ask /lab/response-headers for: a cookie, then the
# attributes the lab sets, their names in any case as RFC 6265 reads them; an
# Expires as written (one a browser cannot read, it ignores: a session cookie).
_ATTRIBUTE = "|".join((
    f"{any_case('path')}={_PATH}", f"{any_case('max-age')}={_MAX_AGE}",
    f"{any_case('expires')}=[\\x20-\\x3a\\x3c-\\x7e]*",
    f"{any_case('samesite')}=(?:{'|'.join(SAME_SITE)})",
    any_case("secure"), any_case("httponly"),
))  # fmt: skip
SET_COOKIE_PATTERN = f"^{_NAME}={_VALUE}(?: *; *(?:{_ATTRIBUTE}))* *$"
_NAME_RE, _VALUE_RE = re.compile(NAME_PATTERN), re.compile(VALUE_PATTERN)
_PATH_RE, _SET_COOKIE_RE = re.compile(PATH_PATTERN), re.compile(SET_COOKIE_PATTERN)
_MAX_AGE_RE = re.compile(_MAX_AGE)

_BY_ROOT = "read from the lab's root: / is the lab's own path"
# The query of /lab/cookies/set and /lab/cookies/delete, for the lab's document.
SET_SCHEMA = {
    "type": "object",
    "description": "Each a cookie to set, name=value; Path, Max-Age, SameSite, "
    "Secure and HttpOnly, written so, are attributes of them all.",
    "propertyNames": {"pattern": NAME_PATTERN},
    "properties": {
        "Path": {"type": "string", "pattern": PATH_PATTERN, "description": _BY_ROOT,
                 "x-bounded-by": BY_REQUEST_LINE},
        "Max-Age": {"type": "integer", "format": "int32", "minimum": 0,
                    "maximum": MAX_AGE},
        "SameSite": {"type": "string", "enum": list(SAME_SITE)},
        "Secure": {"type": "string", "enum": list(FLAGS)},
        "HttpOnly": {"type": "string", "enum": list(FLAGS)},
    },
    "additionalProperties": {"type": "string", "maxLength": VALUE_MAX,
                             "pattern": VALUE_PATTERN},
    "maxProperties": MAX_NAMES,
}  # fmt: skip
DELETE_SCHEMA = {
    "type": "object",
    "description": "Each the name of a cookie to delete; the values are ignored.",
    "propertyNames": {"pattern": NAME_PATTERN},
    "additionalProperties": {
        "type": "string",
        "x-bounded-by": BY_REQUEST_LINE,
    },
    "maxProperties": MAX_NAMES,
}
ATTRIBUTES = ("Path", "Max-Age", "SameSite", "Secure", "HttpOnly")  # SET_SCHEMA's


def cookies(request: Request) -> Response:
    sent = request_cookies(request.environ)
    shown = {name: value for name, value in sent.items()
             if not name.lower().startswith(SERVICE_S)}  # fmt: skip
    return json_response({"cookies": shown})


def set_cookies(request: Request) -> Response:
    pairs = _names(request)
    said = {name: value for name, value in pairs if name in ATTRIBUTES}
    attributes = [_attribute(request, name, value) for name, value in said.items()]
    if "Secure" not in said and _https(request):
        attributes.append("Secure")  # over https, as httpbin's
    headers = []
    for name, value in pairs:
        if name in ATTRIBUTES:
            continue
        if not _VALUE_RE.fullmatch(value):
            raise ValidationError.one(
                name, f"must be a cookie value of at most {VALUE_MAX} characters "
                "(RFC 6265 section 4.1.1): visible ASCII but the double quote, "
                "comma, semicolon and backslash, or such text in double quotes"
            )  # fmt: skip
        headers.append(("Set-Cookie", _written(request, name, value, attributes)))
    return _to_list(request, headers)


def delete_cookies(request: Request) -> Response:
    expired = f"{EXPIRED}; Path={lab_root(request)}"
    headers = [("Set-Cookie", f"{name}=; {expired}") for name, _ in _names(request)]
    return _to_list(request, headers)


def cookie_header(request: Request, text: str, field: str) -> str:
    """A ``Set-Cookie`` a client asked ``/lab/response-headers`` for, held to the
    lab's rules (``SET_COOKIE_PATTERN``) and written back with its attributes, its
    ``Path`` from the lab's root; one kept longer than a day by its ``Expires`` is
    kept a day (``Max-Age``, which a browser reads first: RFC 6265 section 5.3)."""
    if not _SET_COOKIE_RE.fullmatch(text):
        raise ValidationError.one(
            field, "must be a cookie (name=value, of /lab/cookies/set's rules) and "
            "of the attributes Path, Max-Age, Expires, SameSite, Secure and HttpOnly "
            "only"
        )  # fmt: skip
    first, *rest = (part.strip() for part in text.split(";"))
    name, _, value = first.partition("=")
    attributes, expires = [], None
    for part in filter(None, rest):
        key, _, said = part.partition("=")
        canonical = {a.lower(): a for a in (*ATTRIBUTES, "Expires")}[key.lower()]
        if canonical == "Expires":
            expires = parse_date(said)
            attributes.append(f"Expires={said}")
        else:
            attributes.append(_attribute(request, canonical, said))
    if expires is not None and expires.timestamp() > time.time() + MAX_AGE:
        if not any(a.startswith("Max-Age=") for a in attributes):
            attributes.append(f"Max-Age={MAX_AGE}")
    return _written(request, name, value, attributes)


def lab_cookie(
    request: Request, name: str, value: str, attributes: Sequence[str] = ()
) -> str:
    """A ``Set-Cookie`` for a cookie the lab sets itself (the digest challenge's
    ``fake``, the report card's): the lab's ``Path`` unless ``attributes`` name
    one below it, no ``Domain``; an empty attribute is left out."""
    return _written(request, name, value, list(attributes))


def lab_root(request: Request) -> str:
    """The path every lab cookie is kept to: the lab's, under the mount point."""
    return request.script_root + "/lab/"


def _names(request: Request) -> list[tuple[str, str]]:
    """The query's pairs, at most MAX_NAMES, each named by NAME_PATTERN."""
    pairs = list(request.args.items(multi=True))
    if len(pairs) > MAX_NAMES:
        raise ValidationError.one(
            "cookies", f"must be at most {MAX_NAMES} names a request, attributes "
            "included"
        )  # fmt: skip
    for name, _ in pairs:
        if not _NAME_RE.fullmatch(name):
            raise ValidationError.one(
                name, f"must be a token (RFC 9110 section 5.6.2) of at most "
                f"{NAME_MAX} characters, not starting refapi_, __Host- or __Secure-"
            )  # fmt: skip
    return pairs


def _attribute(request: Request, name: str, value: str) -> str:
    """An attribute of the query (or of a Set-Cookie, its name canonical), checked
    as SET_SCHEMA says, as written back; '' for a flag turned off."""
    if name == "Path":
        if not _PATH_RE.fullmatch(value):
            raise ValidationError.one(name, f"must be a path, {_BY_ROOT}")
        return f"Path={lab_root(request)}{value[1:]}"
    if name == "Max-Age":
        if not _MAX_AGE_RE.fullmatch(value):
            raise ValidationError.one(name, f"must be an integer from 0 to {MAX_AGE}")
        return f"Max-Age={value}"
    if name == "SameSite":
        if value not in SAME_SITE:
            raise ValidationError.one(name, "must be Strict, Lax or None")
        return f"SameSite={value}"
    if value not in FLAGS:  # Secure, HttpOnly
        raise ValidationError.one(name, "must be true, false or empty")
    return name if value != "false" else ""


def _written(request: Request, name: str, value: str, attributes: list[str]) -> str:
    kept = [attribute for attribute in attributes if attribute]
    if not any(attribute.startswith("Path=") for attribute in kept):
        kept.append(f"Path={lab_root(request)}")
    return "; ".join([f"{name}={value}", *kept])


def _https(request: Request) -> bool:
    return request.environ.get("wsgi.url_scheme") == "https"


def _to_list(request: Request, headers: list[tuple[str, str]]) -> Response:
    return Response(b"", 302, [("Location", request.link("/lab/cookies")), *headers])
