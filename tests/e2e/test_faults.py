"""Faults under a real gunicorn with four workers: the database file deleted and a
backup restored, the database unwritable, its write lock held by another process,
the rate-limit bucket file truncated or overwritten.

In each, health tells the truth on every worker, requests that need what is broken
answer ``503 UNAVAILABLE`` with ``Retry-After``, no worker dies, and the service
recovers by itself once the fault is gone. Each request goes on a new connection,
so the four workers all take their share.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import urllib3
from werkzeug.security import generate_password_hash

from refapi.storage.sqlite import SqliteStore
from refapi.web.auth import new_secret, secret_hash
from tests.conftest import ADMIN, skip_or_fail
from tests.e2e.harness import GUNICORN, ROOT, GunicornServer, wait_until
from tests.faults import backup, integrity, restore

pytestmark = pytest.mark.e2e

ROUNDS = 12  # requests per check: with four workers, each sees a few
NOW = 1_795_000_000.0


def mint_admin_token(store: SqliteStore) -> str:
    """``Bearer <token>`` of an admin made in ``store`` directly, as a login would."""
    user = store.create_user(
        ADMIN["email"], generate_password_hash(ADMIN["password"], "pbkdf2:sha256:1000"),
        "", "", "admin", NOW,
    )  # fmt: skip
    token = new_secret()
    store.create_tokens(
        new_secret(), {"bearer": secret_hash(token)}, time.time() + 3600,
        user_id=user["id"],
    )  # fmt: skip
    return f"Bearer {token}"


class Client:
    """One request per connection, never retried, bounded well under the worker
    timeout (30 s): a worker parked that long shows as a timeout here."""

    def __init__(
        self, server: GunicornServer, authorization: str | None = None
    ) -> None:
        self.server = server
        self.pool = urllib3.PoolManager(
            retries=False, timeout=urllib3.Timeout(connect=5.0, read=15.0)
        )
        self._authorization = authorization

    @property
    def authorization(self) -> str:
        """The admin's, logged in at the first write (a write needs a credential)."""
        return self._authorization or self.server.authorization

    def get(self, path: str) -> urllib3.BaseHTTPResponse:
        return self.pool.request(
            "GET", self.server.url(path), headers={"Connection": "close"}
        )

    def post(self, title: str) -> urllib3.BaseHTTPResponse:
        return self.pool.request(
            "POST",
            self.server.url("/v1/articles"),
            json={"title": title},
            headers={"Connection": "close", "Authorization": self.authorization},
        )


def assert_unavailable(response: urllib3.BaseHTTPResponse) -> None:
    assert response.status == 503, response.data
    assert response.headers["Retry-After"].isdigit()
    assert response.json()["code"] == "UNAVAILABLE"
    assert set(response.json()) == {"code", "message", "details"}


def assert_health(response: urllib3.BaseHTTPResponse, status: int, **checks) -> None:
    assert response.status == status, response.data
    body = response.json()
    assert body["status"] == ("ok" if status == 200 else "unavailable")
    assert body["checks"] == {"storage": "ok", "rateLimit": "ok", **checks}
    if status == 503:
        assert response.headers["Retry-After"].isdigit()


def assert_workers_never_died(server: GunicornServer) -> None:
    assert server.alive()
    assert len(server.worker_pids()) == server.workers, "a worker was replaced"
    assert re.findall(r"Worker \(pid:\d+\) .*", server.error_log()) == []
    # The fault's own 503s are logged as "storage unavailable"; nothing else may be.
    unexpected = [
        line for line in server.log_failures() if "storage unavailable" not in line
    ]
    assert unexpected == []


def assert_kept_once_stopped(server: GunicornServer, acknowledged: dict) -> None:
    """Stop ``server``; its file is whole and holds every acknowledged article."""
    server.stop()
    assert integrity(server.db_path) == "ok"
    with sqlite3.connect(server.db_path) as conn:
        stored = dict(conn.execute("SELECT id, title FROM articles").fetchall())
    conn.close()
    assert {i: stored.get(i) for i in acknowledged} == acknowledged


def admins(db_path: Path) -> int:
    with sqlite3.connect(db_path) as conn:
        [(count,)] = conn.execute("SELECT count(*) FROM users WHERE role = 'admin'")
    conn.close()
    return count


def titles(client: Client) -> list[str]:
    response = client.get("/v1/articles?limit=100")
    assert response.status == 200, response.data
    return [article["title"] for article in response.json()["data"]]


