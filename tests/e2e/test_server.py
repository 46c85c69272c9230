"""What only a real server shows: cursors that cross workers, logs, concurrency.

Each test drives four gunicorn workers over loopback. A cursor issued by one worker
is redeemed by whichever worker accepts the next connection, so a walk proves the
signing key is shared through the database, not held per process.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import signal
import socket
import threading
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlsplit

import pytest
import urllib3

import refapi
from refapi.config import VERSION
from refapi.storage import seed
from tests.e2e.harness import (
    http_pool,
    raw_request,
    simultaneous,
    wait_until,
    workers_that_served,
)

pytestmark = pytest.mark.e2e

_LINK_NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')
MAX_PAGES = 500


def _walk(server, pool, collection, limit, follow, between_pages=None) -> list:
    """Every record of a collection, page by page; checks each page's next links."""
    first_url = server.url(f"/v1/{collection}?limit={limit}")
    records, url = [], first_url
    for page_number in range(1, MAX_PAGES + 1):
        response = pool.request("GET", url)
        assert response.status == 200, response.data
        body = response.json()
        records.extend(body["data"])
        cursor = response.headers.get("X-Next-Cursor")
        link = response.headers.get("Link")
        assert body["nextCursor"] == cursor
        if cursor is None:
            assert link is None
            assert len(body["data"]) <= limit
            return records
        assert len(body["data"]) == limit
        target = urlsplit(_LINK_NEXT.fullmatch(link).group(1))
        assert target.path == f"/v1/{collection}"
        assert parse_qs(target.query) == {"cursor": [cursor], "limit": [str(limit)]}
        if follow == "link":
            url = urljoin(url, target.geturl())
        else:
            url = f"{first_url}&cursor={cursor}"
        if between_pages:
            between_pages(page_number)
    pytest.fail(f"walk did not end within {MAX_PAGES} pages")


@pytest.mark.parametrize("follow", ["x-next-cursor", "link"])
def test_items_walk_sees_every_item_once_in_order(server, pool, follow):
    records = _walk(server, pool, "items", 7, follow)

    expected = [
        {"id": n, "name": name, "createdAt": created}
        for n, name, created in seed.items()
    ]
    assert [r["id"] for r in records] == list(range(1, 1001))
    assert records == expected


class _Mutator(threading.Thread):
    """Per permit: create one article and delete the next one of ``doomed``."""

    def __init__(self, server, pool, doomed: list[int]) -> None:
        super().__init__(daemon=True)
        self.server, self.pool, self.doomed = server, pool, list(doomed)
        self.permits = threading.Semaphore(0)
        self.stopping = threading.Event()
        self.created: dict[int, str] = {}
        self.deleted: list[int] = []
        self.errors: list[str] = []

    def run(self) -> None:
        step = 0
        while not self.stopping.is_set() and self.doomed and not self.errors:
            if not self.permits.acquire(timeout=0.1):
                continue
            step += 1
            title = f"during {step}"
            created = self.pool.request(
                "POST", self.server.url("/v1/articles"), json={"title": title}
            )
            if created.status != 201:
                self.errors.append(f"POST {created.status} {created.data!r}")
                return
            self.created[created.json()["id"]] = title
            victim = self.doomed.pop()
            deleted = self.pool.request(
                "DELETE", self.server.url(f"/v1/articles/{victim}")
            )
            if deleted.status != 204:
                self.errors.append(f"DELETE {victim} {deleted.status} {deleted.data!r}")
                return
            self.deleted.append(victim)

    def steps_done(self) -> int:
        return len(self.deleted) + len(self.errors)


def test_article_walk_during_writes_sees_stable_articles_once(server, pool):
    # The articles other tests of the module made on the shared server, as they are.
    earlier = {r["id"]: r["title"] for r in _walk(server, pool, "articles", 50, "link")}
    before = {}
    for n in range(200):
        response = pool.request(
            "POST", server.url("/v1/articles"), json={"title": f"before {n}"}
        )
        assert response.status == 201, response.data
        before[response.json()["id"]] = f"before {n}"
    # Every fourth article may be deleted, in an order that hits both sides of the
    # walk's position; the others exist from before the walk until after it.
    doomed = sorted(before)[1::4]
    random.Random(7).shuffle(doomed)
    stable = set(earlier) | (set(before) - set(doomed))
    mutator = _Mutator(server, pool, doomed)

    def between_pages(page_number: int) -> None:
        # Let the writer run concurrently, at most one step behind the walk.
        mutator.permits.release()
        wait_until(
            lambda: mutator.steps_done() >= page_number - 1, 10, "the writer's step"
        )

    mutator.start()
    try:
        records = _walk(server, pool, "articles", 5, "link", between_pages)
    finally:
        mutator.stopping.set()
        mutator.join(10)
    assert not mutator.is_alive()

    assert mutator.errors == []
    assert len(mutator.deleted) >= 30
    ids = [r["id"] for r in records]
    assert ids == sorted(set(ids)), "ids repeated or out of order"
    assert stable <= set(ids), f"skipped: {sorted(stable - set(ids))}"
    titles = {**earlier, **before, **mutator.created}
    assert {r["id"]: r["title"] for r in records} == {i: titles[i] for i in ids}


