"""The watchdog: a thread that cuts a PostgreSQL connection whose use outlives its
deadline.

A statement timeout is the server's, and never fires against a server that does
not answer while its kernel still answers for it (stopped, swapping, hung); TCP
keepalives and ``tcp_user_timeout`` do not fire then either. So each use of a
connection is watched (``watching``), and one that outlives its deadline has its
socket shut down, which ends the wait at once (an ``OperationalError``: a 503) and
the pool drops it (docs/several-hosts.md, "Outages").
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg

Connection = psycopg.Connection[tuple[Any, ...]]
WATCH_TICK_S = 0.05  # how often the watchdog looks


class _Watchdog:
    """Cuts the connections whose use outlives its deadline: a thread of the
    process shuts their sockets down, which ends a wait for the server at once (an
    ``OperationalError``: a 503), and the pool drops them. One per process,
    started by its first use (a fork's is its own)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watched: dict[int, tuple[float, Connection]] = {}
        self._cut: set[int] = set()
        self._pid = 0

    @contextlib.contextmanager
    def watching(self, conn: Connection, seconds: float) -> Iterator[None]:
        """Cut ``conn`` unless this block ends within ``seconds``."""
        if self._pid != os.getpid():
            self._start()
        key = id(conn)
        with self._lock:
            self._watched[key] = (time.monotonic() + seconds, conn)
        try:
            yield
        finally:
            with self._lock:
                del self._watched[key]
                cut = key in self._cut
                self._cut.discard(key)
            if cut:  # cut as it finished: the pool must not hand it out again
                conn.close()

    def _start(self) -> None:
        with self._lock:
            if self._pid == os.getpid():
                return
            self._watched, self._cut = {}, set()  # a parent's are not ours
            self._pid = os.getpid()
        threading.Thread(
            target=self._run, name="refapi-pg-watchdog", daemon=True
        ).start()

    def _run(self) -> None:
        while True:
            time.sleep(WATCH_TICK_S)
            now = time.monotonic()
            with self._lock:
                for key, (deadline, conn) in self._watched.items():
                    if deadline <= now and key not in self._cut:
                        self._cut.add(key)
                        _shut(conn)


WATCHDOG = _Watchdog()  # one thread a process, for every store in it


def _shut(conn: Connection) -> None:
    """Shut the connection's socket down: a wait on it ends, as after a reset."""
    with contextlib.suppress(OSError, psycopg.Error):
        fd = os.dup(conn.pgconn.socket)
        with socket.socket(fileno=fd) as sock:
            sock.shutdown(socket.SHUT_RDWR)
