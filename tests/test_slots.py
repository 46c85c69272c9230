"""Slow work shares the host (slots.py): the proxy, the explainer and the lab's delay
together hold at most all but one of the host's slots, counted per host.

In process, on a host of two slots (``workers=2``): a share of one. The delay's
sleep is the test's, so a request made from inside it is made while the delay
holds its slot, and nothing waits. The share over gunicorn, under attack:
tests/e2e/test_slow_work.py.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from urllib.parse import quote

import pytest
import webtest

from refapi import create_app
from refapi.config import Config
from refapi.slots import Slots
from refapi.web.keys import via_pseudonym
from tests.handlers.test_proxy import Upstream, UpstreamServer
from tests.helpers import assert_error, operations_inline

SLOTS = {"workers": 2, "threads": 1}  # a share of one


@pytest.fixture(scope="module")
def upstream() -> Iterator[int]:
    server = UpstreamServer(Upstream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture
def host(config, store, clock, tmp_path) -> Callable[..., webtest.TestApp]:
    """An instance of a host of two slots; ``sleep`` is its delay's."""

    def make(sleep: Callable[[float], None] = clock.advance) -> webtest.TestApp:
        configured = replace(
            config, **SLOTS, proxy_allowed_hosts=("127.0.0.1+private",),
            data_dir=str(tmp_path),
        )  # fmt: skip
        made = create_app(configured, store=store, clock=clock, sleep=sleep)
        return webtest.TestApp(made)

    return make


def proxied(app: webtest.TestApp, url: str, **kw):
    return app.get(f"/api/proxy.php?url={quote(url, safe='')}", status="*", **kw)


def explained(app: webtest.TestApp, path: str):
    form = {"method": "GET", "path": path}
    return app.post_json("/lab/explain", form, status="*")


def test_a_worker_of_two_threads_keeps_one_from_slow_work(tmp_path, clock):
    # Granian deals a connection to one worker, whose threads alone answer it: slow
    # work on both of a worker's threads would hold what was dealt to it, with
    # slots of the host free (docs/operating.md, "Slow work shares the host").
    config = Config(workers=2, threads=2)  # four slots: a share of three
    first = Slots.configured(config, clock)
    assert (first.share, first.per_process) == (3, 1)
    second = Slots(3, str(tmp_path), clock, per_process=1)  # another instance
    one, two = {}, {}
    assert first.take(one, 4) == 0
    clock.advance(1)
    # The host has two slots free; this process's thread to spare is taken, by
    # either instance: refused, with the whole seconds until it should be free.
    assert first.take(two, 1) == 3
    assert second.take(two, 1) == 3
    assert two == {}
    first.release(one)
    assert second.take(two, 1) == 0
    # A worker of one thread (gunicorn's) has no share of its own: the host's.
    assert Slots.configured(Config(workers=3, threads=1), clock).per_process is None


def test_slow_work_takes_all_but_one_slot_of_the_host_and_no_more(tmp_path, clock):
    # Two instances of one host (two Slots on one folder): one count, not two.
    config = Config(workers=3, threads=1)  # three slots: a share of two
    first = Slots.configured(config, clock)
    first_of_host = Slots(config.slots - 1, str(tmp_path), clock)
    second_of_host = Slots(config.slots - 1, str(tmp_path), clock)
    assert first.share == 2
    one, two, three = {}, {}, {}
    assert first_of_host.take(one, 4) == 0
    clock.advance(1)
    assert second_of_host.take(two, 9) == 0
    # None left: refused, with the whole seconds until the soonest should end.
    assert first_of_host.take(three, 1) == 3
    assert second_of_host.take(three, 1) == 3
    assert three == {}
    # A request takes one slot at most, however often it asks.
    assert first_of_host.take(one, 4) == 0
    first_of_host.release(one)
    assert one == {}
    assert second_of_host.take(three, 1) == 0
    for held in (two, three):
        second_of_host.release(held)
    second_of_host.release(two)  # twice: nothing more to let go of
    assert first_of_host.take(one, 1) == first_of_host.take(two, 1) == 0


