"""The SSRF guard as a pure function: URL, allow-list and resolver in, a checked
target (or the error refusing it) out. No network: the resolver is a dictionary."""

from __future__ import annotations

import pytest

from refapi.config import Config
from refapi.errors import HostNotAllowed, UpstreamError, ValidationError
from refapi.web.ssrf import check_target, parse_allow_list

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
            "REFAPI_PROXY_CA_FILE": "/etc/refapi/ca.pem",
        }
    )
    assert config.proxy_allowed_hosts == ("api.example", "127.0.0.1:8080+private")
    assert (config.proxy_connect_timeout, config.proxy_read_timeout) == (1.5, 4.0)
    assert config.proxy_ca_file == "/etc/refapi/ca.pem"
    assert Config.from_env({}).proxy_allowed_hosts == ()  # empty: nothing is proxied
