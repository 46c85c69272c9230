"""The plugin a client's suite runs with (tests/clients/lab_httpbin.py): its guard
keeps the run on loopback, and its server stands in for pytest-httpbin's."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.clients.lab_httpbin import LabServer, _loopback_only, _on_this_machine


@pytest.mark.parametrize(
    "host",
    [None, "", "localhost", "LOCALHOST.", "127.0.0.1", "127.9.9.9", "::1", "[::1]",
     b"127.0.0.1", "0.0.0.0", "::"],
)  # fmt: skip
def test_loopback_is_this_machine(host):
    assert _on_this_machine(host)


@pytest.mark.parametrize(
    "host",
    ["10.255.255.1", "192.168.1.1", "8.8.8.8", "2001:db8::1", "example.com",
     "doesnotexist.google.com", "localhost.example.com", "127.0.0.1.nip.io"],
)  # fmt: skip
def test_anything_else_is_not(host):
    assert not _on_this_machine(host)


def test_a_lookup_beyond_loopback_fails_as_an_unknown_name_would():
    with pytest.raises(socket.gaierror, match="beyond loopback"):
        _loopback_only("socket.getaddrinfo", ("example.com", 80, 0, 0, 0))
    _loopback_only("socket.getaddrinfo", ("localhost", 80, 0, 0, 0))


def test_a_connection_beyond_loopback_is_refused_before_it_is_made():
    with socket.socket() as sock:
        with pytest.raises(ConnectionRefusedError, match="beyond loopback"):
            _loopback_only("socket.connect", (sock, ("10.255.255.1", 80)))
        _loopback_only("socket.connect", (sock, ("127.0.0.1", 80)))
    _loopback_only("socket.bind", (None, ("10.255.255.1", 80)))  # not a lookup


def test_the_server_shows_what_pytest_httpbins_shows_under_the_lab():
    server = LabServer("https://127.0.0.1:8443/lab/")
    assert (server.url, server.protocol, server.host, server.port) == (
        "https://127.0.0.1:8443/lab", "https", "127.0.0.1", 8443,
    )  # fmt: skip
    assert server + "/get" == "https://127.0.0.1:8443/lab/get"
    assert server.join("/get") == server.join("get") == server + "/get"
    assert server.join("redirect/2?absolute=true#x", allow_fragments=False) == (
        "https://127.0.0.1:8443/lab/redirect/2?absolute=true#x"
    )


def test_its_fixtures_serve_a_suite_that_takes_pytests_warnings_as_errors(tmp_path):
    # As methods of a plugin object, its session and class fixtures were each a
    # PytestRemovedIn10Warning: httpcore's suite, which errors on warnings, failed
    # every test that takes httpbin at its setup.
    (tmp_path / "test_suite.py").write_text(
        "def test_plain(httpbin, httpbin_both):\n"
        "    assert httpbin.url.endswith('/lab') and httpbin_both.url\n"
        "class TestBased:\n"
        "    def test_class(self, class_based_httpbin, class_based_httpbin_secure):\n"
        "        assert self.httpbin.port == 1 and self.httpbin_secure.port == 2\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "lab_httpbin", "-p", "no:cacheprovider",
         "-W", "error", "-q", str(tmp_path / "test_suite.py")],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parent),
             "LAB_HTTPBIN_URL": "http://127.0.0.1:1/lab",
             "LAB_HTTPBIN_SECURE_URL": "https://127.0.0.1:2/lab"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout  # httpbin_both: plain and TLS
