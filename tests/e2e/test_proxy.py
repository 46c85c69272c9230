"""The proxy over gunicorn, configured only from the environment: an allow-listed
upstream on loopback passes, the same address without the opt-in is refused, and
upstreams that trickle a byte at a time hold no worker past the total deadline."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote

import pytest

from tests.handlers.test_proxy import Upstream, UpstreamServer

pytestmark = pytest.mark.e2e

DEADLINE = 1.5  # REFAPI_PROXY_TOTAL_TIMEOUT for the trickle test
SLACK = 2.5  # seconds a loaded machine may add to it


class CountingUpstream(Upstream):
    """``Upstream``, releasing ``arrived`` as each trickle request comes in, and
    setting ``slow`` as a slow one does."""

    arrived = threading.Semaphore(0)
    slow = threading.Event()

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path.startswith("/trickle"):
            self.arrived.release()
        if self.path.startswith("/slow"):
            self.slow.set()
        super().do_GET()


@pytest.fixture
def upstream() -> Iterator[int]:
    server = UpstreamServer(CountingUpstream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.release.set()
    server.shutdown()
    server.server_close()


def test_the_proxy_fetches_an_allowed_upstream_and_refuses_loopback(
    gunicorn, pool, upstream
):
    allowed = f"127.0.0.1:{upstream}+private,localhost:{upstream}"
    # Two slots: a fetch is slow work, which holds at most all but one (slots.py).
    server = gunicorn(workers=2, env={"REFAPI_PROXY_ALLOWED_HOSTS": allowed})

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
    # Two of the three workers (slow work holds at most all but one) each fetch
    # from an upstream that sends a byte every 0.1 s for 15 s: no read time-out
    # fires, only the total deadline.
    server = gunicorn(
        workers=3,
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
        for _ in fetches:  # both fetching workers are now inside a fetch
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
    # A worker past its timeout gets SIGABRT from its master. No setting lets a
    # request outlast the timeout (the proxy's deadline and the lab's delays are
    # under half of it, checked at start), so the signal is sent here, mid-fetch,
    # to every worker. Nothing was wrong with the request: 503.
    allowed = f"127.0.0.1:{upstream}+private"
    server = gunicorn(workers=2, env={"REFAPI_PROXY_ALLOWED_HOSTS": allowed})
    url = quote(f"http://127.0.0.1:{upstream}/slow", safe="")
    CountingUpstream.slow.clear()
    with ThreadPoolExecutor(1) as client:
        asked = client.submit(
            pool.request, "GET", server.url(f"/api/proxy.php?url={url}")
        )
        assert CountingUpstream.slow.wait(10), "the fetch never reached the upstream"
        for pid in server.serving_pids():
            os.kill(pid, signal.SIGABRT)
        answer = asked.result(timeout=20)
    assert answer.status == 503, answer.data
    assert answer.headers["Retry-After"].isdigit()
    assert json.loads(answer.data)["code"] == "UNAVAILABLE"
    assert "Error handling request" not in server.error_log()


# The docs' own allow list (docs/api.md, "The proxy"): the service may fetch itself.
ITSELF = "127.0.0.1+private,localhost"
LOOP_DEADLINE = 6.0  # REFAPI_PROXY_TOTAL_TIMEOUT: how long a loop held a worker
HEALTH_WAIT = 3.0  # /healthz must answer well within it


def deepest_chain(server, proxy_path: str, inner: str) -> tuple[int, str]:
    """The most proxy requests through ``proxy_path`` that nest in a ``url`` of
    2,048 characters, each level's URL the next one's ``url``, down to ``inner``:
    how many, and the outermost request's path."""
    levels, url = 0, server.url(inner)
    while True:
        outer = server.url(f"{proxy_path}?url={quote(url, safe='')}")
        if len(outer) > 2048:
            return levels + 1, f"{proxy_path}?url={quote(url, safe='')}"
        levels, url = levels + 1, outer