def assert_serves_the_backup(client: Client, kept: list[str]) -> None:
    """Every worker reads the backup holding ``kept``, and the next write takes
    the id after them: none handed out twice."""
    wait_until(
        lambda: all(titles(client) == kept for _ in range(ROUNDS)),
        10,
        "every worker to read the backup",
    )
    created = client.post("after the restore")
    assert created.status == 201
    assert created.json()["id"] == len(kept) + 1


# -- item 9: the database file deleted, then a backup restored -----------------------


def test_deleted_database_is_503_everywhere_until_a_backup_is_restored(
    gunicorn, tmp_path, server_name
):
    server = gunicorn(server=server_name)
    client = Client(server)
    kept = [f"kept {n}" for n in range(8)]
    for title in kept:
        assert client.post(title).status == 201
    backup(server.db_path, tmp_path / "backup.db")
    for n in range(8):
        assert client.post(f"after the backup {n}").status == 201

    server.db_path.unlink()  # as `rm refapi.db`: the -wal and -shm stay behind
    for n in range(ROUNDS):
        assert_unavailable(client.post(f"into the void {n}"))
        assert_health(client.get("/healthz"), 503, storage="unavailable")
    # Reads look at the file at most once a second, so give each worker that long.
    wait_until(
        lambda: all(client.get("/v1/todos/1").status == 503 for _ in range(ROUNDS)),
        10,
        "every worker to refuse reads",
    )
    assert not server.db_path.exists(), "a worker created a new database"

    restore(tmp_path / "backup.db", server.db_path)
    for _ in range(ROUNDS):
        assert_health(client.get("/healthz"), 200)
    # A worker that has not looked for a second may still read the old file; the
    # deleted file's -wal replayed onto the backup would never go away.
    assert_serves_the_backup(client, kept)
    assert integrity(server.db_path) == "ok"
    assert_workers_never_died(server)


@pytest.mark.parametrize("deleted", ["folder", "files"])
def test_a_worker_respawned_after_the_files_went_makes_none(
    gunicorn, tmp_path, server_name, deleted
):
    # The folder (`rm -rf data`) or every file of the database (`rm refapi.db*`,
    # its .lock too), then a worker killed: its replacement made the folder, the
    # database and a first admin again, and handed out the ids a second time.
    folder = tmp_path / "data"
    server = gunicorn(workers=2, db_path=folder / "refapi.db", server=server_name)
    client = Client(server)
    kept = [f"kept {n}" for n in range(3)]
    for title in kept:
        assert client.post(title).status == 201
    backup(server.db_path, tmp_path / "backup.db")
    if deleted == "folder":
        shutil.rmtree(folder)
    else:
        for path in folder.glob("refapi.db*"):
            path.unlink()
    server.replace_worker()
    wait_until(
        lambda: all(client.get("/v1/todos/1").status == 503 for _ in range(ROUNDS)),
        10,
        "every worker to refuse reads",
    )
    assert_unavailable(client.post("into the void"))
    assert not server.db_path.exists(), "a worker made a new database"
    assert folder.exists() == (deleted == "files"), "a worker made the folder"

    folder.mkdir(mode=0o700, exist_ok=True)
    restore(tmp_path / "backup.db", server.db_path)
    assert_serves_the_backup(client, kept)


# -- the -wal and -shm deleted under a running service -------------------------------


@pytest.mark.parametrize("deleted", [("-wal", "-shm"), ("-wal",), ("-shm",)])
def test_deleted_wal_and_shm_are_folded_in_not_forked(gunicorn, deleted):
    # Workers still on the deleted log, and a new one that would start another: two
    # logs would hand out the same ids and overwrite each other's pages.
    server = gunicorn(workers=3)
    client = Client(server)
    acknowledged: dict[int, str] = {}
    statuses: list[int] = []

    def write(prefix: str, count: int) -> None:
        for n in range(count):
            response = client.post(f"{prefix} {n}")
            statuses.append(response.status)
            if response.status == 201:
                article = response.json()
                assert article["id"] not in acknowledged, "an id handed out twice"
                acknowledged[article["id"]] = article["title"]

    write("before", 30)
    for suffix in deleted:
        Path(f"{server.db_path}{suffix}").unlink()
    server.replace_worker()  # starts with no log (or half of one) at the path
    write("after", 60)
    wait_until(
        lambda: all(client.get("/healthz").status == 200 for _ in range(ROUNDS)),
        10,
        "every worker to be healthy",
    )
    write("recovered", ROUNDS)
    assert set(statuses) <= {201, 503}, statuses
    assert statuses[-ROUNDS:] == [201] * ROUNDS
    assert server.log().count("folded into the database") == 1
    assert_kept_once_stopped(server, acknowledged)


