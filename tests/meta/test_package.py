"""The installed package: one import name, no side effects on import, a closable App.

The wheel is built from this checkout (``pip wheel``, no network: build isolation
off) and installed into a folder of the test's, so what is checked is what
``pip install .`` puts in site-packages.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import urllib3

from refapi import App, Config, create_app
from tests.conftest import TEST_AUTH
from tests.helpers import building_in_the_checkout

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    with building_in_the_checkout():  # setuptools builds in the checkout's build/
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
             "--no-build-isolation", "--wheel-dir", str(out), str(ROOT)],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
    (found,) = out.glob("refapi-*.whl")
    return found


def installed(wheel: Path, site: Path) -> Path:
    """``site``, a folder ``wheel`` is installed into, as pip puts it there."""
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
         "--target", str(site), str(wheel)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return site


def test_the_wheel_installs_only_the_refapi_package(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if not name.startswith("refapi-")}
    assert top == {"refapi"}
    assert not any(
        name.startswith(("refapi/tests/", "refapi/bench/", "refapi/examples/"))
        for name in names
    )
    assert "refapi/schemas/article-create.json" in names
    assert "refapi/schemas/common-passwords.txt" in names  # the password rule's list
    # What ships under another licence ships with it (THIRD_PARTY_NOTICES.md).
    assert {
        "refapi/schemas/common-passwords-LICENSE.txt",
        "refapi/ui/swagger/swagger-ui/NOTICE",
    } <= set(names)
    metadata = next(name for name in names if name.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "License-Expression: MIT" in text
    assert any(name.endswith("licenses/LICENSE") for name in names)
    assert any(name.endswith("licenses/THIRD_PARTY_NOTICES.md") for name in names)
    assert "refapi/storage/sqlite/migrations/001_initial.sql" in names
    assert "refapi/gunicorn.conf.py" in names  # what `refapi serve` serves with
    # What `refapi check` runs: the docs' examples (docs/operating.md, "Checking a
    # deployment"), read from the package, never from a checkout.
    assert {"refapi/README.md", "refapi/docs/api.md", "refapi/check.py"} <= set(names)
    # What /guides/ serves (docs/api.md, "The guides"): every guide, and its chart.
    guides = {f"refapi/docs/{path.name}" for path in (ROOT / "docs").iterdir()}
    assert guides <= set(names) and "refapi/docs/bench.svg" in guides
    assert {
        "refapi/ui/swagger/index.html",
        "refapi/ui/swagger/initializer.js",
        "refapi/ui/swagger/docs.css",
        "refapi/ui/swagger/swagger-ui/swagger-ui-bundle.js",
        "refapi/ui/swagger/swagger-ui/LICENSE",
        "refapi/ui/swagger/swagger-ui/package.json",
        "refapi/ui/index.html",
        "refapi/ui/front.html",
        "refapi/ui/guide.html",
        "refapi/ui/app.js",
        "refapi/ui/style.css",
    } <= set(names)


def test_importing_refapi_reads_creates_and_connects_nothing(wheel, tmp_path):
    site = installed(wheel, tmp_path / "site")
    work = tmp_path / "work"
    work.mkdir()
    script = (
        "import sys, refapi, refapi.app, refapi.routes\n"
        "from refapi import create_app\n"
        "assert refapi.__file__.startswith(sys.argv[1]), refapi.__file__\n"
        "clash = {'app', 'config', 'errors', 'routes', 'web', 'storage'}\n"
        "clash &= set(sys.modules)\n"
        "assert not clash, clash\n"
    )
    subprocess.run(
        [sys.executable, "-c", script, str(site)],
        cwd=work, env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        check=True, timeout=60,
    )  # fmt: skip
    assert list(work.iterdir()) == []  # no data folder, no database


def test_application_is_made_on_first_use(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path}/lazy.db")
    import refapi.app

    refapi.app.__dict__.pop("application", None)
    assert not (tmp_path / "lazy.db").exists()
    made = refapi.app.application
    try:
        assert isinstance(made, App) and refapi.app.application is made
    finally:
        made.close()
        refapi.app.__dict__.pop("application", None)


def test_an_app_exposes_its_config_and_store_and_closes_them(tmp_path, database_url):
    config = Config(database_url=database_url, data_dir=str(tmp_path))
    app = create_app(config)
    assert app.config is config
    app.store.ping()
    app.close()
    # Closed means released: the store opens afresh when asked again.
    app.store.ping()
    app.close()


def test_the_root_init_runs_alone_under_any_folder_name():
    # pytest imports the repository's root __init__.py as a module named after the
    # folder (a clone may be called "ci-123"), with no parent package: it must run
    # no relative import at import time.
    spec = importlib.util.spec_from_file_location("ci-123", ROOT / "__init__.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert "create_app" in module.__all__


@pytest.mark.e2e
def test_refapi_serve_from_the_wheel_serves_with_no_checkout(wheel, tmp_path):
    # The wheel alone, in a folder outside the checkout: the settings ship with it
    # (docs/operating.md, "The refapi command").
    site = installed(wheel, tmp_path / "site")
    work = tmp_path / "work"
    work.mkdir()
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(site),  # before the checkout's editable install
        "PYTHONUNBUFFERED": "1",
        "REFAPI_PASSWORD_HASH": TEST_AUTH["password_hash"],
    }
    settings = subprocess.run(
        [sys.executable, "-c", "from refapi import cli; print(cli.GUNICORN_SETTINGS)"],
        cwd=work, env=env, capture_output=True, text=True, check=True, timeout=30,
    ).stdout.strip()  # fmt: skip
    assert settings == str(site / "refapi" / "gunicorn.conf.py")
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "refapi", "serve", "--bind", "127.0.0.1:0",
             "--workers", "1"],
            cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while not (
            port := re.search(r"Listening at: http://127.0.0.1:(\d+)", log.read_text())
        ):
            assert process.poll() is None and time.monotonic() < deadline, (
                log.read_text()
            )
            time.sleep(0.05)
        base = f"http://127.0.0.1:{port.group(1)}"
        while True:  # the worker boots after the master listens
            try:
                answer = urllib3.request("GET", f"{base}/healthz", retries=False)
                break
            except urllib3.exceptions.HTTPError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
        assert answer.status == 200
        # The guides, from the package alone: a section the explainer cites.
        guide = urllib3.request("GET", f"{base}/guides/api.md", retries=False)
        assert guide.status == 200 and 'id="pagination"' in guide.data.decode()
        said = log.read_text()
        assert f"open {base}/docs (the API) and {base}/ui/ (the web UI)" in said
        assert (
            "admin@localhost, its password on the second line of data/admin-pass"
            in said
        )
        assert (work / "data" / "refapi.db").exists()
    finally:
        process.terminate()
        assert process.wait(timeout=15) == 0  # SIGTERM: a clean stop


def test_the_driver_hint_of_an_installed_wheel_adds_the_extra_to_it(wheel, tmp_path):
    # Installed from the wheel, not a checkout: the extra added to what is installed
    # (pip keeps refapi as it is and fetches only psycopg).
    from tests.test_startup import driver_hint

    pip = Path(sys.executable).with_name("pip")
    assert driver_hint(installed(wheel, tmp_path / "site")) == (
        "refapi: DATABASE_URL names PostgreSQL, whose driver is not installed:"
        f" {pip} install 'refapi[postgres]' (docs/several-hosts.md)"
    )
