"""A real gunicorn on loopback for end-to-end tests: start it, read its logs, end it.

``launch()`` starts ``gunicorn 'refapi:create_app()'`` with the project's
``gunicorn.conf.py`` (read by ``tests/e2e/gunicorn.conf.py``, which adds a hook that
says when each worker is ready) from the project root in its own process group (so
one signal reaches the master and every worker), against a SQLite file under the
test's ``tmp_path`` (or a PostgreSQL database: ``database_url``), with the rate
limit out of the way and no control socket (gunicorn's would replace, then delete,
the one of a server `make run` started). Its stdout (the app's log: a JSON line per
request, and the app's other lines) and stderr (gunicorn's own log) go to files
under the test's ``tmp_path``. Another app can be served instead (``app``, and the
path of its health check, ``health``).

The port: the harness binds a socket to port 0 on 127.0.0.1 and hands that socket,
open, to gunicorn (``--bind fd://N``), so no other process can take the port between
the choice and gunicorn's use of it, as one could if the port were only probed.

Ready: gunicorn logs "Booting worker" when it forks a worker, before the worker has
loaded the app; the hook makes a file named after the worker's pid in the server's
``ready_dir`` once it has, right before it accepts connections. A server is returned
once ``workers`` live workers have made theirs (and ``/healthz`` answers 200, unless
the test asks for less), and ``wait_booted()`` waits the same way after a worker was
replaced.
Every wait is bounded in time and polls; no sleep stands in for an assertion.

Granian (``server="granian"``): ``refapi serve --server granian`` as a user starts
it, with ``REFAPI_BIND`` and ``REFAPI_WORKERS`` set. Granian takes no socket handed
over, so the port is one under the kernel's ephemeral range (which no port-0 bind
or outgoing connection is given), held for the server's life by a lock file that
every suite on the machine asks first (``tests.helpers.held_port``). A worker is
ready once Granian logs "Started worker" for it, which it does after it has built
the app.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import urllib3

from refapi.config import SERVER_THREADS
from tests.conftest import ADMIN, TEST_AUTH, skip_or_fail
from tests.helpers import held_port

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.prefix) / "bin" / "gunicorn"
TEST_CONFIG = ROOT / "tests" / "e2e" / "gunicorn.conf.py"
READY_MODES = ("healthz", "booted", "listening")
READY_SECONDS = 20.0
STOP_SECONDS = 10.0
# Lines that must never appear in a healthy server's logs.
FAILURE_MARKERS = (
    "Traceback",
    "database is locked",
    "Worker failed to boot",
    "Exception in worker process",
    "WORKER TIMEOUT",
    "[ERROR]",
    "[CRITICAL]",
    "storage unavailable",
    "unhandled error",
)
_BOOTED = re.compile(r"Booting worker with pid: (\d+)")
SERVERS = ("gunicorn", "granian")
_GRANIAN_SPAWNED = re.compile(r"Spawning worker-\d+ with PID: (\d+)")
_GRANIAN_STARTED = re.compile(r"\[(\d+)\] \[INFO\] Started worker-\d+")
# Granian as a user starts it; its settings come from REFAPI_* alone.
REFAPI_SERVE_GRANIAN = [sys.executable, "-m", "refapi", "serve", "--server", "granian"]
# A folder the server's start made for its workers, as its log names it.
_SHARED_FOLDER = re.compile(r"(?:locks|figures) in (\S+)")
# The worker's pid in a line of the app's log: JSON ("pid": 42) or text (pid=42).
_PID = re.compile(r'(?:"pid": |pid=<?)(\d+)')


def http_pool(maxsize: int = 16) -> urllib3.PoolManager:
    """A client that never retries behind the test's back."""
    return urllib3.PoolManager(
        maxsize=maxsize,
        retries=False,
        timeout=urllib3.Timeout(connect=5.0, read=45.0),
    )