def test_a_worker_idle_on_a_deleted_wal_is_waited_for_however_long(gunicorn):
    # The only worker on the deleted log takes no request for longer than any
    # time-out (stopped here, as a worker the kernel never hands a connection):
    # a new log started meanwhile would lose what the old one holds, and hand its
    # ids out again.
    server = gunicorn(workers=2)
    client = Client(server)
    acknowledged = {}
    for n in range(20):
        created = client.post(f"before {n}")
        assert created.status == 201
        acknowledged[created.json()["id"]] = f"before {n}"
    idle, other = sorted(server.serving_pids())
    for suffix in ("-wal", "-shm"):
        Path(f"{server.db_path}{suffix}").unlink()
    os.kill(idle, signal.SIGSTOP)
    try:
        server.replace_worker(other)  # the new one starts with no log at the path
        # Longer than any wait for a fold: every write waits (a 401 here would be
        # a new log without the old one's login).
        deadline, during = time.monotonic() + 7, []
        while time.monotonic() < deadline:
            during.append(client.post("while the old log is held").status)
            time.sleep(0.2)
        assert set(during) == {503}, during
    finally:
        os.kill(idle, signal.SIGCONT)
    statuses = []
    wait_until(
        lambda: statuses.append(client.post("after").status) or statuses[-1] == 201,
        10,
        "a write once the idle worker has folded its log",
    )
    assert set(statuses) <= {201, 503}, statuses
    for n in range(ROUNDS):
        created = client.post(f"after {n}")
        assert created.status == 201
        assert created.json()["id"] not in acknowledged, "an id handed out twice"
        acknowledged[created.json()["id"]] = f"after {n}"
    assert_kept_once_stopped(server, acknowledged)


def test_a_reload_leaves_no_worker_waiting_for_a_fold(gunicorn):
    # The old workers' last connection removes the log as it closes; the new ones
    # must not take that for a log deleted under them and wait.
    server = gunicorn(workers=2)
    client = Client(server)
    assert client.post("before the reload").status == 201
    server.reload()
    for n in range(ROUNDS):
        assert client.post(f"after the reload {n}").status == 201
        assert client.get("/healthz").status == 200


# -- item 10: the database unwritable ------------------------------------------------


# Root ignores file modes. Without these capabilities it is held to them like any
# user, while it can still reach its interpreter under /root.
SUBJECT_TO_FILE_MODES = (
    "setpriv",
    "--bounding-set=-dac_override,-dac_read_search,-fowner",
    "--",
)


def test_unwritable_database_is_503_for_writes_and_health_then_recovers(
    gunicorn, tmp_path
):
    if shutil.which("setpriv") is None:
        skip_or_fail("setpriv (util-linux) is needed to run gunicorn bound by modes")
    db_path = tmp_path / "data" / "refapi.db"
    store = SqliteStore(str(db_path))
    store.create_article("kept", [], NOW)
    authorization = mint_admin_token(store)  # a login could not be written later
    store.close()
    db_path.chmod(0o400)  # as a careless restore leaves it: readable, not writable
    # Health is 503 here: ready once every worker has loaded the app.
    server = gunicorn(db_path=db_path, ready="booted", wrapper=SUBJECT_TO_FILE_MODES)
    client = Client(server, authorization)
    for n in range(ROUNDS):
        assert_unavailable(client.post(f"refused {n}"))
        assert_health(client.get("/healthz"), 503, storage="unavailable")
        assert titles(client) == ["kept"]  # reads go on

    for path in db_path.parent.glob("refapi.db*"):
        path.chmod(0o600)  # the operator puts the modes right
    for n in range(ROUNDS):  # no restart: each worker reopens before its next write
        assert client.post(f"written {n}").status == 201
        assert_health(client.get("/healthz"), 200)
    assert len(titles(client)) == 1 + ROUNDS
    assert_workers_never_died(server)


