"""The proxy over https: it connects to the checked address, yet the certificate must
still name the host of the URL, verified against ``REFAPI_PROXY_CA_FILE``. The test
makes its own CA and server certificate with the ``openssl`` command."""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote

import pytest
import webtest

from refapi import create_app
from tests.handlers.test_proxy import (
    TRICKLE_GAP,
    TRICKLE_SECONDS,
    Upstream,
    UpstreamServer,
)
from tests.helpers import assert_error, make_certificates


@pytest.fixture(scope="module")
def certificates(tmp_path_factory) -> Path:
    """A CA, and a server certificate it signed for ``up.example`` only."""
    return make_certificates(tmp_path_factory.mktemp("tls"), "DNS:up.example")


@pytest.fixture(scope="module")
def tls_upstream(certificates: Path) -> Iterator[int]:
    server = UpstreamServer(Upstream)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certificates / "leaf.pem", certificates / "leaf.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def loopback(host: str, port: int) -> list[str]:
    """Both names lead to the one server on loopback."""
    return ["127.0.0.1"] if host in ("up.example", "other.example") else []


@pytest.fixture
def tls_app(
    config, store, clock, certificates: Path, tls_upstream: int
) -> webtest.TestApp:
    config = replace(
        config,
        proxy_allowed_hosts=("up.example+private", "other.example+private"),
        proxy_ca_file=str(certificates / "ca.pem"),
    )
    return webtest.TestApp(create_app(config, store=store, clock=clock,
                                      resolve=loopback))  # fmt: skip


def fetch(app: webtest.TestApp, url: str):
    return app.get(f"/api/proxy.php?url={quote(url, safe='')}", expect_errors=True)


def test_certificate_naming_the_host_passes(tls_app, tls_upstream):
    response = fetch(tls_app, f"https://up.example:{tls_upstream}/ok")
    assert response.status_int == 200
    assert response.json["host"] == f"up.example:{tls_upstream}"


def test_certificate_naming_another_host_is_502(tls_app, tls_upstream):
    # Same address, same CA: only the name in the certificate differs.
    response = fetch(tls_app, f"https://other.example:{tls_upstream}/ok")
    assert_error(response, 502, "UPSTREAM_ERROR")


def test_certificate_from_an_unknown_ca_is_502(config, store, clock, tls_upstream):
    # The system store, which does not hold the test CA.
    config = replace(config, proxy_allowed_hosts=("up.example+private",))
    app = webtest.TestApp(create_app(config, store=store, clock=clock,
                                     resolve=loopback))  # fmt: skip
    response = fetch(app, f"https://up.example:{tls_upstream}/ok")
    assert_error(response, 502, "UPSTREAM_ERROR")


@pytest.fixture
def trickling_handshake() -> Iterator[int]:
    """A server that answers a TLS ClientHello with the start of a 16 KiB record,
    then one byte of it every TRICKLE_GAP: the handshake never completes, yet no
    read waits long enough to time out."""
    listener = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()

    def serve() -> None:
        with contextlib.suppress(OSError), listener.accept()[0] as client:
            client.recv(4096)  # the ClientHello
            client.sendall(b"\x16\x03\x03\x40\x00")  # handshake record, 16384 bytes
            stop = time.monotonic() + TRICKLE_SECONDS
            while time.monotonic() < stop and not done.wait(TRICKLE_GAP):
                client.sendall(b"\x00")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    done.set()
    listener.close()
    thread.join(5)


# When the deadline's shutdown lands while the socket is being wrapped for TLS, the
# SSLSocket made by the standard library is raised past without being closed: the
# exception's traceback holds it until the refusal is answered, where it is
# collected, its descriptor closed (middleware/errors.py), with a ResourceWarning.
# Seen twice in ten full runs with two suites at once; the 504 and its timing are
# what this tests.
@pytest.mark.filterwarnings(
    "ignore:unclosed <ssl.SSLSocket:ResourceWarning",
    "ignore:Exception ignored in. <ssl.SSLSocket"
    ":pytest.PytestUnraisableExceptionWarning",
)
def test_a_trickling_tls_handshake_is_504_at_the_total_deadline(
    config, store, clock, trickling_handshake
):
    config = replace(
        config,
        proxy_allowed_hosts=("up.example+private",),
        proxy_total_timeout=0.5,
    )
    app = webtest.TestApp(create_app(config, store=store, clock=clock,
                                     resolve=loopback))  # fmt: skip
    started = time.monotonic()
    response = fetch(app, f"https://up.example:{trickling_handshake}/ok")
    assert_error(response, 504, "UPSTREAM_TIMEOUT")
    assert 0.5 <= time.monotonic() - started < 2.0
