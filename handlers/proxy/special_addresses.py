"""Which addresses the proxy may reach, written from the IANA registries.

The IANA IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890, with the
"Globally Reachable" column of RFC 8190) list the blocks set aside for a purpose;
an address in no block is an ordinary, globally reachable one. This table is the
project's own rather than ``ipaddress.is_global`` because that property changes
between Python versions (3.13 counts ``2002::/16`` as not global, 3.11 does not).

Each block gets one of three verdicts:

- ``PUBLIC``: marked globally reachable (True); the proxy may fetch it.
- ``PRIVATE``: loopback and private-use networks, where an operator runs services
  of its own; only an allow-list entry ending in ``+private`` reaches them.
- ``NEVER``: everything else not marked True (False, or N/A for a deprecated
  block), and cloud metadata addresses, which hand out credentials: no entry
  reaches them.

The most specific block decides (``192.0.0.9/32`` is reachable inside the
unreachable ``192.0.0.0/24``). An IPv6 address that carries an IPv4 one
(IPv4-mapped and -translated, NAT64, 6to4, Teredo) is judged as that IPv4 address:
a translator or tunnel delivers the request there, so the IPv4 host is what the
fetch reaches. For Teredo both the server and the client address must pass.
"""

from __future__ import annotations

import enum
import ipaddress
from collections.abc import Iterable

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class Reach(enum.IntEnum):
    """Ordered from most to least reachable, so ``max`` is the strictest."""

    PUBLIC = 0
    PRIVATE = 1
    NEVER = 2


PUBLIC, PRIVATE, NEVER = Reach.PUBLIC, Reach.PRIVATE, Reach.NEVER

IPV4_BLOCKS = (
    # IANA IPv4 Special-Purpose Address Registry
    ("0.0.0.0/8", NEVER),  # "This network" (RFC 791); 0.0.0.0 reaches this host
    ("10.0.0.0/8", PRIVATE),  # Private-Use (RFC 1918)
    ("100.64.0.0/10", PRIVATE),  # Shared Address Space (RFC 6598): inside a network
    ("127.0.0.0/8", PRIVATE),  # Loopback (RFC 1122)
    ("169.254.0.0/16", NEVER),  # Link Local (RFC 3927): instance metadata lives here
    ("172.16.0.0/12", PRIVATE),  # Private-Use (RFC 1918)
    ("192.0.0.0/24", NEVER),  # IETF Protocol Assignments (RFC 6890)
    ("192.0.0.0/29", NEVER),  # IPv4 Service Continuity Prefix (RFC 7335)
    ("192.0.0.8/32", NEVER),  # IPv4 dummy address (RFC 7600)
    ("192.0.0.9/32", PUBLIC),  # Port Control Protocol Anycast (RFC 7723)
    ("192.0.0.10/32", PUBLIC),  # Traversal Using Relays around NAT Anycast (RFC 8155)
    ("192.0.0.170/31", NEVER),  # NAT64/DNS64 Discovery (RFC 7050, RFC 8880)
    ("192.0.2.0/24", NEVER),  # Documentation, TEST-NET-1 (RFC 5737)
    ("192.31.196.0/24", PUBLIC),  # AS112-v4 (RFC 7535)
    ("192.52.193.0/24", PUBLIC),  # AMT (RFC 7450)
    ("192.88.99.0/24", NEVER),  # Deprecated, 6to4 Relay Anycast (RFC 7526): N/A
    ("192.168.0.0/16", PRIVATE),  # Private-Use (RFC 1918)
    ("192.175.48.0/24", PUBLIC),  # Direct Delegation AS112 Service (RFC 7534)
    ("198.18.0.0/15", NEVER),  # Benchmarking (RFC 2544)
    ("198.51.100.0/24", NEVER),  # Documentation, TEST-NET-2 (RFC 5737)
    ("203.0.113.0/24", NEVER),  # Documentation, TEST-NET-3 (RFC 5737)
    ("240.0.0.0/4", NEVER),  # Reserved (RFC 1112)
    ("255.255.255.255/32", NEVER),  # Limited Broadcast (RFC 919, RFC 8190)
    # Not in that registry, never one server: IPv4 Multicast Address Space (RFC 5771)
    ("224.0.0.0/4", NEVER),
    # Cloud metadata outside link-local: Alibaba Cloud's, inside Shared Address Space
    ("100.100.100.200/32", NEVER),
)