def test_a_database_made_unwritable_while_serving_is_503_for_writes_then_recovers(
    gunicorn, tmp_path, server_name
):
    # The workers' connections were opened writable: they must not go on writing
    # through the descriptors they hold while a worker opening now could not.
    if shutil.which("setpriv") is None:
        skip_or_fail("setpriv (util-linux) is needed to run gunicorn bound by modes")
    server = gunicorn(wrapper=SUBJECT_TO_FILE_MODES, server=server_name)
    client = Client(server)
    for n in range(ROUNDS):
        assert client.post(f"before {n}").status == 201
    server.db_path.chmod(0o400)
    for n in range(ROUNDS):
        assert_unavailable(client.post(f"refused {n}"))
        assert_health(client.get("/healthz"), 503, storage="unavailable")
    server.db_path.chmod(0o600)
    for n in range(ROUNDS):
        assert client.post(f"after {n}").status == 201
        assert_health(client.get("/healthz"), 200)
    assert len(titles(client)) == 2 * ROUNDS
    assert_workers_never_died(server)


def test_a_data_folder_unwritable_at_first_start_is_served_once_writable(
    gunicorn, tmp_path
):
    # No database was ever made there: the first worker to find the folder writable
    # makes it, without a restart.
    if shutil.which("setpriv") is None:
        skip_or_fail("setpriv (util-linux) is needed to run gunicorn bound by modes")
    folder = tmp_path / "data"
    folder.mkdir(mode=0o500)
    server = gunicorn(
        db_path=folder / "refapi.db", ready="booted", wrapper=SUBJECT_TO_FILE_MODES
    )
    client = Client(server)
    for _ in range(ROUNDS):
        assert_unavailable(client.get("/v1/todos/1"))
        response = client.get("/healthz")
        assert response.status == 503 and response.json()["checks"]["storage"] != "ok"
    assert f"its folder {folder} is not writable" in server.log()

    folder.chmod(0o700)
    wait_until(
        lambda: all(client.get("/healthz").status == 200 for _ in range(ROUNDS)),
        10,
        "every worker to be healthy",
    )
    assert client.get("/v1/todos/1").status == 200
    # The first admin too, by a request at least a second after a worker's try.
    wait_until(
        lambda: client.get("/healthz").status == 200 and admins(server.db_path) == 1,
        5,
        "a worker to make the first admin",
    )
    assert client.post("the first").json()["id"] == 1
    assert server.log().count("which no start could before") == 1
    assert_workers_never_died(server)


def test_a_data_folder_unwritable_at_start_names_itself_and_recovers(
    gunicorn, tmp_path
):
    # SQLite makes a WAL database's -wal and -shm beside it even to read it, and
    # the rate limit its bucket file: reads are 503 too, for the folder's sake.
    if shutil.which("setpriv") is None:
        skip_or_fail("setpriv (util-linux) is needed to run gunicorn bound by modes")
    folder = tmp_path / "data"
    store = SqliteStore(str(folder / "refapi.db"))
    store.create_article("kept", [], NOW)
    authorization = mint_admin_token(store)
    store.close()
    folder.chmod(0o500)
    server = gunicorn(
        db_path=folder / "refapi.db", ready="booted", wrapper=SUBJECT_TO_FILE_MODES
    )
    client = Client(server, authorization)
    for _ in range(ROUNDS):
        assert_unavailable(client.get("/v1/articles"))
        assert client.get("/healthz").status == 503
    assert f"its folder {folder} is not writable" in server.log()
    assert "was deleted" not in server.log()

    folder.chmod(0o700)
    wait_until(
        lambda: all(client.get("/healthz").status == 200 for _ in range(ROUNDS)),
        10,
        "every worker to be healthy",
    )
    assert titles(client) == ["kept"]
    assert client.post("written").status == 201
    assert_workers_never_died(server)


# -- item 26: another process holds the write lock -----------------------------------


