"""PostgreSQL faults under a real gunicorn: the server stopped, killed, out of
connections, a statement past its time.

Each test runs a throwaway cluster of its own (``tests/pg_cluster.py``), so it may
take it down. gunicorn serves it with two workers, a pool timeout and a statement
timeout of one second. An outage is ``503 UNAVAILABLE`` with the error object and
``Retry-After``, answered within the pool timeout plus a second (as gunicorn's
access log times each request, so time spent queued behind another request does not
count), never a traceback, a ``500`` or a worker killed for time; ``/healthz`` names
the failing check; and the service recovers by itself once the cause is gone, with
the same workers. Each request goes on a new connection, so both workers take their
share.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import psycopg
import pytest
import urllib3

from tests.e2e.harness import GunicornServer, wait_until
from tests.pg_cluster import Cluster, throwaway_cluster

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.postgres]

POOL_TIMEOUT = STATEMENT_TIMEOUT = 1
SETTINGS = {
    "REFAPI_DB_POOL_TIMEOUT": str(POOL_TIMEOUT),
    "REFAPI_DB_STATEMENT_TIMEOUT": str(STATEMENT_TIMEOUT),
}
# The longest an answer may take, in the request log's milliseconds.
BOUND_MS = (max(POOL_TIMEOUT, STATEMENT_TIMEOUT) + 1) * 1000
RECOVERY_SECONDS = 30.0


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    # Few connections, so a test can hold them all: each worker's pool needs two.
    with throwaway_cluster(max_connections="12") as cluster:
        yield cluster


@pytest.fixture
def serve(cluster, gunicorn) -> Callable[[], GunicornServer]:
    """Two workers on the cluster (which stops after they do)."""
    return lambda: gunicorn(workers=2, database_url=cluster.url, env=SETTINGS)


@dataclass
class Answer:
    began: float
    ended: float
    status: int | None  # None: no answer at all (the connection failed)
    body: bytes
    headers: dict[str, str]


class Client:
    """One request per connection, never retried, with a read timeout well under
    gunicorn's worker timeout (30 s), so a parked worker shows as a failure here."""

    def __init__(self, server: GunicornServer) -> None:
        self.server = server
        self.pool = urllib3.PoolManager(
            retries=False, timeout=urllib3.Timeout(connect=5.0, read=15.0)
        )
        self.authorization = server.authorization  # logged in while all is well

    def request(self, method: str, path: str, **kwargs) -> Answer:
        headers = {"Connection": "close", **kwargs.pop("headers", {})}
        began = time.monotonic()
        try:
            response = self.pool.request(
                method, self.server.url(path), headers=headers, **kwargs
            )
            status, body, fields = response.status, response.data, response.headers
        except urllib3.exceptions.HTTPError as exc:
            status, body, fields = None, repr(exc).encode(), {}
        return Answer(began, time.monotonic(), status, body, dict(fields))

    def post(self, title: str) -> Answer:
        return self.request(
            "POST", "/v1/articles", json={"title": title},
            headers={"Authorization": self.authorization},
        )  # fmt: skip

    def health(self) -> Answer:
        return self.request("GET", "/healthz")

    def titles(self) -> dict[int, str]:
        """Every article, by id, page after page."""
        found, path = {}, "/v1/articles?limit=100"
        while path:
            page = self.request("GET", path)
            assert page.status == 200, page.body
            body = json.loads(page.body)
            found.update({a["id"]: a["title"] for a in body["data"]})
            cursor = body["nextCursor"]
            path = cursor and f"/v1/articles?limit=100&cursor={cursor}"
        return found


class Load:
    """Threads that write an article and read a todo, again and again, each on a
    new connection, keeping every answer and the articles acknowledged (201)."""

    def __init__(self, client: Client, threads: int) -> None:
        self.client = client
        self.answers: list[Answer] = []
        self.acknowledged: dict[int, str] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(n,)) for n in range(threads)
        ]

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(30)

    def _run(self, n: int) -> None:
        for i in itertools.count():
            if self._stop.is_set():
                return
            title = f"load {n}-{i}"
            posted = self.client.post(title)
            read = self.client.request("GET", "/v1/todos/1")
            with self._lock:
                self.answers += [posted, read]
                if posted.status == 201:
                    self.acknowledged[json.loads(posted.body)["id"]] = title

    def since(self, moment: float) -> list[Answer]:
        with self._lock:
            return [a for a in self.answers if a.began >= moment]

    def wait_for(self, what: str, enough: Callable[[list[Answer]], bool]) -> None:
        """Wait until the answers to requests made from now on are ``enough``."""
        now = time.monotonic()
        wait_until(lambda: enough(self.since(now)), RECOVERY_SECONDS, what)