IPV6_BLOCKS = (
    # IANA IPv6 Special-Purpose Address Registry. The blocks that carry an IPv4
    # address (::ffff:0:0/96 IPv4-mapped, 64:ff9b::/96 and 64:ff9b:1::/48
    # IPv4-IPv6 Translation, 2001::/32 TEREDO, 2002::/16 6to4) are in EMBEDDED_IPV4.
    ("::1/128", PRIVATE),  # Loopback Address (RFC 4291)
    ("::/128", NEVER),  # Unspecified Address (RFC 4291)
    ("100::/64", NEVER),  # Discard-Only Address Block (RFC 6666)
    ("2001::/23", NEVER),  # IETF Protocol Assignments (RFC 2928)
    ("2001:1::1/128", PUBLIC),  # Port Control Protocol Anycast (RFC 7723)
    ("2001:1::2/128", PUBLIC),  # Traversal Using Relays around NAT Anycast (RFC 8155)
    (
        "2001:1::3/128",
        PUBLIC,
    ),  # DNS-SD Service Registration Protocol Anycast (RFC 9665)
    ("2001:2::/48", NEVER),  # Benchmarking (RFC 5180)
    ("2001:3::/32", PUBLIC),  # AMT (RFC 7450)
    ("2001:4:112::/48", PUBLIC),  # AS112-v6 (RFC 7535)
    ("2001:10::/28", NEVER),  # Deprecated, previously ORCHID (RFC 4843): N/A
    ("2001:20::/28", PUBLIC),  # ORCHIDv2 (RFC 7343)
    ("2001:30::/28", PUBLIC),  # Drone Remote ID Protocol Entity Tags (RFC 9374)
    ("2001:db8::/32", NEVER),  # Documentation (RFC 3849)
    ("2620:4f:8000::/48", PUBLIC),  # Direct Delegation AS112 Service (RFC 7534)
    ("3fff::/20", NEVER),  # Documentation (RFC 9637)
    ("5f00::/16", NEVER),  # Segment Routing (SRv6) SIDs (RFC 9602)
    ("fc00::/7", PRIVATE),  # Unique-Local (RFC 4193)
    ("fe80::/10", NEVER),  # Link-Local Unicast (RFC 4291)
    # Not in that registry: Site-Local, deprecated by RFC 3879 but still routed by
    # some stacks; Multicast (RFC 4291); and what lies outside Global Unicast
    # 2000::/3 in the IANA IPv6 Address Space registry (reserved by the IETF, the
    # deprecated IPv4-compatible ::/96 among it), so a block assigned there later is
    # refused before this table learns of it.
    ("fec0::/10", NEVER),
    ("ff00::/8", NEVER),
    ("::/3", NEVER),
    ("4000::/2", NEVER),
    ("8000::/1", NEVER),
    # Cloud metadata: AWS's IPv6 instance metadata, inside Unique-Local
    ("fd00:ec2::254/128", NEVER),
)

# (block, shift, mask): the embedded IPv4 address is
# (int(address) >> shift) & 0xFFFFFFFF, XOR mask. A block may carry two (Teredo).
EMBEDDED_IPV4 = (
    ("::ffff:0:0/96", 0, 0),  # IPv4-mapped Address (RFC 4291): the last 32 bits
    ("::ffff:0:0:0/96", 0, 0),  # IPv4-translated (RFC 2765): the last 32 bits
    ("64:ff9b::/96", 0, 0),  # IPv4-IPv6 Translation (RFC 6052): the last 32 bits
    ("64:ff9b:1::/48", 0, 0),  # IPv4-IPv6 Translation, local-use (RFC 8215)
    ("2002::/16", 80, 0),  # 6to4 (RFC 3056): bits 16 to 48
    ("2001::/32", 64, 0),  # TEREDO (RFC 4380): the server, bits 32 to 64
    ("2001::/32", 0, 0xFFFFFFFF),  # TEREDO: the client, the last 32 bits inverted
)


def _blocks(rows: Iterable[tuple[str, Reach]]) -> tuple[tuple[IPNetwork, Reach], ...]:
    # Most specific first, so the first block that holds an address decides.
    parsed = [(ipaddress.ip_network(block), verdict) for block, verdict in rows]
    return tuple(sorted(parsed, key=lambda row: -row[0].prefixlen))


_IPV4 = _blocks(IPV4_BLOCKS)
_IPV6 = _blocks(IPV6_BLOCKS)
_EMBEDDED = tuple(
    (ipaddress.IPv6Network(block), shift, mask) for block, shift, mask in EMBEDDED_IPV4
)


def reach(address: IPAddress) -> Reach:
    """The verdict on ``address``: PUBLIC, PRIVATE (``+private`` only) or NEVER."""
    if isinstance(address, ipaddress.IPv6Address):
        carried = [
            ipaddress.IPv4Address(((int(address) >> shift) & 0xFFFFFFFF) ^ mask)
            for block, shift, mask in _EMBEDDED
            if address in block
        ]
        if carried:
            return max(reach(ipv4) for ipv4 in carried)
        return _lookup(address, _IPV6)
    return _lookup(address, _IPV4)


def _lookup(address: IPAddress, blocks: tuple[tuple[IPNetwork, Reach], ...]) -> Reach:
    return next((verdict for block, verdict in blocks if address in block), PUBLIC)