@pytest.mark.parametrize(
    ("proxy_path", "status", "code"),
    [
        ("/api/proxy.php", 400, "VALIDATION_ERROR"),
        # gunicorn decodes %2F in the path, so this reaches the proxy too, though as
        # a URL (RFC 3986) it is not the proxy's path: the second hop refuses it.
        ("/api%2Fproxy.php", 508, "LOOP_DETECTED"),
    ],
    ids=["its-own-path", "another-spelling"],
)
def test_a_url_that_proxies_to_the_proxy_is_refused_and_holds_no_worker(
    gunicorn, anon_pool, proxy_path, status, code
):
    # As long as fits in 2,048 characters: without the refusal, every level held a
    # worker until the deadline, and /healthz waited for one.
    server = gunicorn(
        workers=2,
        env={
            "REFAPI_PROXY_ALLOWED_HOSTS": ITSELF,
            "REFAPI_PROXY_TOTAL_TIMEOUT": str(LOOP_DEADLINE),
        },
    )
    levels, path = deepest_chain(server, proxy_path, "/healthz")
    assert levels >= 10

    def proxied():
        return anon_pool.request("GET", server.url(path), retries=False)

    with ThreadPoolExecutor(1) as executor:
        loop = executor.submit(proxied)
        health = anon_pool.request(
            "GET", server.url("/healthz"), timeout=HEALTH_WAIT, retries=False
        )
        # Refused at once: the answer comes well before the deadline it once took.
        answer = loop.result(timeout=HEALTH_WAIT)
    assert health.status == 200
    assert answer.status == status, answer.data
    assert json.loads(answer.data)["code"] == code
    assert server.log_failures() == []


def test_a_request_carrying_the_services_own_via_is_508_on_slow_routes_only(
    gunicorn, anon_pool, upstream
):
    allowed = f"{ITSELF},127.0.0.1:{upstream}+private"
    server = gunicorn(workers=2, env={"REFAPI_PROXY_ALLOWED_HOSTS": allowed})

    def get(path: str, via: str | None = None):
        headers = {"Via": via} if via else {}
        return anon_pool.request("GET", server.url(path), headers=headers)

    echoed = get(f"/api/proxy.php?url={quote(f'http://127.0.0.1:{upstream}/via')}")
    via = json.loads(echoed.data)["via"]
    assert via.startswith("1.1 refapi-") and len(via) == len("1.1 refapi-") + 8
    assert str(server.port) not in via and "127.0.0.1" not in via

    refused = get(f"/api/proxy.php?url={quote(server.url('/v1/todos/3'))}", via)
    assert refused.status == 508
    assert json.loads(refused.data)["code"] == "LOOP_DETECTED"
    # Fetching the service itself is no loop (docs/api.md), nor is a plain request.
    fetched = get(f"/api/proxy.php?url={quote(server.url('/v1/todos/3'), safe='')}")
    assert (fetched.status, json.loads(fetched.data)["id"]) == (200, 3)
    assert get("/v1/todos/3", via).status == 200
    # The lab's delay would hold a slot for the proxy that waits on it: 508 too.
    delay = get("/lab/delay/1", via)
    assert (delay.status, json.loads(delay.data)["code"]) == (508, "LOOP_DETECTED")


def test_a_loop_through_two_services_is_refused_by_the_first_it_returns_to(
    gunicorn, anon_pool, tmp_path
):
    # Two services with their own secret keys, so their own pseudonyms, each
    # fetching the other's proxy by a spelling that is not its own path: the first
    # one the loop comes back to finds itself in the Via the other passed on.
    def service(name: str):
        return gunicorn(
            workers=2,
            db_path=tmp_path / f"{name}.db",
            env={
                "REFAPI_PROXY_ALLOWED_HOSTS": ITSELF,
                "REFAPI_PROXY_TOTAL_TIMEOUT": str(LOOP_DEADLINE),
                "REFAPI_SECRET_KEY": f"the key of {name}, long enough to sign",
            },
        )

    first, second = service("first"), service("second")
    url = first.url("/v1/todos/3")
    for server in (first, second) * 3:  # the outermost to the second
        url = server.url(f"/api%2Fproxy.php?url={quote(url, safe='')}")
    path = f"/api/proxy.php?url={quote(url, safe='')}"  # to the first service
    answer = anon_pool.request(
        "GET", first.url(path), timeout=HEALTH_WAIT, retries=False
    )
    assert answer.status == 508, answer.data
    assert json.loads(answer.data)["code"] == "LOOP_DETECTED"
