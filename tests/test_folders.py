"""The folders a server's processes share (folders.py): made new, held by their
maker while it lives, removed by the maker alone, and swept once left over."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from refapi import folders

PREFIX = "refapi-test-folders-"


@pytest.fixture
def left_over_at_once(monkeypatch):
    """Any folder nobody holds counts as left over, however young."""
    monkeypatch.setattr(folders, "LEFT_OVER_SECONDS", 0)


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


def test_a_folder_whose_maker_died_is_swept_by_the_next(
    tmp_path, left_over_at_once, made_by_a_process
):
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
    tmp_path, left_over_at_once, made_by_a_process
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


def test_a_young_folder_nobody_holds_yet_is_left_alone(tmp_path):
    # Made, and about to be locked by its maker: not left over.
    young = tmp_path / f"{PREFIX}young"
    young.mkdir()
    folders.sweep(str(tmp_path), PREFIX)
    assert young.is_dir()


def test_the_sweep_leaves_other_names_and_files_alone(tmp_path, left_over_at_once):
    other = tmp_path / "refapi-other-1"
    other.mkdir()
    a_file = tmp_path / f"{PREFIX}file"
    a_file.write_text("")
    folders.sweep(str(tmp_path), PREFIX)
    assert other.is_dir() and a_file.is_file()


def test_a_process_folder_outlives_a_forked_child_and_goes_with_its_maker(tmp_path):
    # A preloaded gunicorn's worker exits (replaced, or the server stops) before
    # its master: the folder its siblings still use stays.
    script = textwrap.dedent(f"""
        import os
        from refapi import folders
        environ = {{}}
        folder = folders.prepare_for_process("F", {PREFIX!r}, environ)
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