def wait_until(predicate: Callable[[], bool], seconds: float, what: str) -> None:
    """Poll ``predicate`` every 50 ms for at most ``seconds``; fail naming ``what``."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {seconds} s waiting for {what}")
        time.sleep(0.05)


def gone(pid: int) -> bool:
    """True once ``pid`` has exited (a zombie nobody reaped counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return "State:\tZ" in status


def _worker_of(pid: int, master: int) -> bool:
    """Is ``pid`` a live child of ``master`` (not a zombie, nor a later process
    that was given the pid of one that exited)?"""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # "pid (command) state ppid ...": the command may hold spaces and parentheses.
    state, ppid = stat.rpartition(")")[2].split()[:2]
    return state != "Z" and int(ppid) == master


def _points_to(link: Path, target: Path) -> bool:
    """Does the ``/proc/<pid>/fd`` entry ``link`` refer to ``target``?"""
    try:
        return Path(os.readlink(link)) == target.resolve()
    except OSError:
        return False


@dataclass
class GunicornServer:
    process: subprocess.Popen
    port: int
    db_path: Path
    stdout_path: Path
    stderr_path: Path
    workers: int
    ready_dir: Path  # a file per worker that has loaded the app, named by its pid
    _files: list = field(default_factory=list, repr=False)
    _stopped: bool = False
    mount: str = ""  # SCRIPT_NAME, the prefix every path of the app is under
    server: str = "gunicorn"  # or "granian"
    threads: int = 1  # a worker's (REFAPI_THREADS; Granian's default is 2)

    @property
    def slots(self) -> int:
        """Requests the host works on at once, workers x threads: slow work holds
        at most all but one (docs/operating.md, "Slow work shares the host")."""
        return self.workers * self.threads

    @property
    def slow_share(self) -> int:
        """The most slow work the host holds at once: all but one of its slots,
        and on workers of more than one thread (Granian's) all but one of each
        worker's threads (docs/operating.md, "Slow work shares the host")."""
        if self.threads > 1:
            return min(self.slots - 1, self.workers * (self.threads - 1))
        return self.slots - 1

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return self.base_url + path

    def access_log(self) -> str:
        """The app's log (standard output), its request lines among the rest."""
        return self.stdout_path.read_text(errors="replace")

    def requests(self) -> list[dict]:
        """The request log's lines, parsed (``REFAPI_LOG_FORMAT=json``)."""
        lines = [
            json.loads(line)
            for line in self.access_log().splitlines()
            if line.startswith("{")
        ]
        return [line for line in lines if "route" in line]

    def answered(self, method: str, path: str, status: int | None = None) -> int:
        """How many ``method path`` requests (``status``, if given) were logged;
        the path without its query, as the log writes it."""
        return sum(
            1
            for line in self.requests()
            if line["message"].split(" ")[:2] == [method, path]
            and status in (None, line["status"])
        )

    def error_log(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def log(self) -> str:
        return self.access_log() + self.error_log()

    @functools.cached_property
    def authorization(self) -> str:
        """``Bearer <token>`` of the first admin, logged in over HTTP once."""
        return self.login(self.mount)

    def login(self, prefix: str = "") -> str:
        """``Bearer <token>`` of the first admin of the instance at ``prefix``."""
        body = json.dumps(ADMIN).encode()
        with urllib3.PoolManager(retries=False) as client:
            response = client.request(
                "POST", self.url(prefix + "/api/login"), body=body,
                headers={"Content-Type": "application/json"},
            )  # fmt: skip
        assert response.status == 200, response.data
        return "Bearer " + response.json()["token"]

    def log_failures(self) -> list[str]:
        """The log lines that carry any of ``FAILURE_MARKERS``."""
        return [
            line
            for line in self.log().splitlines()
            if any(marker in line for marker in FAILURE_MARKERS)
        ]

    def worker_pids(self) -> list[int]:
        """Every worker the server forked, replacements included, as its log says."""
        forked = _GRANIAN_SPAWNED if self.server == "granian" else _BOOTED
        return [int(pid) for pid in forked.findall(self.error_log())]

    def ready_pids(self) -> set[int]:
        """The workers that have loaded the app, including any that died since."""
        if self.server == "granian":
            return {int(pid) for pid in _GRANIAN_STARTED.findall(self.error_log())}
        return {int(path.name) for path in self.ready_dir.iterdir()}

    def serving_pids(self) -> set[int]:
        """The workers that have loaded the app and are alive."""
        return {pid for pid in self.ready_pids() if _worker_of(pid, self.process.pid)}

    def wait_booted(self, seconds: float = READY_SECONDS) -> None:
        """Wait until ``workers`` live workers have loaded the app: after a start,
        or after a worker died and gunicorn forked another."""

        def booted() -> bool:
            self._fail_if_exited()
            return len(self.serving_pids()) >= self.workers

        wait_until(booted, seconds, f"{self.workers} workers to load the app")

    def reload(self) -> None:
        """SIGHUP to the master (``systemctl reload``), and wait until every worker
        that served is replaced by a new one."""
        old = self.serving_pids()
        os.kill(self.process.pid, signal.SIGHUP)
        wait_until(
            lambda: (
                len(self.serving_pids() - old) == self.workers
                and not old & self.serving_pids()
            ),
            30,
            "the old workers to be replaced",
        )

    def replace_worker(
        self, pid: int | None = None, how: signal.Signals = signal.SIGKILL
    ) -> int:
        """``kill -9`` the worker ``pid`` (any serving one if None; ``how``: another
        signal, SIGTERM for a graceful end), wait until gunicorn has booted its
        replacement as above, and return that one's pid."""
        before = self.serving_pids()
        victim = min(before) if pid is None else pid
        os.kill(victim, how)
        gone = f"worker {victim} to die"
        wait_until(lambda: victim not in self.serving_pids(), STOP_SECONDS, gone)
        self.wait_booted()
        (replacement,) = self.serving_pids() - before
        return replacement

    def _fail_if_exited(self) -> None:
        if not self.alive():
            pytest.fail(f"{self.server} exited:\n{self.log()[-3000:]}")

    def workers_using_database(self) -> set[int]:
        """The worker pids that have served (the access log names them) and hold
        the database file open. A worker also holds it briefly while it starts."""
        answered = {int(pid) for pid in _PID.findall(self.access_log())}
        using = set()
        for pid in answered.intersection(self.worker_pids()):
            with contextlib.suppress(OSError):
                fds = Path(f"/proc/{pid}/fd").iterdir()
                if any(_points_to(fd, self.db_path) for fd in fds):
                    using.add(pid)
        return using

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> int:
        """Graceful shutdown (SIGTERM to the master); SIGKILL if it overstays."""
        if not self._stopped:
            self.process.terminate()
            try:
                self.process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.kill()
            # The master reaps its workers; any it left behind go too.
            self._signal_group(signal.SIGKILL)
            self._finish()
        return self.process.wait()

    def kill(self) -> None:
        """``kill -9`` the master and every worker at once, and wait for all to go."""
        if self._stopped:
            return
        pids = {self.process.pid, *self.worker_pids(), *self.ready_pids()}
        self._signal_group(signal.SIGKILL)
        self.process.wait(STOP_SECONDS)
        wait_until(lambda: all(map(gone, pids)), STOP_SECONDS, "workers to die")
        self._finish()

    def _signal_group(self, sig: signal.Signals) -> None:
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            pass

    def _finish(self) -> None:
        for handle in self._files:
            handle.close()
        self._files.clear()
        self._stopped = True
        # A server killed with kill -9 leaves the folders its start made (the
        # slots' and the metrics', in /dev/shm): gone with it, as a stop removes
        # them.
        for folder in _SHARED_FOLDER.findall(self.error_log()):
            if Path(folder).name.startswith(("refapi-slots-", "refapi-metrics-")):
                shutil.rmtree(folder, ignore_errors=True)


def _environment(
    database_url: str, ready_dir: Path, extra: dict[str, str]
) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("REFAPI_", "GUNICORN_")) and key != "DATABASE_URL"
    }
    env.update(
        DATABASE_URL=database_url,
        REFAPI_RATE_LIMIT_CAPACITY="1000000",
        REFAPI_RATE_LIMIT_REFILL="1000000",
        REFAPI_ADMIN_EMAIL=TEST_AUTH["admin_email"],
        REFAPI_ADMIN_PASSWORD=TEST_AUTH["admin_password"],
        REFAPI_PASSWORD_HASH=TEST_AUTH["password_hash"],
        REFAPI_AUTH_RATE_LIMIT=str(TEST_AUTH["auth_rate_limit"]),
        REFAPI_REGISTER_RATE_LIMIT=str(TEST_AUTH["register_rate_limit"]),
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    env["E2E_READY_DIR"] = str(ready_dir)  # read by tests/e2e/gunicorn.conf.py
    return env


def _answering(
    server: GunicornServer, pool: urllib3.PoolManager | None, health: str
) -> bool:
    """Is the port open (``pool`` None), or does ``health`` answer 200?"""
    server._fail_if_exited()
    try:
        if pool is None:
            socket.create_connection(("127.0.0.1", server.port), timeout=0.5).close()
            return True
        response = pool.request(
            "GET", server.url(health), headers={"Connection": "close"}
        )
    except (urllib3.exceptions.HTTPError, OSError):
        return False
    return response.status == 200


def launch(
    log_prefix: Path,
    *,
    workers: int,
    db_path: Path,
    env: dict[str, str],
    ready: str,
    extra_args: tuple[str, ...],
    wrapper: tuple[str, ...] = (),
    app: str = "refapi:create_app()",
    health: str = "/healthz",
    database_url: str | None = None,
    server: str = "gunicorn",
) -> GunicornServer:
    """Start gunicorn (or Granian: ``server``) and wait until it is ``ready``:
    "healthz" (every worker has loaded the app, and ``health`` answers 200),
    "booted" (every worker has loaded the app, whatever health says) or
    "listening" (the master accepts connections;
    requests wait in its queue until a worker has loaded the app).

    ``wrapper`` is a command that runs gunicorn, e.g. ``setpriv`` with its options;
    ``app`` the application gunicorn serves, ``health`` its health check's path.
    ``database_url`` (a PostgreSQL one) replaces the SQLite file at ``db_path``; the
    instance's own files then go to a ``data`` folder beside the logs.
    """
    if ready not in READY_MODES:
        raise ValueError(f"ready must be one of {READY_MODES}, not {ready!r}")
    if server == "granian":
        if extra_args or app != "refapi:create_app()":
            raise ValueError(
                "Granian takes its settings from REFAPI_*, and serves refapi"
            )
        pytest.importorskip(
            "granian", reason="Granian (the extra fast) is not installed"
        )
    elif not GUNICORN.exists():
        skip_or_fail(f"gunicorn is not installed at {GUNICORN}")
    stdout_path = log_prefix.with_name(f"{log_prefix.name}.stdout.log")
    stderr_path = log_prefix.with_name(f"{log_prefix.name}.stderr.log")
    ready_dir = log_prefix.with_name(f"{log_prefix.name}.ready")
    ready_dir.mkdir()
    # `refapi serve` would keep its files in the checkout's data/.
    if database_url is not None or server == "granian":
        data_dir = log_prefix.with_name(f"{log_prefix.name}.data")
        env = {"REFAPI_DATA_DIR": str(data_dir), **env}
    files = [open(stdout_path, "wb"), open(stderr_path, "wb")]  # noqa: SIM115

    def start(
        command: list[str], settings: dict[str, str], **options
    ) -> subprocess.Popen:
        return subprocess.Popen(
            [*wrapper, *command], cwd=ROOT,
            env=_environment(database_url or f"sqlite:///{db_path}", ready_dir,
                             settings),
            stdin=subprocess.DEVNULL, stdout=files[0], stderr=files[1],
            start_new_session=True, **options,
        )  # fmt: skip

    threads = 1
    if server == "granian":
        port, lock = held_port()
        files.append(lock)
        bound = {"REFAPI_BIND": f"127.0.0.1:{port}", "REFAPI_WORKERS": str(workers)}
        process = start(REFAPI_SERVE_GRANIAN, {**_at(env, port), **bound})
        threads = int(env.get("REFAPI_THREADS", SERVER_THREADS["granian"]))
    else:
        # gunicorn listens on this very socket; the test's copy closes once it has it.
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
            listener.bind(("127.0.0.1", 0))
            port = listener.getsockname()[1]
            process = start(
                [str(GUNICORN), "--config", str(TEST_CONFIG), "--bind",
                 f"fd://{listener.fileno()}", "--workers", str(workers),
                 "--no-control-socket", *extra_args, app],
                _at(env, port), pass_fds=(listener.fileno(),),
            )  # fmt: skip
    started = GunicornServer(
        process, port, db_path, stdout_path, stderr_path, workers, ready_dir, files,
        server=server, threads=threads,
    )  # fmt: skip
    started.mount = env.get("SCRIPT_NAME", "")
    return _ready(started, ready, health)


def _at(env: dict[str, str], port: int) -> dict[str, str]:
    """``env`` with ``{port}`` in a value replaced by the port the server listens
    on: a setting that names the server itself (REFAPI_LAB_GRADE_ORIGIN)."""
    return {name: value.replace("{port}", str(port)) for name, value in env.items()}


def _ready(server: GunicornServer, ready: str, health: str) -> GunicornServer:
    """``server`` once it is ``ready`` (``launch``); killed if it never is."""
    try:
        if ready == "listening":
            wait_until(lambda: _answering(server, None, health), READY_SECONDS, ready)
        else:
            server.wait_booted()
        if ready == "healthz":
            pool = http_pool(1)
            wait_until(lambda: _answering(server, pool, health), READY_SECONDS, ready)
    except BaseException:
        server.kill()
        raise
    return server


def raw_request(
    method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b""
) -> bytes:
    """The bytes of one HTTP/1.1 request, for tests that need control of the wire."""
    fields = {"Host": "127.0.0.1", "Connection": "close", **(headers or {})}
    if "Transfer-Encoding" not in fields and "Content-Length" not in fields:
        fields["Content-Length"] = str(len(body))
    head = f"{method} {path} HTTP/1.1\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in fields.items())
    return (head + "\r\n").encode() + body


def as_admin(server: GunicornServer, raw: bytes) -> bytes:
    """``raw`` with the admin's ``Authorization`` after its request line, unless it
    has one (or is not a request line the server will read as one)."""
    line, sep, rest = raw.partition(b"\r\n")
    if not sep or b"\r\nauthorization:" in b"\r\n" + rest.lower():
        return raw
    return line + sep + f"Authorization: {server.authorization}\r\n".encode() + rest


def exchange(
    server, raw: bytes, half_close: bool = False, admin: bool = True
) -> http.client.HTTPResponse:
    """Send ``raw`` (as the admin, unless not ``admin``: ``as_admin``) on a new
    connection (then stop sending, if ``half_close``) and read the whole answer, in
    ``response.body``."""
    raw = as_admin(server, raw) if admin else raw
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(raw)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        response = http.client.HTTPResponse(sock, method=raw.split(b" ", 1)[0].decode())
        response.begin()
        response.body = response.read()  # type: ignore[attr-defined]
        return response


HOLD_SECONDS = 0.5  # for the workers to accept and block; correctness never hangs on it


def simultaneous(
    server: GunicornServer | list[GunicornServer],
    requests: list[bytes],
    *,
    admin: bool = True,
) -> list[http.client.HTTPResponse]:
    """Send every request at once: all but the last two bytes of each first.

    Each sync worker accepts one connection and blocks reading it, so when the last
    bytes go out, as many requests as there are workers are in flight at once, on
    different workers, and the rest queue behind them. Each is sent as the admin
    (of the server it goes to), unless not ``admin``. Given several servers (hosts),
    the requests go to them in turn: the first to the first, the second to the
    second, and so on.
    """
    servers = server if isinstance(server, list) else [server]
    targets = [servers[n % len(servers)] for n in range(len(requests))]
    if admin:
        requests = [
            as_admin(to, request) for to, request in zip(targets, requests, strict=True)
        ]
    sockets = [socket.create_connection(("127.0.0.1", to.port), timeout=30)
               for to in targets]  # fmt: skip

    def answer(sock: socket.socket) -> http.client.HTTPResponse:
        # Read and close at once, as real clients do: gunicorn lingers after its
        # answer until the client closes (RFC 9112 section 9.6).
        with sock:
            response = http.client.HTTPResponse(sock)
            response.begin()
            response.body = response.read()
            return response

    try:
        for sock, request in zip(sockets, requests, strict=True):
            sock.sendall(request[:-2])
        time.sleep(HOLD_SECONDS)
        for sock, request in zip(sockets, requests, strict=True):
            sock.sendall(request[-2:])
        with ThreadPoolExecutor(max_workers=len(sockets)) as executor:
            return list(executor.map(answer, sockets))
    finally:
        for sock in sockets:
            sock.close()


def workers_that_answered(server: GunicornServer, path: str) -> set[str]:
    """Worker pids from the request log's lines of requests to ``path``."""
    lines = [line for line in server.access_log().splitlines() if f" {path}" in line]
    return {_PID.search(line).group(1) for line in lines}


def workers_that_served(server: GunicornServer, request_ids: list[str]) -> set[int]:
    """Worker pids from the request log's lines of the requests with these ids."""
    wanted = set(request_ids)
    return {line["pid"] for line in server.requests() if line["requestId"] in wanted}
