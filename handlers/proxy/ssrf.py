"""The proxy's guard against server-side request forgery (OWASP API7:2023).

A URL a client hands us names a host; this module decides whether we may fetch it
and, if so, at which address, so the fetch connects to the address that was checked
(a second lookup could answer differently: DNS rebinding). ``check_target`` is a
pure function of the URL, the allow-list, a resolver and the proxy's own path:

1. The URL: ``http`` or ``https``, a host, no userinfo (``http://good@evil/`` reads
   as the good host to a person and as the evil one to a client), printable ASCII.
   Anything else is ``400 VALIDATION_ERROR`` with the field ``url``, and so is a
   URL whose path is the proxy's own (``own_path``), on any host, since a host
   can go by any number of names: the proxy fetching itself would go round until
   the URL ran out (docs/api.md, "The proxy").
2. The allow-list: entries ``host[:port]``; an entry without a port allows any port.
   A host not on it is ``403 HOST_NOT_ALLOWED``.
3. The addresses: the host is resolved once (a numeric host in any form
   ``inet_aton`` knows, ``2130706433``, ``0x7f000001``, ``0177.0.0.1``, ``127.1``, is
   read by ``hosts.py``, not by a resolver) and every address must pass
   ``special_addresses.reach``, the project's table of the IANA special-purpose
   registries: a globally reachable address passes; loopback and private-use ones
   (RFC 1918, shared address space, unique-local) only for an entry ending in
   ``+private``; link-local, cloud metadata, documentation, multicast, reserved and
   the rest never. An IPv4 address carried in an IPv6 one (mapped, NAT64, 6to4,
   Teredo) is judged as itself. A name resolving to one public and one private
   address is refused: the client does not get to pick.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from ...errors import HostNotAllowed, UpstreamError, ValidationError
from ...hosts import Entry, Resolver, normal_host, numeric_host
from .special_addresses import IPAddress, Reach, reach

MAX_URL_LENGTH = 2048
DEFAULT_PORTS = {"http": 80, "https": 443}
_PRINTABLE = re.compile(r"[!-~]+")  # no space, no control, ASCII only
# The URLs the OpenAPI document promises are well-formed: http or https, a host (a
# name whose last label starts with a letter, so it is never read as a number; a
# dotted IPv4 literal; a bracketed IPv6 literal, without an embedded IPv4 or a zone),
# an optional port up to 65535, a path or query of printable ASCII without a
# backslash. A pattern cannot say which hosts the allow-list names: that is 403.
_H16 = "[0-9A-Fa-f]{1,4}"
_IPV6 = "|".join(
    [
        f"(?:{_H16}:){{7}}{_H16}",
        f"(?:{_H16}:){{1,7}}:",
        *(f"(?:{_H16}:){{1,{7 - n}}}(?::{_H16}){{1,{n}}}" for n in range(1, 7)),
        f":(?::{_H16}){{1,7}}",
        "::",
    ]
)
_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_PORT = (
    "(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}"
    "|[0-9]{1,4})"
)
_HOST = (
    r"(?:(?:[A-Za-z0-9-]+\.)*[A-Za-z][A-Za-z0-9-]*\.?"
    rf"|(?:{_OCTET}\.){{3}}{_OCTET}"
    rf"|\[(?:{_IPV6})\])"
)
URL_SCHEMA = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_URL_LENGTH,
    "pattern": rf"^[Hh][Tt][Tt][Pp][Ss]?://{_HOST}(?::{_PORT})?(?:[/?][!-\[\]-~]*)?$",
    "description": "The http or https URL to fetch; no userinfo. Its host (and "
    "port, if the entry names one) must be on the allow-list (else 403): a name, "
    "an IPv4 literal or a bracketed IPv6 literal.",
}


@dataclass(frozen=True)
class Target:
    """A checked fetch: connect to ``address``, send ``Host: host_header``."""

    scheme: str
    host: str
    port: int
    address: str
    target: str  # the request target: path and query
    host_header: str


def check_target(
    url: str, allowed: Sequence[Entry], resolve: Resolver, *, own_path: str = ""
) -> Target:
    """The checked target for ``url``, or the error that refuses it; ``own_path``,
    the proxy's path as clients reach it (percent-encoded), is never fetched."""
    scheme, host, port, target = _parse_url(url)
    if own_path and _segments(target.partition("?")[0]) == _segments(own_path):
        raise ValidationError.one("url", "must not name this service's own proxy path")
    entry = next(
        (e for e in allowed if e.host == host and e.port in (None, port)), None
    )
    if entry is None:
        raise HostNotAllowed(details={"host": host, "port": port})
    addresses = _resolve(host, port, resolve)
    for address in addresses:
        if not _allowed_address(address, entry.private):
            raise HostNotAllowed(
                "The host resolves to an address the proxy may not reach.",
                details={"host": host, "port": port},
            )
    bracketed = f"[{host}]" if ":" in host else host
    default = port == DEFAULT_PORTS[scheme]
    host_header = bracketed if default else f"{bracketed}:{port}"
    return Target(scheme, host, port, str(addresses[0]), target, host_header)


def _parse_url(url: str) -> tuple[str, str, int, str]:
    def invalid(message: str) -> ValidationError:
        return ValidationError.one("url", message)

    if not url:
        raise invalid("is required")
    if len(url) > MAX_URL_LENGTH or not _PRINTABLE.fullmatch(url) or "\\" in url:
        raise invalid(f"must be printable ASCII of at most {MAX_URL_LENGTH} characters")
    try:
        split = urlsplit(url)
        port = split.port
    except ValueError:
        raise invalid("is not a valid URL") from None
    if split.scheme not in DEFAULT_PORTS:
        raise invalid("must be an http or https URL")
    if "@" in split.netloc:
        raise invalid("must not carry userinfo")
    try:
        host = normal_host(split.hostname or "")
    except ValueError:
        raise invalid("has a malformed host") from None
    if not host:
        raise invalid("must name a host")
    target = (split.path or "/") + (f"?{split.query}" if split.query else "")
    return split.scheme, host, port or DEFAULT_PORTS[split.scheme], target


def _segments(path: str) -> list[str]:
    # Segment by segment, each percent-decoded: /api/proxy%2Ephp is the same URL as
    # /api/proxy.php (RFC 3986 section 6.2.2.2), but /api%2Fproxy.php is not, since
    # an encoded slash is data within a segment. (A server that decodes it anyway
    # still routes it to the proxy: the Via check there refuses it, with 508.)
    return [unquote(segment) for segment in path.split("/")]


def _resolve(host: str, port: int, resolve: Resolver) -> list[IPAddress]:
    address = numeric_host(host)
    if address is not None:
        return [address]
    try:
        found = [ipaddress.ip_address(a.split("%")[0]) for a in resolve(host, port)]
    except (OSError, UnicodeError, ValueError):
        found = []
    if not found:
        raise UpstreamError("The upstream host name does not resolve.")
    return found


def _allowed_address(address: IPAddress, private: bool) -> bool:
    verdict = reach(address)
    return verdict is Reach.PUBLIC or (private and verdict is Reach.PRIVATE)
