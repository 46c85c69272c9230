"""Hosts as the proxy compares them, and the entries of its allow-list.

A URL's host and an allow-list entry's are compared in one normal form: an address
in its standard spelling, whatever numeric spelling it came in (``2130706433``,
``0x7f000001``, ``0177.0.0.1`` and ``127.1`` are all what ``inet_aton(3)``, and so
the system resolver, reads as ``127.0.0.1``), else the lower-case name without a
final dot. ``Config`` parses the allow-list here once, so a malformed entry fails at
start; ``handlers/proxy/ssrf.py`` checks each URL the proxy is asked for against it.
It stands here, below ``config.py``, not in the proxy's package: the package's
first module is the handler, which imports the configuration.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# host, port -> its addresses: how the proxy resolves a host, passed in (the app's
# ``resolve``) so tests and hosts choose it without patching anything.
Resolver = Callable[[str, int], Sequence[str]]

PRIVATE_SUFFIX = "+private"
# A label of a host name: letters, digits and hyphens (and underscores, which
# resolvers take in names such as a compose service's), never starting or ending
# with a hyphen.
_LABEL = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)")
# One part of a numeric IPv4 host as inet_aton(3) reads it: hex, octal or decimal.
_NUMBER = re.compile(r"0[xX][0-9a-fA-F]*|0[0-7]*|[1-9][0-9]*")


@dataclass(frozen=True)
class Entry:
    host: str  # normalised as the URL's host is (see normal_host)
    port: int | None
    private: bool  # "+private": loopback and private-use addresses allowed


def parse_allow_list(entries: Sequence[str]) -> tuple[Entry, ...]:
    """Parse ``host[:port][+private]`` entries; ValueError for a malformed one."""
    parsed = []
    for raw in entries:
        text = raw.strip().lower()
        private = text.endswith(PRIVATE_SUFFIX)
        text = text.removesuffix(PRIVATE_SUFFIX)
        try:
            split = urlsplit(f"//{text}")
            port = split.port
            host = normal_host(split.hostname or "")
        except ValueError:
            host = ""
        if (
            not is_host(host) or split.username is not None or split.path
            or port == 0 or split.netloc.endswith(":")  # no port, or port 0
        ):  # fmt: skip
            raise ValueError(f"malformed proxy allow-list entry {raw!r}")
        parsed.append(Entry(host, port, private))
    return tuple(parsed)


def is_host(host: str) -> bool:
    """Whether ``host`` (lower case, an IPv6 address without brackets) is an IP
    address or a host name: not a URL, a pattern or an empty label (``a..b``)."""
    try:
        if numeric_host(host) is not None:
            return True
    except ValueError:
        return False
    name = host.removesuffix(".")
    return 0 < len(name) <= 253 and all(map(_LABEL.fullmatch, name.split(".")))


def normal_host(host: str) -> str:
    """The host as we compare and resolve it: an address in its standard form
    (whatever numeric spelling it came in), else the lower-case name."""
    address = numeric_host(host)
    return str(address) if address is not None else host.lower().rstrip(".")


def numeric_host(host: str) -> IPAddress | None:
    """The address a numeric host names, or None for a name; ValueError for a
    malformed IPv6 literal or an out-of-range IPv4 spelling."""
    if ":" in host:
        if "%" in host:
            raise ValueError("zone ids are not allowed")
        return ipaddress.IPv6Address(host)
    parts = host.split(".")
    # What inet_aton(3) accepts, and so what the system resolver would turn into an
    # address: one to four numbers; the last fills the remaining bytes.
    if not 1 <= len(parts) <= 4 or not all(_NUMBER.fullmatch(p) for p in parts):
        return None
    numbers = [_number(p) for p in parts]
    *leading, last = numbers
    if any(n > 255 for n in leading) or last >= 256 ** (5 - len(parts)):
        raise ValueError("numeric host out of range")
    value = 0
    for n in leading:
        value = value << 8 | n
    return ipaddress.IPv4Address(value << 8 * (5 - len(parts)) | last)


def _number(part: str) -> int:
    if part[:2].lower() == "0x":
        return int(part[2:] or "0", 16)
    return int(part, 8) if part.startswith("0") else int(part)


def default_resolver(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to, from the system resolver."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]
