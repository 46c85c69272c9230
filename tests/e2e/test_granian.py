"""``refapi serve --server granian`` (serving/granian.py; docs/operating.md, "Two
servers"): started as a user starts it, from the same settings as gunicorn; the
process's environment kept out of the requests; the instance mounted at
SCRIPT_NAME; one log line a request; a dead worker replaced; SIGTERM lets the
requests in flight finish."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import urllib3

from tests.conftest import TEST_AUTH
from tests.e2e.harness import exchange, gone, http_pool, raw_request, wait_until

pytest.importorskip("granian", reason="Granian (the extra fast) is not installed")
pytestmark = pytest.mark.e2e

SECRET = "do-not-show-this-secret-key-0123456789"


@pytest.fixture(scope="module")
def granian(tmp_path_factory):
    from tests.e2e.harness import launch

    folder = tmp_path_factory.mktemp("granian")
    os.environ["HTTP_X_LEAKED"] = "from the environment"  # httpoxy's lever
    try:
        server = launch(
            folder / "granian", workers=2, db_path=folder / "refapi.db",
            ready="healthz",
            env={"REFAPI_SECRET_KEY": SECRET, "REFAPI_METRICS": "127.0.0.1"},
            extra_args=(), server="granian",
        )  # fmt: skip
    finally:
        del os.environ["HTTP_X_LEAKED"]
    yield server
    server.stop()


def test_it_says_where_to_look_once_listening(granian):
    log = granian.error_log()
    assert f"open http://127.0.0.1:{granian.port}/docs (the API)" in log
    assert "the admin: admin@example.com (REFAPI_ADMIN_EMAIL)" in log
    assert "slow work: at most 3 of the 4 slots" in log  # 2 workers x 2 threads


def test_no_request_sees_the_process_s_environment(granian):
    with http_pool() as pool:
        echo = pool.request("GET", granian.url("/lab/anything")).json()
        explained = pool.request(
            "POST", granian.url("/lab/explain"),
            body=json.dumps({"method": "GET", "path": "/lab/anything"}),
            headers={"Content-Type": "application/json"},
        ).data.decode()  # fmt: skip
    assert "X-Leaked" not in echo["headers"] and echo["headers"]["Host"]
    assert SECRET not in json.dumps(echo) and SECRET not in explained
    assert "dropped from the environment: HTTP_X_LEAKED" in granian.error_log()


def test_a_header_the_client_sends_reaches_the_app(granian):
    answer = exchange(
        granian, raw_request("GET", "/lab/anything", {"X-Leaked": "sent"}), admin=False
    )
    assert json.loads(answer.body)["headers"]["X-Leaked"] == "sent"


def todos_counted(pool, server) -> float:
    """refapi_requests_total of GET /v1/todos/{id} 200, summed over the workers."""
    text = pool.request("GET", server.url("/metrics")).data.decode()
    series = 'method="GET",mount="",route="/v1/todos/{id}",status="200"'
    counted = [line for line in text.splitlines() if series in line]
    return float(counted[0].rsplit(" ", 1)[1]) if counted else 0.0


def test_one_log_line_a_request_and_the_metrics_exact_over_the_workers(granian):
    with http_pool() as pool:
        before = todos_counted(pool, granian)
        ids = []
        for _ in range(40):  # a connection each: the kernel deals them to both
            answer = pool.request(
                "GET", granian.url("/v1/todos/1"), headers={"Connection": "close"}
            )
            ids.append(answer.headers["X-Request-Id"])
        assert todos_counted(pool, granian) - before == 40
    lines = [line for line in granian.requests() if line["requestId"] in ids]
    assert sorted(line["requestId"] for line in lines) == sorted(ids)
    # Each worker draws its own request id prefix, after the fork.
    prefixes = {line["pid"]: line["requestId"][:20] for line in lines}
    assert len(prefixes) == 2 and len(set(prefixes.values())) == 2
    # Granian's own access log is off: the app's line is the only one.
    assert not [line for line in granian.access_log().splitlines() if '" 200 ' in line]


def test_a_worker_that_dies_is_replaced(gunicorn):
    server = gunicorn(workers=2, server="granian")
    replacement = server.replace_worker()
    assert replacement in server.serving_pids()
    with http_pool() as pool:
        assert pool.request("GET", server.url("/healthz")).status == 200


def test_mounted_at_script_name_and_nothing_outside_it(gunicorn):
    server = gunicorn(workers=1, env={"SCRIPT_NAME": "/prod"}, server="granian",
                      ready="booted")  # fmt: skip
    with http_pool() as pool:
        inside = pool.request("GET", server.url("/prod/v1/todos/1"))
        created = pool.request(
            "POST", server.url("/prod/api/login"), body=b"{}",
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        outside = pool.request("GET", server.url("/v1/todos/1"))
        beside = pool.request("GET", server.url("/production/v1/todos/1"))
    assert inside.status == 200 and inside.json()["id"] == 1
    assert created.status == 400  # the app's own answer, so under the mount
    assert outside.status == 404 and outside.json()["code"] == "NOT_FOUND"
    assert beside.status == 404 and beside.headers["X-Request-Id"]


def test_sigterm_answers_the_request_in_flight_then_stops(gunicorn):
    server = gunicorn(workers=1, server="granian", env={"REFAPI_LAB_MAX_DELAY": "3"})
    answers: list[int] = []

    def slow() -> None:
        with urllib3.PoolManager(retries=False) as client:
            answers.append(client.request("GET", server.url("/lab/delay/2")).status)

    thread = threading.Thread(target=slow)
    thread.start()
    time.sleep(0.5)  # the delay is in flight
    started = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(10) == 0
    thread.join(5)
    assert answers == [200]
    assert time.monotonic() - started >= 1  # it waited for the answer


@pytest.mark.parametrize(
    ("env", "said"),
    [
        (
            {"REFAPI_THREADS": "1"},
            "REFAPI_THREADS must be at least 2 on Granian, not 1",
        ),
        ({"REFAPI_BIND": "localhost"}, "REFAPI_BIND must be HOST:PORT for Granian"),
        ({"REFAPI_BIND": "localhost:8000"}, "REFAPI_BIND must be HOST:PORT for Gran"),
    ],
)
def test_a_setting_granian_cannot_serve_ends_the_start_in_one_line(tmp_path, env, said):
    environ = {
        key: value for key, value in os.environ.items()
        if not key.startswith("REFAPI_") and key != "DATABASE_URL"
    }  # fmt: skip
    environ.update(REFAPI_WORKERS="1", REFAPI_PASSWORD_HASH=TEST_AUTH["password_hash"])
    environ.update({"REFAPI_BIND": "127.0.0.1:0", **env})
    done = subprocess.run(
        [sys.executable, "-m", "refapi", "serve", "--server", "granian"],
        cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=30,
        check=False,
    )  # fmt: skip
    assert done.returncode == 1
    [line] = (done.stdout + done.stderr).splitlines()  # no traceback, nothing else
    assert line.startswith(f"refapi: {said}")


def test_options_after_serve_are_refused_on_granian(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "refapi", "serve", "--server", "granian", "--workers",
         "2"], cwd=tmp_path, capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.startswith("refapi: Granian takes no options after serve")


def test_systemd_is_told_when_it_listens(gunicorn, tmp_path):
    # deploy/refapi.service is Type=notify: without READY=1 systemd would kill a
    # start on Granian at its start timeout (gunicorn says it itself).
    path = str(tmp_path / "notify")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as systemd:
        systemd.bind(path)
        systemd.settimeout(20)
        server = gunicorn(workers=1, server="granian", env={"NOTIFY_SOCKET": path})
        said = systemd.recv(4096).decode()
    assert said.startswith("READY=1\n"), said
    assert server.alive()


def test_systemd_is_told_ready_only_once_a_connection_is_taken(tmp_path):
    # Granian's workers each bind the port, after the master's start hook, which
    # said READY=1 about 175 ms before a connection was taken (an operator's
    # review): a Type=notify start done while connections were refused.
    from tests.helpers import held_port

    port, lock = held_port()
    path = str(tmp_path / "notify")
    environ = {
        key: value for key, value in os.environ.items()
        if not key.startswith("REFAPI_") and key != "DATABASE_URL"
    }  # fmt: skip
    environ.update(
        REFAPI_WORKERS="2", REFAPI_PASSWORD_HASH=TEST_AUTH["password_hash"],
        REFAPI_BIND=f"127.0.0.1:{port}", REFAPI_DATA_DIR=str(tmp_path / "data"),
        NOTIFY_SOCKET=path,
    )  # fmt: skip
    with lock, socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as systemd:
        systemd.bind(path)
        systemd.settimeout(30)
        server = subprocess.Popen(
            [sys.executable, "-m", "refapi", "serve", "--server", "granian"],
            cwd=tmp_path, env=environ, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        try:
            said = systemd.recv(4096).decode()
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
        finally:  # a stop is no part of this (a worker may still be starting)
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=30)
    assert said.startswith("READY=1\n"), said


def test_the_workers_stop_when_their_master_is_killed(gunicorn):
    # Left alone, Granian's workers would go on serving and holding the port, with
    # nobody to stop or replace them (serving/granian.py, stop_with).
    server = gunicorn(workers=2, server="granian")
    workers = server.serving_pids()
    os.kill(server.process.pid, signal.SIGKILL)
    server.process.wait(5)
    try:
        wait_until(lambda: all(map(gone, workers)), 10, "the workers to stop")
    except pytest.fail.Exception:  # twice in loaded runs: say where each one is
        left = {pid: where(pid) for pid in workers if not gone(pid)}
        # and whether it ends after Granian's header_read_timeout (15 s), which
        # would name a connection it waits for (serving/granian.py, settings).
        began = time.monotonic()
        with contextlib.suppress(pytest.fail.Exception):
            wait_until(lambda: all(map(gone, left)), 25, "the workers to stop")
        ended = (
            f"all gone {time.monotonic() - began:.1f} s later"
            if all(map(gone, left))
            else "still there 25 s later"
        )
        pytest.fail(f"workers left: {left}; {ended}\n{server.log()[-3000:]}")
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", server.port)) != 0  # the port is free


def test_a_worker_told_to_stop_again_and_again_stops(gunicorn):
    # A master killed with -9 hands its workers from each of its threads to the
    # next as they end, and Linux sends a parent-death signal at each hand-over:
    # three SIGTERMs a worker within milliseconds, and Granian's handler, run a
    # third time, blocked for good (serving/granian.py, hear_stop_signals).
    server = gunicorn(workers=1, server="granian", env={"REFAPI_LAB_MAX_DELAY": "3"})
    [worker] = server.serving_pids()
    answers: list[int] = []

    def slow() -> None:  # keeps the worker stopping while the signals come
        with urllib3.PoolManager(retries=False) as client:
            answers.append(client.request("GET", server.url("/lab/delay/2")).status)

    thread = threading.Thread(target=slow)
    thread.start()
    time.sleep(0.5)  # the delay is in flight
    for _ in range(3):
        os.kill(worker, signal.SIGTERM)
        # each taken before the next is sent, or the kernel would merge them
        wait_until(lambda: not pending(worker), 5, "the signal to be taken")
    wait_until(lambda: gone(worker), 10, "the worker to stop")
    thread.join(5)
    assert answers == [200]


def pending(pid: int) -> int:
    """The signals sent to process ``pid`` that none of its threads has taken."""
    return signal_set(Path(f"/proc/{pid}/status"), "ShdPnd")


def where(pid: int) -> list[str]:
    """What a live process is doing, thread by thread: its name, state, the kernel
    function it waits in, and the signals it blocks and has pending."""
    seen = []
    for task in sorted(Path(f"/proc/{pid}/task").iterdir()):
        try:
            status = dict(
                line.split(":\t", 1)
                for line in (task / "status").read_text().splitlines()
                if ":\t" in line
            )
            wchan = (task / "wchan").read_text()
        except OSError:
            continue
        fields = ("Name", "State", "SigPnd", "ShdPnd", "SigBlk", "SigCgt")
        seen.append(" ".join([task.name, wchan, *(status.get(f, "") for f in fields)]))
    return seen + connections(pid)


def connections(pid: int) -> list[str]:
    """The TCP sockets a process holds: local and remote port and state (hex, as
    /proc/net/tcp writes them: 0A listening, 01 established, 08 close-wait)."""
    inodes = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):  # one closed since it was listed
                inodes.add(os.readlink(fd).removeprefix("socket:[").rstrip("]"))
        table = Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return []
    held = []
    for row in table:
        cells = row.split()
        if cells[9] in inodes:
            local, remote = (int(cell.split(":")[1], 16) for cell in cells[1:3])
            held.append(f"tcp {local}->{remote} state {cells[3]}")
    return held


def blocked_signals(pid: int, thread: str) -> int:
    return signal_set(Path(f"/proc/{pid}/task/{thread}/status"), "SigBlk")


def signal_set(status: Path, field: str) -> int:
    """A set of signals a /proc status file gives (``field``: SigBlk, ShdPnd...),
    as the mask ``mask_of`` makes."""
    return int(status.read_text().split(f"{field}:")[1].split()[0], 16)


def mask_of(*numbers: int) -> int:
    return sum(1 << (number - 1) for number in numbers)


def test_the_master_hears_a_reload_and_a_stop_whichever_thread_takes_them(gunicorn):
    # Granian's master has a thread for each worker besides its main one, which
    # alone ran the handlers: a signal the kernel handed to another left the master
    # neither reloading nor stopping (a SIGHUP and a SIGTERM on a start's heels: 9
    # masters in 60; serving/granian.py, hear_master_signals). Every thread blocks
    # them but the one waiting for them.
    server = gunicorn(workers=2, server="granian")
    master = server.process.pid
    told = mask_of(signal.SIGHUP, signal.SIGINT, signal.SIGTERM)
    threads = os.listdir(f"/proc/{master}/task")
    open_to_them = [t for t in threads if not blocked_signals(master, t) & told]
    assert len(threads) > 2 and len(open_to_them) == 1
    # A stop on a reload's heels ends the master too: a reload clears what a stop
    # just set (asked again until the master ends).
    server.process.send_signal(signal.SIGHUP)
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(20) == 0


def test_ctrl_c_stops_every_worker_at_once(gunicorn):
    # A terminal's Ctrl-C signals the whole group, the master sends each worker
    # SIGTERM after it: the kernel may hand either to any thread of a worker, and
    # one taken by a thread of Granian's own was lost (serving/granian.py,
    # hear_stop_signals). Every thread blocks both but the one waiting for them
    # (the kernel lifts the block while it waits).
    server = gunicorn(workers=2, server="granian")
    stopping = mask_of(signal.SIGINT, signal.SIGTERM)
    for pid in server.serving_pids():
        threads = os.listdir(f"/proc/{pid}/task")
        open_to_them = [t for t in threads if not blocked_signals(pid, t) & stopping]
        assert len(threads) > 2 and len(open_to_them) == 1
    workers = server.serving_pids()
    # SIGINT is the master's: a worker stops when its master says (SIGTERM), or
    # one that stopped first would count as dead, and the server would exit 1.
    os.kill(min(workers), signal.SIGINT)
    time.sleep(1)  # a worker that took it stops in a tenth of that
    with http_pool() as pool:
        assert pool.request("GET", server.url("/healthz")).status == 200
    assert server.serving_pids() == workers and server.alive()
    os.killpg(server.process.pid, signal.SIGINT)
    assert server.process.wait(5) == 0
    wait_until(lambda: all(map(gone, workers)), 5, "the workers to stop")


def test_clients_that_do_not_read_a_stream_hold_no_thread(granian):
    """On Granian a streamed answer is handed over from a worker's thread, which
    waits while the client does not read: six such clients of /lab/stream/100 with
    a 64 KB head (a 6.4 MB answer) held every thread, and /healthz went unanswered
    for as long as they liked. A stream's lines stop at REFAPI_LAB_MAX_BYTES now
    (docs/lab.md, "Streams")."""
    head = "".join(f"X-Pad-{i}: {'a' * 8000}\r\n" for i in range(8))
    request = f"GET /lab/stream/100 HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}\r\n"
    held = []
    try:
        for _ in range(6):
            client = socket.socket()
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            client.connect(("127.0.0.1", granian.port))
            client.sendall(request.encode())
            held.append(client)
        time.sleep(1)  # each answer made, and left unread
        with http_pool() as pool:
            answer = pool.request(
                "GET", granian.url("/healthz"), timeout=5, retries=False
            )
        assert answer.status == 200
    finally:
        for client in held:
            client.close()
