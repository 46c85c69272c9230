"""The installed package: one import name, no side effects on import, a closable App.

The wheel is built from this checkout (``pip wheel``, no network: build isolation
off) and installed into a folder of the test's, so what is checked is what
``pip install .`` puts in site-packages.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from refapi import App, Config, create_app

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
         "--no-build-isolation", "--wheel-dir", str(out), str(ROOT)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    (found,) = out.glob("refapi-*.whl")
    return found


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
    assert {
        "refapi/ui/swagger/index.html",
        "refapi/ui/swagger/initializer.js",
        "refapi/ui/swagger/docs.css",
        "refapi/ui/swagger/swagger-ui/swagger-ui-bundle.js",
        "refapi/ui/swagger/swagger-ui/LICENSE",
        "refapi/ui/swagger/swagger-ui/package.json",
        "refapi/ui/index.html",
        "refapi/ui/front.html",
        "refapi/ui/app.js",
        "refapi/ui/style.css",
    } <= set(names)


def test_importing_refapi_reads_creates_and_connects_nothing(wheel, tmp_path):
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
         "--target", str(site), str(wheel)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
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
