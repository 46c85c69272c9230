"""The proxy's fetch: one GET of a checked target with urllib3, within one
deadline over the whole of it (docs/api.md, "The proxy").

It connects to the address ``ssrf`` checked while sending the host's name in
``Host`` (and, over https, in SNI and the certificate check, against
``REFAPI_PROXY_CA_FILE`` or the system store). The proxy loads this module on its
first request, not at start-up: urllib3 is 1.5 MiB of a worker's memory, and most
workers never proxy (docs/benchmarks.md, "Memory").
"""

from __future__ import annotations

import contextlib
import socket
import threading
from http.client import HTTPException

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import HTTPError, NewConnectionError
from urllib3.util.ssl_match_hostname import CertificateError

from ...config import Config
from ...errors import UpstreamError, UpstreamTimeout
from .ssrf import Target

CHUNK = 64 * 1024
# A connect or a read that took too long: urllib3's own error, or the socket's.
TIMEOUTS = (urllib3.exceptions.TimeoutError, TimeoutError)


def fetch(target: Target, config: Config, via: str) -> tuple[int, bytes]:
    """GET the target within ``proxy_total_timeout``, with ``Via`` as the proxy
    built it: its status and body."""
    headers = {"Host": target.host_header, "Accept": "application/json", "Via": via}
    with Deadline(config.proxy_total_timeout) as deadline:
        connection = _connection(target, config, deadline)
        try:
            connection.connect()
            connection.timeout = config.proxy_read_timeout  # each read from here on
            connection.request(
                "GET", target.target, headers=headers, preload_content=False
            )
            with connection.getresponse() as upstream:
                body = _read_capped(upstream, config.proxy_max_body_bytes)
        except NewConnectionError:  # a time-out error subclass: refused, unreachable
            raise UpstreamError("The upstream server could not be reached.") from None
        except (HTTPError, HTTPException, OSError, CertificateError) as error:
            if deadline.expired.is_set() or isinstance(error, TIMEOUTS):
                raise UpstreamTimeout() from None
            raise UpstreamError() from None
        finally:
            connection.close()
        if deadline.expired.is_set():  # a socket shut down reads as the body's end
            raise UpstreamTimeout()
    return upstream.status, body


def _connection(target: Target, config: Config, deadline: Deadline) -> Connection:
    """A connection to the checked address, its socket watched by ``deadline``;
    over https the certificate must name the host, not the address."""
    # Connecting is the one step the deadline cannot cut (there is no socket yet
    # to shut down), so its own time-out never runs past the deadline.
    connect = min(config.proxy_connect_timeout, deadline.seconds)
    connection: Connection
    if target.scheme == "https":
        connection = SecureConnection(
            target.address,
            target.port,
            timeout=connect,
            cert_reqs="CERT_REQUIRED",
            ca_certs=config.proxy_ca_file,
            server_hostname=target.host,
            assert_hostname=target.host,
        )
    else:
        connection = Connection(target.address, target.port, timeout=connect)
    connection.deadline = deadline
    return connection


class Deadline:
    """One deadline over a whole fetch, however slowly the upstream trickles.

    urllib3's time-outs bound each socket operation (a connect, one read), so an
    upstream sending a byte a second never trips a 10 s read time-out and holds
    the worker for as long as it likes. At the deadline a timer thread shuts down
    the sockets it watches, which ends whatever read is waiting (TLS handshake,
    headers or body) at once; ``expired`` then tells a cut from an upstream's fault.
    It watches a duplicate of each socket: shutting one down ends the connection for
    every descriptor, and the duplicate, closed only after the timer has stopped,
    keeps its number from being given to another connection meanwhile.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = threading.Event()
        self._watched: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)

    def __enter__(self) -> Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._timer.cancel()
        self._timer.join()
        for sock in self._watched:
            sock.close()

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._watched.append(sock.dup())
            if self.expired.is_set():  # it passed while connecting
                _shut(self._watched[-1])

    def _expire(self) -> None:
        with self._lock:
            self.expired.set()
            for sock in self._watched:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # the upstream may have closed it already
        sock.shutdown(socket.SHUT_RDWR)


class Connection(HTTPConnection):
    """urllib3's connection, its socket handed to a Deadline as soon as it exists."""

    deadline: Deadline

    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        self.deadline.watch(sock)
        return sock


class SecureConnection(Connection, HTTPSConnection):
    """The same over https: watched before the TLS handshake begins."""


def _read_capped(upstream: urllib3.BaseHTTPResponse, cap: int) -> bytes:
    declared = upstream.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > cap:
        raise _too_large(cap)
    body = bytearray()
    while chunk := upstream.read(CHUNK):
        body += chunk
        if len(body) > cap:
            raise _too_large(cap)
    return bytes(body)


def _too_large(cap: int) -> UpstreamError:
    return UpstreamError(
        "The upstream body is larger than the limit.", details={"maxBytes": cap}
    )
