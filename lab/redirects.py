"""httpbin's redirects: a chain of ``n``, and one to a URL the client names.

- ``/lab/redirect/{n}`` answers ``302`` to ``/lab/relative-redirect/{n-1}`` (to
  ``/lab/absolute-redirect/{n-1}`` with ``?absolute=true``), and the last one to
  ``/lab/get``; ``relative-redirect`` writes ``Location`` as a path,
  ``absolute-redirect`` as a URL of the request's own scheme and host.
- ``/lab/redirect-to?url=...&status_code=...`` answers that status (``302`` unless
  asked: ``300``-``303``, ``307`` or ``308``) to ``url``, which must not make the
  service an open redirect (docs/lab.md, "Redirects"): a relative URL resolves
  against the request's URL, a path against the lab's root; an absolute one is
  ``http`` or ``https`` and names the request's own host or one of
  ``REFAPI_LAB_REDIRECT_HOSTS`` (else ``403 HOST_NOT_ALLOWED``, as the proxy's);
  another scheme, a scheme-relative URL (``//host``), a backslash, a control
  character or an encoded percent sign (which a second decoding would read as
  another character) is ``400 VALIDATION_ERROR`` on ``url``, as browsers read
  each of those as another host than the text shows.

Every ``Location`` the lab writes carries the mount point (``Request.link``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote, urljoin, urlsplit, urlunsplit

from ..errors import ValidationError
from ..web import Request, Response
from ..web.origin import request_origin
from .errors import RedirectHostNotAllowed

if TYPE_CHECKING:
    from ..config import Config

URL_MAX = 2048  # characters of url: what browsers and caches keep of a URL
# A chain's longest: past what any client follows (requests stops at 30, curl at
# 50), so every chain a client's test asks for is served.
MAX_REDIRECTS = 100
STATUSES = frozenset({300, 301, 302, 303, 307, 308})
# What url may look like (``URL["pattern"]`` in lab/routes.py; 400 otherwise): not
# scheme-relative ("//host"); a scheme only if http or https followed by "//";
# no backslash (a browser reads it as "/", so "/\\host" is scheme-relative), no
# C0 control, space or DEL (stripped, so "/\t/host" is too), no encoded percent
# sign (%25: a second decoding would read "%252F%252Fhost" as "//host"), and in
# the host of an http(s) URL, square brackets only around an IPv6 address (RFC 3986
# section 3.2.2; an open one is no URL a parser can read: "http://[x" was a 500).
# A percent sign begins an escape of two hexadecimal digits (RFC 3986 section
# 2.1), never of another percent sign (%25: decoded again, it would be one).
_ESCAPE = r"%(?!25)[0-9A-Fa-f]{2}"
URL_PATTERN = (
    r"^(?!//)(?:[Hh][Tt][Tt][Pp][Ss]?://(?:\[[0-9A-Fa-f:.]+\])?"
    r"[^%/?#\[\]\\\x00-\x20\x7f]*"  # a host, with no escape: decoded, it is another
    rf"(?:[/?#](?:{_ESCAPE}|[^%\\\x00-\x20\x7f])*)?"
    rf"|(?![A-Za-z][A-Za-z0-9+.\-]*:)(?:{_ESCAPE}|[^%\\\x00-\x20\x7f])*)$"
)
_URL = re.compile(URL_PATTERN)
_URL_RULE = (
    "must be a relative URL, a path, or an http(s) URL, with no backslash, "
    "control character, space, percent sign but before two hexadecimal digits "
    "(in the host, none), encoded percent sign (%25) or square bracket in the host "
    "but around an IPv6 address, and not scheme-relative"
)


def redirect_n(request: Request, n: int) -> Response:
    """``/lab/redirect/{n}``: relative, or absolute with ``?absolute=true``."""
    absolute = request.arg("absolute")
    if absolute not in (None, "true", "false"):
        raise ValidationError.one("absolute", "must be true or false")
    kind = "absolute" if absolute == "true" else "relative"
    return _next(request, kind, n)


# n is 1 to MAX_REDIRECTS: the router's check, its schema's bounds (lab/params.py).
def relative_redirect(request: Request, n: int) -> Response:
    return _next(request, "relative", n)


def absolute_redirect(request: Request, n: int) -> Response:
    return _next(request, "absolute", n)


def redirect_to(request: Request, config: Config, url: str) -> Response:
    """``/lab/redirect-to``: ``url`` and ``status_code`` from the query."""
    status = _status(request.arg("status_code"))
    return _found(_target(request, url, config), status)


def _next(request: Request, kind: str, n: int) -> Response:
    path = f"/lab/{kind}-redirect/{n - 1}" if n > 1 else "/lab/get"
    location = request.link(path)
    if kind == "absolute":
        location = request_origin(request.environ) + location
    return _found(location)


def _status(raw: str | None) -> int:
    if raw is None:
        return 302
    if raw.isdigit() and int(raw) in STATUSES:
        return int(raw)
    allowed = ", ".join(map(str, sorted(STATUSES)))
    raise ValidationError.one("status_code", f"must be one of {allowed}")


def _target(request: Request, url: str, config: Config) -> str:
    """``url`` as ``Location``, or 400 on ``url`` (the module's rules); text that
    is not ASCII percent-encoded as UTF-8 (RFC 3987 section 3.1), since a field
    carries none (it went out as raw bytes, or failed as a 500)."""
    if len(url) > URL_MAX:
        raise ValidationError.one("url", f"must be at most {URL_MAX} characters")
    if not _URL.fullmatch(url):
        raise ValidationError.one("url", _URL_RULE)
    decoded = unquote(url)  # as a second decoding would read it
    try:
        parts, again = urlsplit(url), urlsplit(decoded)
    except ValueError:  # brackets around no IPv6 address ("http://[f]"), or a
        # host that reads as another under NFKC: no host on the list
        raise RedirectHostNotAllowed() from None
    # Decoded once more, it must still name what it names now: "%2F%2Fhost" would
    # be "//host".
    if (again.scheme, again.netloc) != (parts.scheme, parts.netloc) or (
        decoded.startswith(("/\\", "\\"))
    ):
        raise ValidationError.one("url", "must name the same host decoded again")
    if parts.scheme:  # http(s), the pattern says: this host, or one listed
        try:
            parts.port  # noqa: B018 (read, it checks the port: 0 to 65535)
        except ValueError:
            raise ValidationError.one("url", "must name a port of 0 to 65535") from None
        host = (parts.hostname or "").lower()
        own = (urlsplit(request_origin(request.environ)).hostname or "").lower()
        allowed = {own, *(name.lower() for name in config.lab_redirect_hosts)}
        if not host or host not in allowed:
            raise RedirectHostNotAllowed()
        return _ascii(url)
    if url.startswith("/"):  # a path: from the lab's root, its dot segments too
        return _ascii(request.link("/lab" + _resolved("/", url)))
    # Relative: against the URL asked for (its path, with the mount point).
    return _ascii(_resolved(request.script_root + request.path, url))


def _resolved(base: str, url: str) -> str:
    """``url`` resolved against the path ``base`` as RFC 3986 section 5.2 says, its
    dot segments removed: urljoin needs a base with a host for that ("../../x"
    from "/lab/redirect-to" came out "x"). A segment of dots written encoded
    (``%2e%2e``, ``.%2E``) is a dot segment too, as a browser reads it (the URL
    Standard), so it cannot climb above the lab's root unseen."""
    parts = urlsplit(url)
    path = "/".join(
        _DOTS.get(segment.lower(), segment) for segment in parts.path.split("/")
    )
    joined = urlsplit(urljoin("http://host" + base, parts._replace(path=path).geturl()))
    return urlunsplit(("", "", joined.path, joined.query, joined.fragment))


_DOTS = {"%2e": ".", ".%2e": "..", "%2e.": "..", "%2e%2e": ".."}


def _ascii(location: str) -> str:
    """``location`` with what is not ASCII percent-encoded, the rest as it is."""
    return location if location.isascii() else quote(location, safe=_PRINTABLE)


_PRINTABLE = "".join(map(chr, range(0x21, 0x7F)))


def _found(location: str, status: int = 302) -> Response:
    return Response(b"", status, [("Location", location)])
