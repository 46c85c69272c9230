"""The folders a server's processes share (folders.py): made new, held by their
maker while it lives, removed by the maker alone, and swept once left over, if
marked as held."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from refapi import folders
from tests.helpers import ROOT

PREFIX = "refapi-test-folders-"


@pytest.fixture
def made_by_a_process(tmp_path: Path):
    """A factory: a process that prepares a folder in ``tmp_path``, prints it, then
    runs ``then`` (Python, with ``os`` and ``sys`` at hand); killed and its pipes
    closed at teardown."""
    started: list[subprocess.Popen] = []

    def start(then: str) -> tuple[subprocess.Popen, Path]:
        script = textwrap.dedent(f"""
            import os, sys
            from refapi import folders
            folder = folders.prepare("F", {PREFIX!r}, {{}}, {str(tmp_path)!r})
            print(folder, flush=True)
        """) + textwrap.dedent(then)
        process = subprocess.Popen(
            [sys.executable, "-c", script],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        started.append(process)
        assert process.stdout is not None
        return process, Path(process.stdout.readline().strip())

    yield start
    for process in started:
        with process:
            process.kill()


def test_a_folder_whose_maker_died_is_swept_by_the_next(tmp_path, made_by_a_process):
    process, folder = made_by_a_process("import time; time.sleep(60)")
    folders.sweep(str(tmp_path), PREFIX)
    assert folder.is_dir()  # its maker lives: held
    process.kill()  # SIGKILL: nothing of its own runs at exit
    process.wait()
    assert folder.is_dir()
    environ: dict[str, str] = {}
    made = folders.prepare("F", PREFIX, environ, str(tmp_path))
    assert not folder.exists()
    assert [p.name for p in tmp_path.iterdir()] == [Path(made).name]
    folders.remove("F", PREFIX, environ)
    assert not Path(made).exists()


def test_a_workers_lock_keeps_the_folder_after_its_maker_died(
    tmp_path, made_by_a_process
):
    # A forked child holds the lock with its maker: the folder is in use while it
    # lives (a gunicorn worker whose master was killed, still answering).
    process, folder = made_by_a_process("""
        if os.fork() == 0:
            sys.stdin.readline()  # until the test says
            os._exit(0)
        os._exit(0)
    """)  # fmt: skip
    assert process.wait() == 0
    folders.sweep(str(tmp_path), PREFIX)
    assert folder.is_dir()
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("go\n")
    process.stdin.close()
    assert process.stdout.read() == ""  # the child is gone, and its stdout with it
    folders.sweep(str(tmp_path), PREFIX)
    assert not folder.exists()


def test_a_folder_without_the_mark_is_left_alone(tmp_path):
    # Being made (not locked yet), or an earlier release's, whose server holds no
    # lock to tell whether it is alive.
    unmarked = tmp_path / f"{PREFIX}unmarked"
    unmarked.mkdir()
    (unmarked / "counts-1-x.keys").write_text("")
    folders.sweep(str(tmp_path), PREFIX)
    assert unmarked.is_dir()


def test_the_sweep_leaves_other_names_and_files_alone(tmp_path):
    other = tmp_path / "refapi-other-1"
    other.mkdir()
    (other / folders.MARK).write_text("")
    a_file = tmp_path / f"{PREFIX}file"
    a_file.write_text("")
    folders.sweep(str(tmp_path), PREFIX)
    assert other.is_dir() and a_file.is_file()


def test_a_parent_that_cannot_be_listed_sweeps_nothing_and_makes_the_folder(
    request,
):
    # /dev/shm or /tmp may let a user make a folder there without listing the
    # others (mode 1733); root lists anything, so as root it becomes nobody, in a
    # parent nobody can reach (pytest's own folders are root's alone).
    parent = Path(tempfile.mkdtemp(prefix="refapi-test-parent-"))
    request.addfinalizer(lambda: shutil.rmtree(parent))
    script = textwrap.dedent(f"""
        import os
        from refapi import folders
        os.chmod({str(parent)!r}, 0o1733)
        if os.getuid() == 0:
            os.setuid(65534)
        print(folders.prepare("F", {PREFIX!r}, {{}}, {str(parent)!r}))
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).parent == parent


def test_a_process_folder_outlives_a_forked_child_and_goes_with_its_maker(tmp_path):
    # A preloaded gunicorn's worker exits (replaced, or the server stops) before
    # its master: the folder its siblings still use stays.
    script = textwrap.dedent(f"""
        import os
        from refapi import folders
        environ = {{}}
        folder = folders.prepare("F", {PREFIX!r}, environ)
        pid = os.fork()
        if pid == 0:
            raise SystemExit(0)  # as a gunicorn worker ends: atexit runs
        os.waitpid(pid, 0)
        print(folder, os.path.isdir(folder), flush=True)
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    folder, after_child = done.stdout.split()
    assert after_child == "True"
    assert not Path(folder).exists()  # its maker removed it at exit


def test_a_reload_after_daemonizing_keeps_the_folders(tmp_path):
    # gunicorn --daemon reads its settings, then forks (the daemon, a new pid);
    # a reload (SIGHUP) reads them again in the daemon: the workers it replaces go
    # on counting in the same folders (serving/gunicorn.py, first_read).
    script = textwrap.dedent(f"""
        import os, runpy
        names = ("REFAPI_SLOTS_DIR", "REFAPI_METRICS_DIR")
        runpy.run_path({str(ROOT / "gunicorn.conf.py")!r})
        first = [os.environ[name] for name in names]
        if os.fork():
            os._exit(0)  # as gunicorn's daemonize leaves
        runpy.run_path({str(ROOT / "gunicorn.conf.py")!r})
        print(first == [os.environ[name] for name in names], *first, flush=True)
    """)
    environ = {**os.environ, "REFAPI_DATA_DIR": str(tmp_path)}
    environ["REFAPI_METRICS"] = "127.0.0.1"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=environ
    )
    kept, *made = done.stdout.split() or [done.stderr]
    for folder in made:  # the daemon's server would remove them as it stops
        shutil.rmtree(folder)
    assert kept == "True", done.stderr