def test_beyond_the_share_the_proxy_and_the_explainer_are_busy_the_lab_429(
    host, clock, upstream
):
    # While a delay holds the share, from this instance and from another of the
    # host: every slow route is refused at once, the rest is served.
    inside = []

    def sleep(seconds: float) -> None:
        for app in (first, second):
            inside.append(
                (
                    proxied(app, f"http://127.0.0.1:{upstream}/ok"),
                    explained(app, "/v1/todos/1"),
                    app.get("/lab/delay/1", status="*"),
                    app.get("/healthz", status="*"),
                )
            )
        clock.advance(seconds)

    first, second = host(sleep), host()
    assert first.get("/lab/delay/3").json["seconds"] == 3
    for proxy, explainer, delay, health in inside:
        for busy in (proxy, explainer):
            assert_error(busy, 503, "BUSY")
            assert busy.headers["Retry-After"] == "1"
            assert "share of slow work" in busy.json["message"]
        assert_error(delay, 429, "RATE_LIMITED")
        assert delay.headers["Retry-After"] == "3"  # when the first one ends
        assert delay.json["details"] == {"retry_after": 3}
        assert delay.headers["Cache-Control"] == "no-store"
        assert health.status_int == 200
    # The delay's answer is closed: its slot is free for any of them.
    assert proxied(second, f"http://127.0.0.1:{upstream}/ok").status_int == 200
    assert explained(first, "/v1/todos/1").json["response"]["status"] == 200
    assert second.get("/lab/delay/1").json["seconds"] == 1


def test_the_explainer_explaining_a_proxy_fetch_takes_one_slot_not_two(host, upstream):
    app = host()
    path = f"/api/proxy.php?url={quote(f'http://127.0.0.1:{upstream}/ok', safe='')}"
    answer = explained(app, path)
    assert answer.status_int == 200
    inner = answer.json["response"]
    assert inner["status"] == 200, inner["body"]
    assert '"hello":"world"' in inner["body"]
    # And it let go of it: the share is free again.
    assert proxied(app, f"http://127.0.0.1:{upstream}/ok").status_int == 200


def test_a_slot_is_held_until_the_answer_is_closed(host, upstream):
    app = host()
    environ = webtest.TestRequest.blank("/lab/delay/2").environ
    started = []
    answer = app.app(
        environ, lambda status, headers, exc_info=None: started.append(status)
    )
    assert started == ["200 OK"]
    # Answered, not yet closed by the server: the slot is still held.
    assert_error(app.get("/lab/delay/1", status="*"), 429, "RATE_LIMITED")
    assert_error(proxied(app, f"http://127.0.0.1:{upstream}/ok"), 503, "BUSY")
    assert json.loads(b"".join(answer))["seconds"] == 2
    answer.close()
    assert app.get("/lab/delay/1").json["seconds"] == 1


def test_an_app_that_closes_lets_go_of_the_slots_of_answers_never_closed(host):
    # A host that drops an answer unclosed (PEP 3333 says it must close it) would
    # hold its slot for the process's life; the app's close() lets go of it.
    dropped = host()
    environ = webtest.TestRequest.blank("/lab/delay/2").environ
    dropped.app(environ, lambda status, headers, exc_info=None: None)
    other = host()
    assert_error(other.get("/lab/delay/1", status="*"), 429, "RATE_LIMITED")
    dropped.app.close()
    assert other.get("/lab/delay/1").json["seconds"] == 1


def test_a_fetch_that_fails_lets_go_of_its_slot_at_once(host, upstream):
    app = host()
    assert_error(
        proxied(app, f"http://127.0.0.1:{upstream}/text"), 502, "UPSTREAM_ERROR"
    )
    assert app.get("/lab/delay/1").json["seconds"] == 1


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH", "DELETE"])
def test_a_delay_that_came_through_this_services_proxy_is_508(
    host, config, store, clock, method
):
    app = host()
    ours = via_pseudonym(config, store)
    before = clock()
    for via in (f"1.1 {ours}", f"1.1 refapi-0badc0de, 1.1 {ours} (refapi)"):
        refused = app.request(
            "/lab/delay/2", method=method, headers={"Via": via}, expect_errors=True
        )
        assert_error(refused, 508, "LOOP_DETECTED")
    assert clock() == before  # refused before it waited
    assert '"delay";r=' not in refused.headers["RateLimit"]  # nor charged the bucket
    # Another service's proxy, or a proxy of no service's: a delay like any other.
    for via in ("1.1 refapi-0badc0de", "1.1 cache.example"):
        served = app.request("/lab/delay/2", method=method, headers={"Via": via})
        assert served.json["seconds"] == 2


def test_the_documents_list_busy_and_the_delays_508(host):
    app = host()
    core = operations_inline(app.get("/openapi.json").json)["paths"]
    # The lab's rows are in the lab's own document (docs/lab.md).
    lab = operations_inline(app.get("/lab/openapi.json").json)["paths"]

    def codes(path: str, method: str, status: str) -> set[str]:
        paths = lab if path.startswith("/lab/") else core
        answer = paths[path][method]["responses"][status]
        return set(answer["content"]["application/json"]["examples"])

    assert "BUSY" in codes("/api/proxy.php", "get", "503")
    assert "BUSY" in codes("/lab/explain", "post", "503")
    for method in ("get", "post", "put", "patch", "delete"):
        assert "LOOP_DETECTED" in codes("/lab/delay/{seconds}", method, "508")
    headers = core["/api/proxy.php"]["get"]["responses"]["503"]["headers"]
    assert "Retry-After" in headers