def assert_unavailable(answer: Answer) -> None:
    assert answer.status == 503, (answer.status, answer.body)
    assert answer.headers["Retry-After"].isdigit()
    error = json.loads(answer.body)
    assert set(error) == {"code", "message", "details"}
    assert error["code"] == "UNAVAILABLE"


def assert_health_names_storage(answer: Answer) -> None:
    assert answer.status == 503, answer.body
    assert answer.headers["Retry-After"].isdigit()
    body = json.loads(answer.body)
    assert body["status"] == "unavailable"
    assert body["checks"]["storage"] == "unavailable"


def two_answered(answers: list[Answer]) -> bool:
    return sum(a.status in (200, 201) for a in answers) >= 4


def timed(server: GunicornServer) -> list[tuple[str, int, float]]:
    """Each request's path, status and milliseconds, from the request log."""
    found = server.requests()
    assert found, "the request log times no request"
    return [
        (line["message"].split(" ")[1], line["status"], line["durationMs"])
        for line in found
    ]


def assert_timely_and_unharmed(server: GunicornServer, workers: set[int]) -> None:
    """Every answer (``/healthz``'s too) came within the bound, none was a 500, no
    worker died, and nothing but the outages' own lines was logged as a failure."""
    answers = timed(server)
    assert [a for a in answers if a[2] > BOUND_MS] == []
    assert [a for a in answers if a[1] == 500] == []
    assert server.alive()
    assert server.serving_pids() == workers
    assert len(server.worker_pids()) == server.workers, "a worker was replaced"
    assert "WORKER TIMEOUT" not in server.error_log()
    unexpected = [
        line for line in server.log_failures() if "storage unavailable" not in line
    ]
    assert unexpected == []


def assert_every_worker_recovers(client: Client) -> None:
    """Health passes on every worker: each worker's pool makes its connection again
    by itself, the last at most a back-off after the server is back. One worker's
    success says nothing of the other's pool, and the kernel may hand a run of
    connections to one worker, so each answer is told apart by the worker that gave
    it: the first 20 characters of its request id (``middleware/request_id.py``)."""
    latest: dict[str, int | None] = {}

    def every_worker_passes() -> bool:
        answer = client.health()
        latest[answer.headers.get("X-Request-Id", "")[:20]] = answer.status
        passing = [w for w, status in latest.items() if w and status == 200]
        return len(passing) == client.server.workers

    wait_until(every_worker_passes, RECOVERY_SECONDS, "health to pass on every worker")


def test_stopped_then_killed_postgres_is_503_under_load_and_recovers_by_itself(
    cluster, serve
):
    server = serve()
    workers = server.serving_pids()
    client = Client(server)
    with Load(client, threads=2) as load:
        load.wait_for("answers before the fault", two_answered)
        for outage in (lambda: cluster.stop("fast"), cluster.kill):
            outage()
            down = time.monotonic()
            load.wait_for("answers during the outage", lambda a: len(a) >= 4)
            assert_health_names_storage(client.health())
            up = time.monotonic()
            cluster.start()
            outage_answers = [a for a in load.since(down) if a.ended < up]
            assert outage_answers
            for answer in outage_answers:
                assert_unavailable(answer)
            load.wait_for("answers after the restart", two_answered)
            assert_every_worker_recovers(client)

    answered = {a.status for a in load.answers}
    assert answered <= {200, 201, 503}, answered
    for answer in load.answers:
        if answer.status == 503:
            assert_unavailable(answer)
    # Every article acknowledged, before, during or after either fault, is there.
    stored = client.titles()
    assert load.acknowledged
    assert {i: stored.get(i) for i in load.acknowledged} == load.acknowledged
    assert_timely_and_unharmed(server, workers)


def hold_every_connection(cluster: Cluster) -> list[psycopg.Connection]:
    """Take every connection the cluster allows, after ending the service's own."""
    held: list[psycopg.Connection] = []

    def fill() -> None:
        while True:
            try:
                held.append(cluster.connect())
            except psycopg.OperationalError as exc:
                # Refused while connecting, so no SQLSTATE: only the message says.
                if "too many clients" not in str(exc):
                    raise
                return

    def others() -> list[int]:
        mine = [conn.info.backend_pid for conn in held]
        rows = (
            held[0]
            .execute(
                "SELECT pid FROM pg_stat_activity"
                " WHERE backend_type = 'client backend' AND pid <> ALL(%s)",
                [mine],
            )
            .fetchall()
        )
        return [pid for (pid,) in rows]

    def only_mine() -> bool:
        fill()
        pids = others()
        for pid in pids:
            held[0].execute("SELECT pg_terminate_backend(%s)", [pid])
        return not pids

    # A terminated session's slot frees once its process has gone: fill it then.
    wait_until(only_mine, RECOVERY_SECONDS, "every connection to be the test's")
    fill()
    return held


