"""The proxy over gunicorn, configured only from the environment: an allow-listed
upstream on loopback passes, the same address without the opt-in is refused, and
upstreams that trickle a byte at a time hold no worker past the total deadline."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import ThreadingHTTPServer
from urllib.parse import quote

import pytest

from tests.handlers.test_proxy import Upstream

pytestmark = pytest.mark.e2e

DEADLINE = 1.5  # REFAPI_PROXY_TOTAL_TIMEOUT for the trickle test
SLACK = 2.5  # seconds a loaded machine may add to it


class CountingUpstream(Upstream):
    """``Upstream``, releasing ``arrived`` as each trickle request comes in."""

    arrived = threading.Semaphore(0)

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path.startswith("/trickle"):
            self.arrived.release()
        super().do_GET()


@pytest.fixture
def upstream() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), CountingUpstream)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_the_proxy_fetches_an_allowed_upstream_and_refuses_loopback(
    gunicorn, pool, upstream
):
    allowed = f"127.0.0.1:{upstream}+private,localhost:{upstream}"
    server = gunicorn(workers=1, env={"REFAPI_PROXY_ALLOWED_HOSTS": allowed})

    def proxy(url: str):
        return pool.request(
            "GET", server.url(f"/api/proxy.php?url={quote(url, safe='')}")
        )

    passed = proxy(f"http://127.0.0.1:{upstream}/missing")
    assert passed.status == 404
    assert passed.headers["Content-Type"] == "application/json; charset=utf-8"
    assert json.loads(passed.data) == {"error": "no such thing"}
    refused = proxy(f"http://localhost:{upstream}/ok")  # listed, but no opt-in
    assert refused.status == 403
    assert json.loads(refused.data)["code"] == "HOST_NOT_ALLOWED"


def test_trickling_upstreams_end_at_the_deadline_and_free_every_worker(
    gunicorn, pool, anon_pool, upstream
):
    # Each of the two workers fetches from an upstream that sends a byte every
    # 0.1 s for 15 s: no read time-out fires, only the total deadline.
    server = gunicorn(
        workers=2,
        env={
            "REFAPI_PROXY_ALLOWED_HOSTS": f"127.0.0.1:{upstream}+private",
            "REFAPI_PROXY_TOTAL_TIMEOUT": str(DEADLINE),
        },
    )
    server.authorization  # logged in now, while a worker is free  # noqa: B018
    target = quote(f"http://127.0.0.1:{upstream}/trickle", safe="")
    started = time.monotonic()

    def trickle() -> tuple[int, dict, float]:
        answer = pool.request("GET", server.url(f"/api/proxy.php?url={target}"))
        return answer.status, json.loads(answer.data), time.monotonic() - started

    with ThreadPoolExecutor(2) as executor:
        fetches = [executor.submit(trickle) for _ in range(2)]
        for _ in fetches:  # both workers are now inside a fetch
            assert CountingUpstream.arrived.acquire(timeout=10)
        health = anon_pool.request("GET", server.url("/healthz"))
        health_seconds = time.monotonic() - started
        answers = [fetch.result() for fetch in fetches]

    assert health.status == 200
    assert health_seconds < DEADLINE + SLACK
    for status, body, seconds in answers:
        assert (status, body["code"]) == (504, "UPSTREAM_TIMEOUT")
        assert DEADLINE <= seconds < DEADLINE + SLACK
    assert server.log_failures() == []


def test_a_worker_its_master_stops_mid_request_answers_503_not_500(
    gunicorn, pool, upstream
):
    # The upstream's answer comes after the worker's timeout (2 s): the master
    # aborts the worker mid-request. Nothing was wrong with the request: 503.
    allowed = f"127.0.0.1:{upstream}+private"
    server = gunicorn(
        workers=1,
        env={"REFAPI_PROXY_ALLOWED_HOSTS": allowed, "REFAPI_WORKER_TIMEOUT": "2"},
    )
    url = quote(f"http://127.0.0.1:{upstream}/slow", safe="")
    answer = pool.request("GET", server.url(f"/api/proxy.php?url={url}"))
    assert answer.status == 503, answer.data
    assert answer.headers["Retry-After"].isdigit()
    assert json.loads(answer.data)["code"] == "UNAVAILABLE"
    assert "Error handling request" not in server.error_log()
