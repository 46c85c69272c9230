"""The SSRF guard as a pure function: URL, allow-list and resolver in, a checked
target (or the error refusing it) out. No network: the resolver is a dictionary."""

from __future__ import annotations

import ipaddress

import pytest

from refapi.config import Config
from refapi.errors import HostNotAllowed, UpstreamError, ValidationError
from refapi.handlers.proxy.ssrf import check_target
from refapi.hosts import parse_allow_list

NAMES = {"api.example": ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"]}


def resolve(host: str, port: int) -> list[str]:
    return NAMES.get(host, [])


@pytest.mark.parametrize(
    "host", ["2130706433", "0177.0.0.1", "0x7f000001", "127.1", "0x7f.1", "127.0.0.1"]
)
def test_every_numeric_spelling_of_loopback_is_one_address(host):
    allowed = parse_allow_list([f"{host}+private"])
    target = check_target(f"http://{host}:8080/x", allowed, resolve)
    assert target.address == "127.0.0.1"


def test_a_numeric_host_never_reaches_the_resolver():
    def resolver(host: str, port: int) -> list[str]:
        raise AssertionError(f"resolved {host}")

    allowed = parse_allow_list(["2130706433"])
    with pytest.raises(HostNotAllowed):
        check_target("http://2130706433/", allowed, resolver)


def test_the_target_connects_to_the_checked_address_and_names_the_host():
    allowed = parse_allow_list(["API.example:8443"])
    target = check_target("https://api.example:8443/v1/x?a=1#frag", allowed, resolve)
    assert (target.scheme, target.host, target.port) == ("https", "api.example", 8443)
    assert target.address == "93.184.215.14"
    assert target.target == "/v1/x?a=1"
    assert target.host_header == "api.example:8443"


def test_an_entry_with_a_port_allows_that_port_only():
    allowed = parse_allow_list(["api.example:8443"])
    with pytest.raises(HostNotAllowed):
        check_target("https://api.example/", allowed, resolve)


def test_a_name_that_does_not_resolve_is_502():
    with pytest.raises(UpstreamError):
        check_target(
            "http://gone.example/", parse_allow_list(["gone.example"]), resolve
        )


@pytest.mark.parametrize("url", ["http://256.1.1.1/", "http://[fe80::1%25eth0]/"])
def test_a_malformed_numeric_host_is_400(url):
    with pytest.raises(ValidationError):
        check_target(url, parse_allow_list(["x.example"]), resolve)


@pytest.mark.parametrize("entry", ["", "a.example/path", "u@a.example", "a.example:x"])
def test_a_malformed_allow_list_entry_fails_at_start(entry):
    with pytest.raises(ValueError, match="allow-list"):
        Config(proxy_allowed_hosts=(entry,))


def test_the_environment_sets_the_proxy():
    config = Config.from_env(
        {
            "REFAPI_PROXY_ALLOWED_HOSTS": "api.example, 127.0.0.1:8080+private",
            "REFAPI_PROXY_CONNECT_TIMEOUT": "1.5",
            "REFAPI_PROXY_READ_TIMEOUT": "4",
            "REFAPI_PROXY_TOTAL_TIMEOUT": "6.5",
            "REFAPI_PROXY_CA_FILE": "/etc/refapi/ca.pem",
        }
    )
    assert config.proxy_allowed_hosts == ("api.example", "127.0.0.1:8080+private")
    assert (config.proxy_connect_timeout, config.proxy_read_timeout) == (1.5, 4.0)
    assert config.proxy_total_timeout == 6.5
    assert Config.from_env({}).proxy_total_timeout == 10.0
    assert config.proxy_ca_file == "/etc/refapi/ca.pem"
    assert Config.from_env({}).proxy_allowed_hosts == ()  # empty: nothing is proxied


@pytest.mark.parametrize("value", ["0", "-1", "inf", "nan", "ten"])
def test_a_total_timeout_that_is_not_a_positive_number_fails_at_start(value):
    with pytest.raises(ValueError, match="REFAPI_PROXY_TOTAL_TIMEOUT|time-outs"):
        Config.from_env({"REFAPI_PROXY_TOTAL_TIMEOUT": value})


def _teredo(server: str, client: str) -> str:
    """A Teredo address (RFC 4380): prefix, server, flags and port, then the client
    address with every bit flipped."""
    value = 0x2001_0000 << 96 | int(ipaddress.IPv4Address(server)) << 64
    return str(
        ipaddress.IPv6Address(value | int(ipaddress.IPv4Address(client)) ^ 0xFFFFFFFF)
    )


PUBLIC, PRIVATE, NEVER = "public", "private", "never"

# (address, verdict): "public" passes any entry, "private" only a "+private" one,
# "never" no entry at all. The same on every Python version (ipaddress.is_global is
# not consulted: Python 3.11 and 3.13 disagree on 2002::/16).
ADDRESSES = [
    ("93.184.215.14", PUBLIC),
    ("8.8.8.8", PUBLIC),
    ("10.1.2.3", PRIVATE),
    ("172.16.0.1", PRIVATE),
    ("192.168.1.20", PRIVATE),
    ("127.0.0.1", PRIVATE),
    ("127.255.0.9", PRIVATE),
    ("100.64.0.1", PRIVATE),  # shared address space (carrier-grade NAT)
    ("100.100.100.200", NEVER),  # Alibaba Cloud's metadata, inside 100.64.0.0/10
    ("169.254.169.254", NEVER),
    ("169.254.10.1", NEVER),  # link-local
    ("0.0.0.0", NEVER),
    ("0.1.2.3", NEVER),
    ("192.0.0.8", NEVER),
    ("192.0.0.9", PUBLIC),  # PCP anycast: globally reachable inside 192.0.0.0/24
    ("192.0.0.10", PUBLIC),  # TURN anycast
    ("192.0.0.170", NEVER),
    ("192.0.2.1", NEVER),
    ("192.31.196.1", PUBLIC),  # AS112-v4
    ("192.88.99.1", NEVER),  # deprecated 6to4 relay anycast
    ("198.18.0.1", NEVER),
    ("198.51.100.1", NEVER),
    ("203.0.113.1", NEVER),
    ("224.0.0.1", NEVER),
    ("240.0.0.1", NEVER),
    ("255.255.255.255", NEVER),
    ("2606:2800:21f:cb07:6820:80da:af6b:8b2c", PUBLIC),
    ("::1", PRIVATE),
    ("::", NEVER),
    ("::a9fe:a9fe", NEVER),  # deprecated IPv4-compatible
    ("::ffff:8.8.8.8", PUBLIC),
    ("::ffff:127.0.0.1", PRIVATE),
    ("::ffff:169.254.169.254", NEVER),
    ("::ffff:0:808:808", PUBLIC),  # IPv4-translated
    ("::ffff:0:a00:1", PRIVATE),
    ("::ffff:0:a9fe:a9fe", NEVER),
    ("64:ff9b::808:808", PUBLIC),  # NAT64
    ("64:ff9b::a00:1", PRIVATE),
    ("64:ff9b::a9fe:a9fe", NEVER),
    ("64:ff9b:1::808:808", PUBLIC),  # NAT64, local-use prefix
    ("64:ff9b:1::a00:1", PRIVATE),
    ("64:ff9b:1::a9fe:a9fe", NEVER),
    ("2002:808:808::1", PUBLIC),  # 6to4
    ("2002:7f00:1::1", PRIVATE),
    ("2002:a9fe:a9fe::1", NEVER),
    (_teredo("8.8.8.8", "8.8.4.4"), PUBLIC),
    (_teredo("8.8.8.8", "10.0.0.1"), PRIVATE),
    (_teredo("10.0.0.1", "8.8.4.4"), PRIVATE),
    (_teredo("8.8.8.8", "169.254.169.254"), NEVER),
    (_teredo("169.254.169.254", "8.8.4.4"), NEVER),
    ("100::1", NEVER),  # discard-only
    ("2001:2::1", NEVER),  # benchmarking, inside 2001::/23
    ("2001:4:112::1", PUBLIC),  # AS112-v6, globally reachable inside 2001::/23
    ("2001:10::1", NEVER),  # deprecated ORCHID
    ("2001:20::1", PUBLIC),  # ORCHIDv2
    ("2001:db8::1", NEVER),
    ("3fff::1", NEVER),  # documentation since 2024
    ("5f00::1", NEVER),  # SRv6 SIDs
    ("4000::1", NEVER),  # outside global unicast 2000::/3
    ("fc00::1", PRIVATE),
    ("fd12:3456::1", PRIVATE),
    ("fd00:ec2::254", NEVER),  # AWS metadata, inside unique-local
    ("fe80::1", NEVER),
    ("fec0::1", NEVER),  # deprecated site-local
    ("ff02::1", NEVER),
]


@pytest.mark.parametrize(
    ("address", "verdict"), ADDRESSES, ids=[a for a, _ in ADDRESSES]
)
def test_each_address_gets_the_verdict_of_the_registries(address, verdict):
    def resolver(host: str, port: int) -> list[str]:
        return [address]

    for entry, passes in (
        ("probe.example", verdict == PUBLIC),
        ("probe.example+private", verdict in (PUBLIC, PRIVATE)),
    ):
        allowed = parse_allow_list([entry])
        if passes:
            target = check_target("http://probe.example/", allowed, resolver)
            assert ipaddress.ip_address(target.address) == ipaddress.ip_address(address)
        else:
            with pytest.raises(HostNotAllowed):
                check_target("http://probe.example/", allowed, resolver)


@pytest.mark.parametrize(
    "address",
    ["64:ff9b:1::a9fe:a9fe", "::ffff:0:a9fe:a9fe", "fec0::1", "::1", "127.0.0.1"],
)
def test_a_literal_address_in_the_url_is_judged_the_same(address):
    host = f"[{address}]" if ":" in address else address
    with pytest.raises(HostNotAllowed):
        check_target(f"http://{host}/", parse_allow_list([host]), resolve)
