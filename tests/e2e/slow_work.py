"""Slow work as an attacker uses it, against a gateway on gunicorn (or refapi alone
on Granian), while ``/healthz`` is probed: what tests/e2e/test_slow_work.py drives
and asserts, and `make bench-slow-work` (bench/slow_work.py) times.

The attacks, each sent again as soon as it is answered, for the whole drive, with
the README's tour allow-list (``127.0.0.1+private,localhost``: the service may
fetch itself):

- a proxied delay: the proxy fetching the service's own ``/lab/delay/5``;
- two proxied GETs of ``/v1/todos/1`` at once: each waits on a worker the other
  holds;
- the gateway's chain, ``/prod``'s proxy fetching ``/dev``'s, fetching
  ``/prod``'s: a worker held at every hop (on a server of one instance, such as
  Granian's, its prefix stands for both: ``instances``);
- a direct delay while the proxy fetches an upstream that answers in 5 s.

Each used to hold every worker of a host of two: ``/healthz`` waited seconds for
one, and the two GETs waited on each other until the proxy's deadline (504).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote

import urllib3

from tests.e2e.harness import GunicornServer

SLOW = 5  # seconds: the delay asked for, and the slow upstream's wait
PAUSE = 0.1  # seconds an attacker waits between two of its requests
PROBE_EVERY = 0.2  # seconds between two probes of /healthz
# The allow-list of the README's tour; an upstream of the test's own is on it too.
ALLOWED = "127.0.0.1+private,localhost"
# A probe must be answered while the slow answers go on: before they end.
PROBE_TIMEOUT = SLOW
NO_ANSWER = 0  # the status recorded for a request that timed out or failed


class SlowUpstream(BaseHTTPRequestHandler):
    """Answers JSON after ``SLOW`` seconds (sooner once the test is over)."""

    done = threading.Event()

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.done.wait(SLOW)
        body = json.dumps({"late": True}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def slow_upstream() -> Iterator[int]:
    """A slow upstream on loopback, serving while the block runs: its port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), SlowUpstream)
    server.daemon_threads = True
    SlowUpstream.done.clear()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        SlowUpstream.done.set()
        server.shutdown()
        server.server_close()


def instances(server: GunicornServer) -> tuple[str, str]:
    """The prefixes of the two instances the attacks go through: the gateway's
    ``/prod`` and ``/dev``; on a server of one instance mounted at ``SCRIPT_NAME``
    (Granian serves refapi alone, not the gateway), that one for both."""
    return (server.mount, server.mount) if server.mount else ("/prod", "/dev")


def attacks(server: GunicornServer, upstream: int) -> dict[str, list[str]]:
    """Each attack's paths, every one sent again and again by a thread of its own,
    so the paths of one attack are in flight together."""
    prod, dev = instances(server)

    def proxy(prefix: str, url: str) -> str:
        return f"{prefix}/api/proxy.php?url={quote(url, safe='')}"

    todo = server.url(f"{prod}/v1/todos/1")
    chain = proxy(prod, server.url(proxy(dev, server.url(proxy(prod, todo)))))
    return {
        "proxied delay": [proxy(prod, server.url(f"{prod}/lab/delay/{SLOW}"))],
        "two proxied GETs": [proxy(prod, todo)] * 2,
        "prod -> dev -> prod": [chain],
        "slow fetch": [proxy(prod, f"http://127.0.0.1:{upstream}/")],
        "delay during it": [f"{prod}/lab/delay/{SLOW}"],
    }


def lab_attacks(server: GunicornServer, upstream: int = 0) -> dict[str, list[str]]:
    """The lab's slow and long answers asked past their bounds, on both instances
    (docs/lab.md, "Streams"): each is clamped, and the waiting ones share the
    host's slots with the rest of slow work."""
    prod, dev = instances(server)
    return {
        "drips": [f"{prod}/lab/drip?duration=60&numbytes=999999",
                  f"{dev}/lab/drip?duration=60&numbytes=999999"],
        "events": [f"{prod}/lab/sse?count=1000&delay=60"],
        "long delays": [f"{dev}/lab/delay/{SLOW * 100}"] * 2,
        "long streams": [f"{prod}/lab/stream/1000000"],
    }  # fmt: skip


@dataclass
class Drive:
    """What a drive saw: each probe's status and seconds, each attack's statuses."""

    probes: list[tuple[int, float]] = field(default_factory=list)
    answers: dict[str, list[int]] = field(default_factory=dict)


def drive(
    server: GunicornServer,
    upstream: int,
    seconds: float,
    sending: Callable[[GunicornServer, int], dict[str, list[str]]] | None = None,
) -> Drive:
    """Send every attack of ``sending`` (``attacks``, unless said) over and over for
    ``seconds`` while ``/healthz`` of ``/prod`` and ``/dev`` is probed in turn; the
    answers once all are in."""
    seen = Drive()
    stop = time.monotonic() + seconds
    client = urllib3.PoolManager(maxsize=16, retries=False)
    lock = threading.Lock()

    def get(path: str, timeout: float) -> int:
        try:
            answer = client.request(
                "GET",
                server.url(path),
                timeout=timeout,
                headers={"Connection": "close"},
            )
        except urllib3.exceptions.HTTPError:
            return NO_ANSWER
        return answer.status

    def attack(name: str, path: str) -> None:
        while time.monotonic() < stop:
            status = get(path, 3 * SLOW)
            with lock:
                seen.answers.setdefault(name, []).append(status)
            time.sleep(PAUSE)

    def probe() -> None:
        turn = 0
        while time.monotonic() < stop:
            started = time.monotonic()
            status = get(f"{instances(server)[turn % 2]}/healthz", PROBE_TIMEOUT)
            seen.probes.append((status, time.monotonic() - started))
            turn += 1
            time.sleep(PROBE_EVERY)

    sent = [(name, path)
            for name, paths in (sending or attacks)(server, upstream).items()
            for path in paths]  # fmt: skip
    with ThreadPoolExecutor(len(sent) + 1) as executor:
        running = [executor.submit(attack, name, path) for name, path in sent]
        running.append(executor.submit(probe))
        for future in running:
            future.result()
    client.clear()
    return seen
