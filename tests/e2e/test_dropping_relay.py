"""A create whose answer is lost, sent again by ``refapi.client``, is made once.

In front of a real server (gunicorn, on SQLite or PostgreSQL, or two hosts on one
PostgreSQL database) sits a relay of the test's own on loopback: it forwards each
request whole, reads the server's whole answer, and, for the first ``drops``
connections, closes the client's connection without a byte of it (or, as a cut
``201``, with half of it). The server acted; the client cannot know. One client
call must leave one record, and a POST that takes no key must not be sent again
at all (docs/client.md, "Which requests are sent again").
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator

import pytest

from refapi.client import Client, RequestFailed
from tests.e2e.harness import GunicornServer
from tests.postgres import fresh_schema

pytestmark = pytest.mark.e2e

NO_WAIT = {"sleep": lambda seconds: None, "timeout": 10.0}


def read_message(conn: socket.socket) -> bytes:
    """One HTTP/1.1 message: its head, then a body of its ``Content-Length``."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


class DroppingRelay:
    """Forwards one exchange a connection to the upstreams in turn; the answers of
    the first ``drops`` connections are read whole and thrown away."""

    def __init__(
        self, upstreams: list[GunicornServer], drops: int, cut: bool = False
    ) -> None:
        self.upstreams = upstreams
        self.drops = drops
        self.cut = cut  # send the first half of a dropped answer, as a cut 201
        self.connections = 0
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return  # closed
            with self.lock:
                number, self.connections = self.connections, self.connections + 1
            threading.Thread(
                target=self._relay, args=(conn, number), daemon=True
            ).start()

    def _relay(self, conn: socket.socket, number: int) -> None:
        upstream = self.upstreams[number % len(self.upstreams)]
        with conn, socket.create_connection(("127.0.0.1", upstream.port), 10) as up:
            conn.settimeout(10)
            request = read_message(conn)
            if not request:
                return
            up.sendall(request)
            answer = read_message(up)
            if number >= self.drops:
                conn.sendall(answer)
            elif self.cut:
                conn.sendall(answer[: len(answer) // 2])

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def relay() -> Iterator[Callable[..., DroppingRelay]]:
    made: list[DroppingRelay] = []

    def start(
        upstreams: list[GunicornServer], drops: int, cut: bool = False
    ) -> DroppingRelay:
        made.append(DroppingRelay(upstreams, drops, cut))
        return made[-1]

    yield start
    for one in made:
        one.close()


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("two-hosts", marks=pytest.mark.postgres),
    ]
)
def hosts(request, gunicorn) -> Iterator[list[GunicornServer]]:
    """One host on SQLite, one on PostgreSQL, or two on one PostgreSQL database."""
    if request.param == "sqlite":
        yield [gunicorn(workers=2)]
        return
    with fresh_schema("relay") as url:
        count = 2 if request.param == "two-hosts" else 1
        servers = [gunicorn(workers=2, database_url=url) for _ in range(count)]
        yield servers
        for server in servers:
            server.stop()  # before the schema goes


def token(server: GunicornServer) -> str:
    return server.authorization.removeprefix("Bearer ")


def test_one_call_makes_one_article_however_many_answers_are_lost(hosts, relay):
    through = relay(hosts, drops=3)
    client = Client(through.url, token=token(hosts[0]), **NO_WAIT)
    made = client.request("POST", "/v1/articles", {"title": "Once"})
    assert made.status == 201 and made.headers["Idempotent-Replayed"] == "true"
    assert through.connections == 4  # three answers lost, the fourth replayed
    direct = Client(hosts[-1].base_url, **NO_WAIT)
    articles = direct.request("GET", "/v1/articles").json()["data"]
    assert [(a["id"], a["title"]) for a in articles] == [(made.json()["id"], "Once")]
    assert sum(h.answered("POST", "/v1/articles", 201) for h in hosts) == 4
    for host in hosts:
        assert host.log_failures() == []


def test_a_cut_answer_is_sent_again_under_its_key(gunicorn, relay):
    server = gunicorn(workers=2)
    through = relay([server], drops=2, cut=True)  # each 201 cut after its half
    client = Client(through.url, token=token(server), **NO_WAIT)
    made = client.request("POST", "/v1/articles", {"title": "Once"})
    assert made.headers["Idempotent-Replayed"] == "true"
    direct = Client(server.base_url, **NO_WAIT)
    assert len(direct.request("GET", "/v1/articles").json()["data"]) == 1


def test_one_call_makes_one_note_for_an_anonymous_caller(hosts, relay):
    through = relay(hosts, drops=2)
    client = Client(through.url, **NO_WAIT)
    made = client.request("POST", "/api/demo.php?action=create", {"text": "Once"})
    assert made.headers["Idempotent-Replayed"] == "true"
    direct = Client(hosts[0].base_url, **NO_WAIT)
    notes = direct.request("GET", "/api/demo.php?action=list").json()["data"]
    assert [note["text"] for note in notes] == ["Once"]


def test_a_get_is_sent_again_and_a_post_without_a_key_is_not(gunicorn, relay):
    server = gunicorn(workers=2)
    through = relay([server], drops=2)
    client = Client(through.url, token=token(server), **NO_WAIT)
    assert client.request("GET", "/v1/todos/1").status == 200
    assert through.connections == 3
    # An API key made by the first attempt, its answer (and secret) lost: it is
    # not made again behind the caller's back, who is told there was no answer.
    through.drops = 4
    with pytest.raises(RequestFailed) as raised:
        client.request("POST", "/api/keys", {"name": "ci", "userId": 1})
    assert raised.value.response is None
    assert through.connections == 4
    assert server.answered("POST", "/api/keys", 201) == 1
