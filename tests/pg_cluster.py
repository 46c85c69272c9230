"""A throwaway PostgreSQL cluster of a test's own, to stop, kill and restart at will.

The machine's cluster (``tests/postgres.py``) is shared by every test and must stay
up; a fault test needs one it may take down. ``throwaway_cluster()`` runs ``initdb``
into a new temporary folder, starts the server with ``pg_ctl`` on a free port of
127.0.0.1 (its Unix socket in that folder too, so it touches nothing of the
machine's), and removes it all afterwards. PostgreSQL refuses to run as root, so when
the tests do, every command runs as ``postgres`` (``setpriv``), which owns the folder.

The postmaster is the test's own child (``postgres -D``, not ``pg_ctl start``), so
a ``kill -9`` of it is reaped at once. Each wait is bounded: pg_ctl's own (``-w``,
``-t``) or a poll.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg

from tests.conftest import skip_or_fail
from tests.helpers import held_port

PG_CTL_SECONDS = 30
EXIT_SECONDS = 15.0


def _bin_dir() -> Path:
    """The newest installed PostgreSQL's programs (Debian keeps them out of PATH)."""
    found = [Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/initdb")]
    if not found:
        skip_or_fail("initdb not found under /usr/lib/postgresql/*/bin")
    return max(found, key=lambda path: int(path.parent.name.split(".")[0]))


def _children(pid: int) -> set[int]:
    """The live processes whose parent is ``pid``."""
    children = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rpartition(")")[2].split()
            if fields[0] != "Z" and int(fields[1]) == pid:
                children.add(int(stat.parent.name))
    return children


def process_alive(pid: int) -> bool:
    """Is ``pid`` running (a zombie, not yet reaped, is not)?"""
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


class Cluster:
    """One initdb'd data folder and the server that runs on it."""

    def __init__(self, root: Path, settings: dict[str, str]) -> None:
        self.root = root
        self.data = root / "data"
        self.server_log = root / "server.log"
        self.bin = _bin_dir()
        self._process: subprocess.Popen | None = None
        self._as_owner: tuple[str, ...] = ()
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                skip_or_fail("the tests run as root and there is no user postgres")
            os.chown(root, owner.pw_uid, owner.pw_gid)
            # setpriv execs the program: the postmaster is start()'s own child.
            self._as_owner = (
                "setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups",
                "--",
            )  # fmt: skip
        self._run(
            "initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
            "--encoding=UTF8", "--no-locale", "--no-sync", "--no-instructions",
        )  # fmt: skip
        # PostgreSQL binds its own socket: a port held for it, not one probed that
        # another process (two suites at once) could take before it starts. Taken
        # last, so a set-up that skips or fails above holds none.
        self.port, self.port_lock = held_port()
        conf = {
            "listen_addresses": "'127.0.0.1'",
            "port": str(self.port),
            "unix_socket_directories": f"'{root}'",
            **settings,
        }
        with open(self.data / "postgresql.conf", "a") as file:
            file.writelines(f"{name} = {value}\n" for name, value in conf.items())

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, program: str, *args: str) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [*self._as_owner, str(self.bin / program), *args],
            cwd=self.root, stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=PG_CTL_SECONDS + 10, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            log = self._log_tail() if self.server_log.exists() else ""
            raise RuntimeError(
                f"{program} {' '.join(args)} failed ({done.returncode}):\n"
                f"{done.stdout}{done.stderr}\n{log}"
            )
        return done

    def start(self) -> None:
        """Start the server and return once it accepts connections."""
        # The postmaster is the test's own child, not pg_ctl's orphan: killed, an
        # orphan stays a zombie until init reaps it, and meanwhile its pid looks
        # alive to the next start, which then refuses to run.
        with open(self.server_log, "ab") as log:
            self._process = subprocess.Popen(
                [*self._as_owner, str(self.bin / "postgres"), "-D", str(self.data)],
                cwd=self.root, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + PG_CTL_SECONDS
        while not self._accepts():
            if not self.running() or time.monotonic() > deadline:
                raise RuntimeError(f"the cluster did not start:\n{self._log_tail()}")
            time.sleep(0.05)

    def _accepts(self) -> bool:
        try:
            self.connect().close()
        except psycopg.OperationalError:
            return False
        return True

    def _log_tail(self) -> str:
        return self.server_log.read_text()[-2000:]

    def stop(self, mode: str = "fast") -> None:
        """``pg_ctl stop -m mode``: "fast" ends every session and checkpoints,
        "immediate" ends every process at once (recovery runs at the next start)."""
        seconds = str(PG_CTL_SECONDS)
        self._run(
            "pg_ctl", "stop", "-D", str(self.data), "-m", mode, "-w", "-t", seconds
        )
        self._process.wait(PG_CTL_SECONDS)

    def freeze(self) -> None:
        """``SIGSTOP`` the postmaster and every process it started: the server is
        there (its kernel still accepts and acknowledges) but answers nothing, as a
        hung or swapping server would."""
        for pid in (self._process.pid, *_children(self._process.pid)):
            os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        for pid in (self._process.pid, *_children(self._process.pid)):
            os.kill(pid, signal.SIGCONT)

    def kill(self) -> None:
        """``kill -9`` the postmaster, as the OOM killer would, and wait until every
        process it had started (they notice its death) has gone too."""
        postmaster = self._process.pid
        processes = _children(postmaster)
        self._process.kill()
        self._process.wait(PG_CTL_SECONDS)
        deadline = time.monotonic() + EXIT_SECONDS
        while any(map(process_alive, processes)):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the cluster's processes outlived {EXIT_SECONDS} s")
            time.sleep(0.05)

    def running(self) -> bool:
        """Is the postmaster alive?"""
        return self._process is not None and self._process.poll() is None

    def connect(self, **kwargs) -> psycopg.Connection:
        """A connection of the test's own, autocommit unless told otherwise."""
        kwargs.setdefault("autocommit", True)
        return psycopg.connect(self.url, connect_timeout=3, **kwargs)


@contextlib.contextmanager
def throwaway_cluster(**settings: str) -> Iterator[Cluster]:
    """A new cluster, started, with ``settings`` in its ``postgresql.conf`` (values
    as the file writes them: ``max_connections="8"``); removed afterwards."""
    # Not under pytest's tmp_path: that lies in root's 0700 folder, which the
    # postgres user cannot enter.
    root = Path(tempfile.mkdtemp(prefix="refapi-pg-"))
    try:
        cluster = Cluster(root, settings)
        try:  # a start that fails lets go of its port too
            cluster.start()
            yield cluster
        finally:
            if cluster.running():
                cluster.stop("immediate")
            cluster.port_lock.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
