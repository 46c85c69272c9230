"""A pytest plugin for a client's own test suite, run unedited against refapi's lab
or against psf/httpbin (tests/clients/test_requests_suite.py; docs/lab.md,
"Checked by clients' own suites").

It runs inside the suite's own pytest (``-p lab_httpbin``, from the client's own
environment: it imports pytest and the standard library alone) and does three
things:

- **It keeps the suite on loopback.** An audit hook (PEP 578) refuses every name
  lookup and every connection beyond this machine's loopback, before a packet
  leaves: requests' timeout tests ask for ``10.255.255.1`` and one for
  ``doesnotexist.google.com``. Such a test fails the same way against both servers,
  so the comparison ignores it.
- **It writes each test's outcome** (passed, failed, skipped; a failure with its
  exception, in a line) as JSON to ``$LAB_HTTPBIN_RESULTS``, by pytest's node id.
- **With ``$LAB_HTTPBIN_URL`` set, it stands in for pytest-httpbin** (which the
  run turns off, ``-p no:httpbin``): the fixtures pytest-httpbin offers, of the
  same shape (``.url``, ``.host``, ``.port``, ``.protocol``, ``.join()``, ``+``),
  name the lab of a refapi server, plain (``$LAB_HTTPBIN_URL``) and over TLS
  (``$LAB_HTTPBIN_SECURE_URL``, its CA in ``$LAB_HTTPBIN_CA_BUNDLE``), so that
  ``httpbin("get")`` is ``<server>/lab/get``.
"""

from __future__ import annotations

import errno
import ipaddress
import json
import os
import socket
import sys
from pathlib import Path
from types import ModuleType
from urllib.parse import urljoin, urlsplit

import pytest

LOOPBACK_NAMES = frozenset({"", "localhost", "localhost."})


def _on_this_machine(host: object) -> bool:
    """Is ``host`` (a name or an address, as a socket call was given it) this
    machine: loopback, the unspecified address, or no host at all?"""
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    name = str(host).strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        address = ipaddress.ip_address(name.partition("%")[0])
    except ValueError:
        return False  # a name other than localhost: its lookup would leave
    return address.is_loopback or address.is_unspecified


def _loopback_only(event: str, args: tuple) -> None:
    """The audit hook: a lookup or a connection beyond loopback raises what a
    failed one raises, so the client reports it as it would any such failure."""
    if event in ("socket.getaddrinfo", "socket.gethostbyname"):
        if not _on_this_machine(args[0]):
            raise socket.gaierror(
                socket.EAI_NONAME, f"{args[0]!r}: beyond loopback, not looked up"
            )
    elif event == "socket.connect":
        sock, address = args
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            if not _on_this_machine(address[0]):
                raise ConnectionRefusedError(
                    errno.ECONNREFUSED, f"{address[0]}: beyond loopback, not reached"
                )


class LabServer:
    """What pytest-httpbin's ``Server`` shows of itself, for a server elsewhere:
    ``url`` is the lab's base, ``<scheme>://<host>:<port><mount>/lab``."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.url = url.rstrip("/")
        self.protocol = parts.scheme
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if parts.scheme == "https" else 80)

    def __add__(self, other: str) -> str:
        return self.url + other

    def join(self, url: str, allow_fragments: bool = True) -> str:
        """``url`` under the lab, as pytest-httpbin's join puts it under its root:
        ``/get`` and ``get`` are both ``<lab>/get``."""
        return urljoin(self.url + "/", url.lstrip("/"), allow_fragments)


class Outcomes:
    """Each test's outcome, by node id: ``passed`` only if its setup, call and
    teardown all passed; else that of the first phase that did not."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.found: dict[str, dict[str, str]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.found.get(report.nodeid, {}).get("outcome", "passed") != "passed":
            return
        outcome = report.outcome
        if hasattr(report, "wasxfail"):
            outcome = "xfailed" if report.skipped else "xpassed"
        self.found[report.nodeid] = {"outcome": outcome, "why": _why(report)}

    def pytest_sessionfinish(self) -> None:
        self.path.write_text(json.dumps(self.found, indent=1, sort_keys=True))


def _why(report: pytest.TestReport) -> str:
    """A failure's exception, in one line: ``AssertionError: assert 404 == 200``."""
    if not report.failed:
        return ""
    crash = getattr(report.longrepr, "reprcrash", None)
    text = getattr(crash, "message", None) or report.longreprtext.strip()
    return " ".join(text.split())[:300]


def pytest_configure(config: pytest.Config) -> None:
    """The guard, in every run; the outcomes and the lab's fixtures, if asked for."""
    sys.addaudithook(_loopback_only)
    results = os.environ.get("LAB_HTTPBIN_RESULTS")
    if results:
        config.pluginmanager.register(Outcomes(Path(results)), "lab-httpbin-outcomes")
    if os.environ.get("LAB_HTTPBIN_URL"):
        config.pluginmanager.register(lab_fixtures(), "lab-httpbin-fixtures")


def lab_fixtures() -> ModuleType:
    """pytest-httpbin's fixtures, by the same names and scopes, naming the lab.
    Plain functions in a module of their own, registered only with
    ``$LAB_HTTPBIN_URL``: as methods of an object, pytest 9.2 warns that a
    session's or a class's fixture will no longer be one in pytest 10 (and
    pytest looks for an object's fixtures on its type)."""

    @pytest.fixture(scope="session")
    def httpbin() -> LabServer:
        return LabServer(os.environ["LAB_HTTPBIN_URL"])

    @pytest.fixture(scope="session")
    def httpbin_secure() -> LabServer:
        return LabServer(os.environ["LAB_HTTPBIN_SECURE_URL"])

    @pytest.fixture(scope="session", params=["http", "https"])
    def httpbin_both(request, httpbin, httpbin_secure) -> LabServer:
        return httpbin if request.param == "http" else httpbin_secure

    @pytest.fixture(scope="class")
    def class_based_httpbin(request, httpbin) -> None:
        request.cls.httpbin = httpbin

    @pytest.fixture(scope="class")
    def class_based_httpbin_secure(request, httpbin_secure) -> None:
        request.cls.httpbin_secure = httpbin_secure

    @pytest.fixture
    def httpbin_ca_bundle(monkeypatch) -> None:
        """As pytest-httpbin's: the CA that signed the TLS server's certificate,
        trusted by requests through ``REQUESTS_CA_BUNDLE`` (the fixture's value is
        None, so ``verify=httpbin_ca_bundle`` reads it from there)."""
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", os.environ["LAB_HTTPBIN_CA_BUNDLE"])

    module = ModuleType("lab_httpbin_fixtures")
    for fixture in (
        httpbin, httpbin_secure, httpbin_both, class_based_httpbin,
        class_based_httpbin_secure, httpbin_ca_bundle,
    ):  # fmt: skip
        setattr(module, fixture.__name__, fixture)
    return module
