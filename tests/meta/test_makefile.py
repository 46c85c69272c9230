"""The Makefile as a newcomer meets it: `make` lists the targets, the first install
is light (what serving needs) and says what it does in a few lines instead of pip's
and setuptools' output, and `make test` starts the machine's PostgreSQL when it is
stopped, then runs the suite on both backends."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The targets a person is told about (README, "Quick start"), each with its line.
TARGETS = [
    "help", "venv", "tools", "dist", "run", "run-gateway", "test", "lint", "format",
    "reset", "reset-all", "clean", "chromium", "postgres", "wrk", "bench",
    "bench-inproc", "bench-instructions", "bench-layers", "bench-workers", "docker",
    "image-wheels",
    "image", "image-test", "system-tools", "systemd-analyze",
]  # fmt: skip
MAKE = shutil.which("make") or "make"  # by its path: a test may give make a PATH
HELP_LINE = re.compile(r"  make (?P<target>[a-z-]+) +(?P<what>\S.*)")


# What a make running these tests passes down (`make test VENV=.venv-3.13` sets
# MAKEFLAGS): a newcomer's make has none of it.
# ONCE, TEST_JOBS and PYTEST_ARGS too: a variable given on make's command line is
# in its recipes' environment.
INHERITED = {
    "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "VENV", "PYTHON", "ONCE",
    "TEST_JOBS", "PYTEST_ARGS",
}  # fmt: skip


def make(
    *args: str, cwd: Path = ROOT, timeout: float = 30, path: str | None = None
) -> str:
    env = {k: v for k, v in os.environ.items() if k not in INHERITED}
    if path is not None:
        env["PATH"] = path
    done = subprocess.run(
        [MAKE, "--no-print-directory", *args], cwd=cwd, env=env,
        capture_output=True, text=True, timeout=timeout, check=True,
    )  # fmt: skip
    return done.stdout + done.stderr


def test_make_alone_prints_the_help_with_one_line_a_target():
    listed = make()
    assert listed == make("help")
    lines = listed.splitlines()
    matches = [HELP_LINE.fullmatch(line) for line in lines]
    assert all(matches), lines
    targets = [match["target"] for match in matches if match]
    assert len(targets) == len(set(targets))
    assert set(TARGETS) <= set(targets)


@pytest.mark.slow
def test_the_first_install_is_light_and_says_what_it_does(tmp_path):
    # A copy of the checkout, so its strict editable link tree (build/) is its own.
    copy = tmp_path / "refapi"
    shutil.copytree(
        ROOT, copy, symlinks=True,
        ignore=shutil.ignore_patterns(
            ".venv*", "build", "data", ".git", "test-output", "*_cache", "__pycache__",
            "node_modules", "dist",
        ),
    )  # fmt: skip
    said = make("venv", cwd=copy, timeout=300)
    log = copy / ".venv" / "install.log"
    lines = said.splitlines()
    assert lines[:2] == [
        "creating .venv with python3",
        "installing refapi and what serving needs (log: .venv/install.log)",
    ]
    done = re.fullmatch(r"installed in \d+ s; \.venv takes (\d+) MB", lines[2])
    assert done and len(lines) == 3, said
    assert int(done[1]) < 60  # README, "Quick start"
    assert "*****" not in said and "Successfully installed" in log.read_text()
    bin = copy / ".venv" / "bin"
    assert (bin / "refapi").exists() and (bin / "gunicorn").exists()
    # The tools come with `make test`, not `make run`.
    assert not (bin / "pytest").exists() and not (bin / "playwright").exists()


def test_the_guides_are_package_files_so_a_new_one_redoes_the_install():
    # The strict editable install links each file: a guide added (served at
    # /guides/, docs/api.md "The guides") is found only after a reinstall.
    listed = make("--eval", "files: ; @echo $(PACKAGE_FILES)", "files").split()
    guides = {f"docs/{path.name}" for path in (ROOT / "docs").iterdir()}
    assert guides | {"README.md", "ui/guide.html"} <= set(listed)
    assert not [name for name in listed if name.startswith(("tests/", "bench/"))]


def test_make_run_serves_with_the_refapi_command_and_test_adds_the_tools():
    run = make("-n", "run").splitlines()
    assert run[-1] == ".venv/bin/refapi serve"
    tests = make("-n", "-W", "pyproject.toml", "lint").splitlines()
    assert any("--group test" in line for line in tests), tests


# -- make test: one run, in parallel, both backends ---------------------------------

# pytest as `make test` runs it: writing bytecode whatever the environment says, as
# its plugins load before tests/conftest.py's keep_bytecode (docs/development.md,
# "Running the tests").
PYTEST = "PYTHONDONTWRITEBYTECODE= .venv/bin/pytest"


def test_make_test_runs_every_test_once_in_parallel_after_the_cluster_starts():
    # -n: the commands `make test` would run, none run. One run: the tests on
    # PostgreSQL are parametrized cases of it (tests/conftest.py), and the contract
    # checks (tests/contract) and the container image (tests/image) are in it too,
    # since they depend on neither the Python nor the backend (docs/development.md,
    # "Running the tests").
    commands = make("-n", "test", "TEST_JOBS=3").splitlines()
    runs = [line for line in commands if "bin/pytest" in line]
    assert runs == [f"{PYTEST} -n 3  "]
    # The cluster is started before the first test runs.
    assert commands.index(runs[0]) > next(
        i for i, line in enumerate(commands) if "pg_lsclusters" in line
    )


def test_make_test_runs_three_workers_a_core_unless_told():
    cores = os.cpu_count()
    runs = [line for line in make("-n", "test").splitlines() if "bin/pytest" in line]
    assert runs == [f"{PYTEST} -n {3 * cores}  "]


def fake_postgres_tools(folder: Path, status: str) -> Path:
    """pg_lsclusters showing one cluster 15/main of ``status``, and a pg_ctlcluster
    that writes its arguments to ``started`` in ``folder``: the real cluster is
    the machine's, shared, and never stopped or started by a test."""
    folder.mkdir()
    line = f"15  main    5432 {status}   postgres /var/lib/postgresql/15/main log"
    tools = {
        "pg_lsclusters": f'[ "$1" = --no-header ] && echo "{line}"',
        "pg_ctlcluster": f'echo "$@" >> {folder / "started"}',
    }
    for name, body in tools.items():
        (folder / name).write_text(f"#!/bin/sh\n{body}\n")
        (folder / name).chmod(0o755)
    return folder / "started"