def assert_503_through_then_recovers(
    serve, fault: Callable[[], contextlib.AbstractContextManager], rounds: int
) -> None:
    """Within ``fault()``, writes and reads on every worker are 503 and health
    names storage; once it is over, a write passes, every worker recovers, what
    was acknowledged is there, and every answer came in time."""
    server = serve()
    workers = server.serving_pids()
    client = Client(server)
    assert client.post("before").status == 201
    with fault():
        for n in range(rounds):
            assert_unavailable(client.post(f"refused {n}"))
            assert_unavailable(client.request("GET", "/v1/todos/1"))
        assert_health_names_storage(client.health())
    wait_until(
        lambda: client.post("after").status == 201,
        RECOVERY_SECONDS,
        "a write once the fault is gone",
    )
    assert_every_worker_recovers(client)
    assert set(client.titles().values()) == {"before", "after"}
    assert_timely_and_unharmed(server, workers)


def test_postgres_out_of_connections_is_a_clear_503_not_a_hang(cluster, serve):
    @contextlib.contextmanager
    def every_connection_held() -> Iterator[None]:
        held = hold_every_connection(cluster)
        try:
            yield
        finally:
            for conn in held:
                conn.close()

    # Two rounds: each worker's pool meets "too many clients".
    assert_503_through_then_recovers(serve, every_connection_held, rounds=2)


def test_a_statement_past_the_statement_timeout_is_503(cluster, serve):
    server = serve()
    workers = server.serving_pids()
    client = Client(server)
    assert client.post("before").status == 201
    with cluster.connect(autocommit=False) as holder:
        # As a long migration or a bulk job might: reads go on, writes wait.
        holder.execute("LOCK TABLE articles IN EXCLUSIVE MODE")
        for n in range(2):  # on either worker
            assert_unavailable(client.post(f"timed out {n}"))
            assert client.request("GET", "/v1/articles/1").status == 200
        holder.rollback()
    assert client.post("after").status == 201
    # A write that timed out was rolled back whole.
    assert sorted(client.titles().values()) == ["after", "before"]
    assert client.health().status == 200
    assert_timely_and_unharmed(server, workers)


def test_health_in_an_outage_answers_in_time(cluster, gunicorn):
    # Health's two checks (storage, rateLimit) both need a connection: the second
    # must not wait out the pool again (it did: twice the pool timeout).
    pool_timeout = 2  # twice that is over the bound by a whole second
    env = {**SETTINGS, "REFAPI_DB_POOL_TIMEOUT": str(pool_timeout)}
    server = gunicorn(workers=2, database_url=cluster.url, env=env)
    client = Client(server)
    cluster.stop("fast")
    assert_health_names_storage(client.health())
    [(_, _, ms)] = [a for a in timed(server) if a[:2] == ("/healthz", 503)]
    assert ms <= (pool_timeout + 1) * 1000


def test_a_server_that_stops_answering_is_503_in_time_not_a_hung_worker(cluster, serve):
    # Stopped (SIGSTOP): its kernel still accepts and acknowledges, so no TCP
    # time-out fires and the server's statement timeout cannot: only the app's
    # own deadline ends each wait.
    @contextlib.contextmanager
    def frozen() -> Iterator[None]:
        cluster.freeze()
        try:
            yield
        finally:
            cluster.thaw()

    # Four rounds: on either worker, on pooled and on new connections.
    assert_503_through_then_recovers(serve, frozen, rounds=4)


def test_a_reload_while_the_database_is_gone_keeps_serving(cluster, gunicorn):
    # SIGHUP (systemctl reload) reads gunicorn.conf.py again; its check of the
    # settings must not log in to the database: a database dropped under a running
    # service is an outage the workers answer (503), and gunicorn exits when that
    # file fails.
    with cluster.connect(autocommit=True) as admin:
        admin.execute("CREATE DATABASE served")
    url = cluster.url.rsplit("/", 1)[0] + "/served"
    server = gunicorn(workers=2, database_url=url, env=SETTINGS)
    client = Client(server)
    assert client.health().status == 200
    with cluster.connect(autocommit=True) as admin:
        admin.execute("DROP DATABASE served WITH (FORCE)")
    assert_health_names_storage(client.health())
    server.process.send_signal(signal.SIGHUP)
    time.sleep(3)  # the file read again, the workers replaced
    assert server.alive(), server.log()[-3000:]
    assert_health_names_storage(client.health())
    with cluster.connect(autocommit=True) as admin:
        admin.execute("CREATE DATABASE served")
    wait_until(lambda: client.health().status == 200, RECOVERY_SECONDS, "recovery")