@pytest.mark.parametrize(
    ("sent", "path", "status"),
    [
        ("e2e-abc-123", "/v1/todos/1", 200),
        ("e2e-abc-404", "/v1/todos/999", 404),
        (None, "/v1/todos/2", 200),
    ],
    ids=["kept", "kept-on-error", "generated"],
)
def test_request_log_line_carries_request_id(server, pool, sent, path, status):
    headers = {"X-Request-Id": sent} if sent else {}

    response = pool.request("GET", server.url(path), headers=headers)

    assert response.status == status
    request_id = response.headers["X-Request-Id"]
    if sent:
        assert request_id == sent
    else:
        assert re.fullmatch(r"[A-Za-z0-9._-]{1,128}", request_id)

    def logged() -> list[dict]:
        return [r for r in server.requests() if r["requestId"] == request_id]

    wait_until(logged, 5, "the request's log line")
    [line] = logged()
    assert line["message"] == f"GET {path} {status}"
    assert (line["route"], line["status"]) == ("/v1/todos/{id}", status)
    # gunicorn's own access log is off: the app's line is the only one.
    assert f"GET {path} HTTP/1.1" not in server.log()
    assert server.log_failures() == []


def test_four_workers_serve_todos_concurrently(server):
    expected = {
        n: {"userId": user, "id": n, "title": title, "completed": bool(done)}
        for n, user, title, done in seed.todos()
    }
    # Found in the shared server's log by their ids.
    ids = {n: f"todo-{n}" for n in range(1, 201)}
    answers = simultaneous(
        server,
        [
            raw_request("GET", f"/v1/todos/{n}", {"X-Request-Id": i})
            for n, i in ids.items()
        ],
    )

    assert [a.status for a in answers] == [200] * 200
    assert {n: json.loads(a.body) for n, a in enumerate(answers, 1)} == expected
    assert len(workers_that_served(server, list(ids.values()))) == 4
    assert len(server.worker_pids()) == 4
    assert server.alive()
    assert server.log_failures() == []


def test_a_test_server_leaves_other_control_sockets_alone(gunicorn, tmp_path):
    # gunicorn 25.1+ opens a control socket (for gunicornc), by default at
    # $XDG_RUNTIME_DIR/gunicorn.ctl, one path for every gunicorn of the user: each
    # server starting there replaces the socket and deletes it when it stops. The
    # one standing here plays `make run`'s; test servers open none.
    runtime = tmp_path / "xdg"
    runtime.mkdir()
    with socket.socket(socket.AF_UNIX) as standing:
        standing.bind(str(runtime / "gunicorn.ctl"))
        standing.listen()
        standing.settimeout(5)
        server = gunicorn(workers=1, env={"XDG_RUNTIME_DIR": str(runtime)})
        server.stop()
        # The path still leads to the standing socket: a connection reaches it.
        with socket.socket(socket.AF_UNIX) as probe:
            probe.connect(str(runtime / "gunicorn.ctl"))
            standing.accept()[0].close()
    assert "Control socket" not in server.log()


def test_a_quick_stop_answers_the_request_in_flight_503_said_as_a_stop(gunicorn):
    # SIGQUIT (or SIGINT) to the master stops each worker at once: a request in
    # flight is answered 503, and the log says the server stopped, not that the
    # request was bad (serving/gunicorn.py, handle_error).
    server = gunicorn(workers=2, env={"REFAPI_LAB_MAX_DELAY": "5"})
    answers: list[tuple[int, str]] = []

    def slow() -> None:
        response = urllib3.PoolManager(retries=False).request(
            "GET", server.url("/lab/delay/4")
        )
        answers.append((response.status, response.json()["code"]))

    thread = threading.Thread(target=slow)
    thread.start()
    # The delay holds a slot for slow work once it runs: its file says until when.
    folder = Path(re.search(r"locks in (\S+)", server.error_log())[1])
    wait_until(
        lambda: any(p.read_bytes().strip() for p in folder.glob("slot-*")),
        5, "the delay to start",
    )  # fmt: skip
    server.process.send_signal(signal.SIGQUIT)
    thread.join(10)
    assert answers == [(503, "UNAVAILABLE")]
    server.process.wait(10)
    [said] = [line for line in server.error_log().splitlines() if "request_id=" in line]
    assert "[INFO] Stopped before answering" in said, said


def test_a_reload_serves_the_release_installed_since(gunicorn, server_name, tmp_path):
    # docs/operating.md, "Upgrading": a reload (SIGHUP) starts new workers on the
    # release installed now, every module of it, those the master had imported for
    # its hooks too (the settings' checks, the folders: refapi.config among them).
    # Before, gunicorn's new workers ran those of the old release beside the others
    # of the new: a release that changed one could not boot, or served a mix; and
    # Granian's ran the old release whole.
    site = tmp_path / "site"  # an installed release, to be replaced in place
    shutil.copytree(
        Path(refapi.__file__).parent, site / "refapi",
        ignore=shutil.ignore_patterns("__pycache__"),
    )  # fmt: skip
    server = gunicorn(workers=2, env={"PYTHONPATH": str(site)}, server=server_name)
    pool = http_pool()

    def version() -> str:
        return pool.request("GET", server.url("/healthz")).json()["version"]

    assert version() == VERSION
    config = site / "refapi" / "config.py"
    # Another length: a compiled module is known stale by its source's size, or
    # its time in whole seconds.
    config.write_text(config.read_text().replace(f'"{VERSION}"', '"10.0.0"', 1))
    server.reload()
    assert {version() for _ in range(6)} == {"10.0.0"}
    assert server.log_failures() == []