def test_make_postgres_starts_a_stopped_cluster_and_says_so(tmp_path):
    started = fake_postgres_tools(tmp_path / "bin", "down")
    said = make("postgres", path=f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    assert said == "starting PostgreSQL 15/main for the tests\n"
    assert started.read_text() == "--skip-systemctl-redirect 15 main start\n"


def test_make_postgres_leaves_a_running_cluster_alone(tmp_path):
    started = fake_postgres_tools(tmp_path / "bin", "online")
    assert make("postgres", path=f"{tmp_path / 'bin'}:{os.environ['PATH']}") == ""
    assert not started.exists()


def test_make_postgres_without_the_cluster_tools_does_nothing(tmp_path):
    # A PATH with what the Makefile itself runs, and no pg_lsclusters.
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("sh", "git", "grep", "cat", "sha1sum", "cut"):
        found = shutil.which(name)
        assert found, name
        (tools / name).symlink_to(found)
    assert make("postgres", path=str(tools)) == ""


def test_ci_second_pass_leaves_the_contract_checks_and_the_image_out():
    # They depend on neither the Python nor the backend: the first pass ran them.
    commands = make("-n", "test", "ONCE=no", "TEST_JOBS=3").splitlines()
    runs = [line for line in commands if "bin/pytest" in line]
    once_only = "--ignore=tests/contract --ignore=tests/image"
    assert runs == [f"{PYTEST} -n 3 {once_only} "]
    assert "ONCE=no" in (ROOT / ".ci" / "run").read_text()


def environment_is_current() -> bool:
    """Whether ``make run`` would use the environment these tests run in as it is
    (``make -q``: exit 0 when the sentinel is up to date)."""
    venv = f"VENV={Path(sys.prefix).name}"
    env = {k: v for k, v in os.environ.items() if k not in INHERITED}
    done = subprocess.run(
        [MAKE, "-q", venv, "venv"], cwd=ROOT, env=env, timeout=30, check=False
    )
    return done.returncode == 0


def test_the_environment_the_tests_run_in_is_current():
    assert environment_is_current()


def a_checkout_of_names(folder: Path) -> Path:
    """A git repository with the Makefile, pyproject.toml, and an empty file for
    each file git tracks here: what the environment's sentinel is made of. A stray
    file goes there, never into this checkout, where the other tests of a parallel
    run would meet it (and `make image-wheels` would rebuild .venv under them)."""
    folder.mkdir()
    tracked = (
        subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, tracked):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).touch()
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, folder / name)
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    subprocess.run(["git", "add", "-A"], cwd=folder, check=True)
    return folder


def sentinel(checkout: Path) -> str:
    """The install's sentinel `make run` looks for in ``checkout``."""
    return make("--eval", "sentinel: ; @echo $(SENTINEL)", "sentinel", cwd=checkout)


@pytest.mark.parametrize(
    ("stray", "reinstalls"),
    [
        ("client.json", False),  # a file left at the root
        ("notes.py", False),
        ("storage/stray_module.py", True),  # a new module the install must link
        ("schemas/stray.json", True),
    ],
)
def test_only_a_new_file_inside_the_package_rebuilds_the_environment(
    tmp_path, stray, reinstalls
):
    checkout = a_checkout_of_names(tmp_path / "refapi")
    before = sentinel(checkout)
    (checkout / stray).write_text("{}\n")
    assert (sentinel(checkout) != before) is reinstalls
    (checkout / stray).unlink()
    assert sentinel(checkout) == before
