"""Where a request was sent: its host and port, and its origin (scheme, host, port).

Both servers refuse a ``Host`` that is no host before the app (``serving/``,
``valid_host``); the app builds absolute URLs of what passes (the lab's ``url``
and absolute redirects) and compares an ``Origin`` with it (a session's CSRF
check). Werkzeug's ``get_host`` reads a host by its own, narrower rule (no
underscore: a Compose service's name) and answers ``""`` for what it refuses,
which made URLs such as ``http:///lab/get`` of hosts the servers had let through;
so the app reads the host by the servers' rule, here, once (docs/operating.md,
"What each server refuses itself").
"""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wsgiref.types import WSGIEnvironment

# RFC 9112 section 3.2: Host is uri-host [":" port] of RFC 3986 section 3.2.2: a
# name of unreserved characters, percent-escapes and sub-delims (empty too), or an
# IP literal in brackets; then any digits. Not Werkzeug's host_is_trusted, which
# also refuses what RFC 3986 allows (an underscore: a Compose service's name).
_HOST = re.compile(
    r"(?:\[(?P<literal>[0-9A-Fa-f:.]+|[vV][0-9A-Fa-f]+\.[\w\-.~!$&'()*+,;=:]+)\]"
    r"|(?:[\w\-.~!$&'()*+,;=]|%[0-9A-Fa-f]{2})*)(?::[0-9]*)?",
    re.ASCII,
)
_DEFAULT_PORTS = {"http": ":80", "https": ":443"}


def valid_host(value: str) -> bool:
    """Whether a ``Host`` field's value is a host and port: what both servers check
    before the app (``serving/``); the app builds absolute URLs of it."""
    found = _HOST.fullmatch(value)
    if found is None:
        return False
    literal = found["literal"]
    if literal is None or literal[0] in "vV":
        return True
    try:
        ipaddress.IPv6Address(literal)
    except ValueError:
        return False
    return True


def authority(scheme: str, host: str) -> str:
    """``host`` as a URL of ``scheme`` writes it, the scheme's own port left out
    (``example:80`` is ``example`` over http); ``""`` when it is no host."""
    if not valid_host(host):
        return ""
    default = _DEFAULT_PORTS.get(scheme)
    return host.removesuffix(default) if default else host


def request_host(environ: WSGIEnvironment) -> str:
    """The host and port the request was sent to, as the client wrote them: its
    ``Host`` field, or the server's name and port when it sent none or an empty one
    (HTTP/1.0); ``""`` when neither is a host (a host embedding the app that
    checks no ``Host``)."""
    host = environ.get("HTTP_HOST")
    if not host:
        name, port = environ.get("SERVER_NAME", ""), environ.get("SERVER_PORT", "")
        if ":" in name and not name.startswith("["):
            name = f"[{name}]"  # an IPv6 address, as a URL writes it
        host = f"{name}:{port}" if name and port else name
    return authority(environ.get("wsgi.url_scheme", "http"), host)


def same_origin(origin: str, environ: WSGIEnvironment) -> bool:
    """Whether an ``Origin`` field's value names the origin the request was sent
    to, both read alike: lower case, the scheme's own port left out (a client may
    write ``http://localhost:80`` where a browser writes ``http://localhost``)."""
    scheme, sep, host = origin.partition("://")
    here = environ.get("wsgi.url_scheme", "http")
    named = authority(here, host).lower() if sep and scheme.lower() == here else ""
    return bool(named) and named == request_host(environ).lower()


def request_origin(environ: WSGIEnvironment) -> str:
    """The origin the request was sent to, ``scheme://host[:port]`` (RFC 6454), as
    a browser's ``Origin`` writes it: no default port."""
    return f"{environ.get('wsgi.url_scheme', 'http')}://{request_host(environ)}"