def test_held_write_lock_is_503_after_a_short_wait_not_a_parked_worker(
    gunicorn, server_name
):
    server = gunicorn(server=server_name)
    client = Client(server, server.authorization)  # logged in before the lock
    holder = sqlite3.connect(server.db_path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # as a backup or `make reset` may
        with ThreadPoolExecutor(max_workers=3) as pool:
            write = pool.submit(client.post, "waits")
            health = pool.submit(client.get, "/healthz")
            assert client.get("/v1/todos/1").status == 200  # WAL: reads never wait
            assert_unavailable(write.result())
            assert_health(health.result(), 503, storage="unavailable")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert client.post("after").status == 201
    assert_health(client.get("/healthz"), 200)
    assert_workers_never_died(server)


# -- item 11: the bucket file truncated or overwritten -------------------------------

LIMITED = {"REFAPI_RATE_LIMIT_CAPACITY": "6", "REFAPI_RATE_LIMIT_REFILL": "0.001"}


def truncate(path: Path) -> None:
    # Cut short, not emptied: a worker that opens the file for the first time takes
    # an empty one for new (it cannot tell it from one just created), so the count
    # of "rebuilt" lines would depend on which worker had served before.
    os.truncate(path, path.stat().st_size // 2)


def overwrite(path: Path) -> None:
    with open(path, "r+b") as file:
        file.write(b"\xff" * path.stat().st_size)


def limited_statuses(client: Client) -> list[int]:
    return [client.get("/v1/todos/1").status for _ in range(8)]


def test_bucket_file_damaged_while_serving_or_stopped_is_rebuilt(gunicorn, server_name):
    server = gunicorn(env=LIMITED, server=server_name)
    client = Client(server)
    buckets = Path(f"{server.db_path}.buckets")
    assert limited_statuses(client) == [200] * 6 + [429] * 2
    for damage in (truncate, overwrite):
        damage(buckets)
        # Rebuilt empty: a full bucket again, and the limit holds across workers.
        assert limited_statuses(client) == [200] * 6 + [429] * 2
    assert_workers_never_died(server)
    assert server.log().count("rebuilt") == 2  # the app's warnings: its own log

    server.stop()
    overwrite(buckets)  # a restart must not inherit a file that limits nothing
    restarted = gunicorn(db_path=server.db_path, env=LIMITED, server=server_name)
    assert limited_statuses(Client(restarted)) == [200] * 6 + [429] * 2
    assert_workers_never_died(restarted)


# -- a configuration that cannot work stops the start, in one line -------------------


def missing_postgres_database() -> str:
    from tests.postgres import server_url

    server = urllib3.util.parse_url(server_url())
    return f"postgresql://{server.auth}@{server.host}:{server.port}/no_such_database"


@pytest.mark.parametrize(
    "url",
    [
        pytest.param(lambda: "mysql://app:s3cret@db/refapi", id="unknown scheme"),
        pytest.param(
            missing_postgres_database, id="no such PostgreSQL database",
            marks=pytest.mark.postgres,
        ),
    ],
)  # fmt: skip
def test_a_configuration_that_cannot_work_stops_gunicorn_in_one_line(url, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFAPI_")}
    # It stops at once, never after waiting on the database: the pool's wait set far
    # above what a start takes on a loaded machine (two suites at once: 11.8 s,
    # where a bound of 10 s failed), and the start must end within half of it.
    waits = 120
    env.update(DATABASE_URL=url(), REFAPI_DATA_DIR=str(tmp_path),
               REFAPI_DB_POOL_TIMEOUT=str(waits))  # fmt: skip
    started = time.monotonic()
    process = subprocess.run(
        [
            str(GUNICORN), "--config", "gunicorn.conf.py", "--bind", "127.0.0.1:0",
            "--workers", "2", "--no-control-socket", "refapi:create_app()",
        ],
        cwd=ROOT, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=waits + 30,
    )  # fmt: skip
    assert process.returncode != 0
    said = [line for line in process.stderr.splitlines() if "Starting" not in line]
    assert len(said) == 1 and said[0].startswith("refapi: "), process.stderr
    assert "DATABASE_URL" in said[0] and "s3cret" not in said[0]
    assert "Booting worker" not in process.stderr and process.stdout == ""
    assert time.monotonic() - started < waits / 2


# -- a bug is not an outage: a migration that fails stops the start ------------------


def test_a_migration_that_fails_stops_gunicorn_instead_of_serving_503(tmp_path):
    # The database is one migration behind and that migration fails on it (its
    # table is there already): a bug to fix, so no worker may boot and serve 503.
    db_path = tmp_path / "refapi.db"
    SqliteStore(str(db_path)).close()
    with sqlite3.connect(db_path) as conn:
        conn.execute("PRAGMA user_version = 1")
    conn.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFAPI_")}
    process = subprocess.Popen(
        [
            str(GUNICORN), "--config", "gunicorn.conf.py", "--bind", "127.0.0.1:0",
            "--workers", "2", "--no-control-socket", "refapi:create_app()",
        ],
        cwd=ROOT, env={**env, "DATABASE_URL": f"sqlite:///{db_path}"},
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True,
    )  # fmt: skip
    try:
        _, stderr = process.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # the master and its workers
        process.communicate()
        pytest.fail("gunicorn went on serving a database whose migration failed")
    assert process.returncode != 0
    assert "Worker failed to boot" in stderr
    assert "already exists" in stderr and "002_payments.sql" in stderr
