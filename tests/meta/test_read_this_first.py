"""docs/development.md's "Read this first": the files it names exist, start at the
front door, and are every file a ``GET /v1/articles/1`` enters, traced as it runs
(``sys.setprofile``); the functions it enters, an afternoon's reading, may not grow
past the figure the guide gives."""

from __future__ import annotations

import inspect
import io
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
import webtest

from refapi import create_app
from refapi.config import Config

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "development.md"
# The lines of the functions the request enters: 752 when the lab left the core,
# as before it (the guide says the same figure). A request's path must not grow
# without a reason as good as a rule of HTTP.
MOST_LINES = 752
ADMIN = {"email": "reader@example.com", "password": "correct-horse-battery-9"}


def reading_list() -> list[Path]:
    text = GUIDE.read_text()
    section = text.split("## Read this first", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if re.match(r"\| \d+ \|", line)]
    files = [
        name
        for row in rows
        for name in re.findall(r"`([\w/]+\.py)`", row.split("|")[2])
    ]
    return [ROOT / name for name in files]


def ours(path: Path) -> bool:
    """The project's own source, not a library a virtual environment inside the
    checkout holds (``.venv``, CI's ``.venv-3.13``), a build or the tests."""
    return "site-packages" not in path.parts and path.parts[0] not in ("build", "tests")


@pytest.fixture(scope="module")
def entered(tmp_path_factory) -> Iterator[dict[tuple[Path, int, str], int]]:
    """(file, first line, name) -> lines, of each function of the package a
    ``GET /v1/articles/1`` enters, as the guide describes it: no credential,
    ``Accept: application/json``, on SQLite, the app warm (its second request)."""
    folder = tmp_path_factory.mktemp("read")
    config = Config(
        database_url=f"sqlite:///{folder}/refapi.db",
        secret_key=b"k" * 32,
        admin_email=ADMIN["email"],
        admin_password=ADMIN["password"],
        data_dir=str(folder),
    )
    app = create_app(config)
    client = webtest.TestApp(app)
    token = client.post_json("/api/login", ADMIN).json["token"]
    auth = {"Authorization": f"Bearer {token}"}
    client.post_json("/v1/articles", {"title": "A"}, headers=auth, status=201)
    environ = {
        "REQUEST_METHOD": "GET", "PATH_INFO": "/v1/articles/1",
        "SERVER_NAME": "localhost", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1", "HTTP_ACCEPT": "application/json",
        "wsgi.url_scheme": "http",
    }  # fmt: skip

    def request() -> str:
        started: list[str] = []
        answer = app(
            {**environ, "wsgi.input": io.BytesIO()},
            lambda status, headers, exc_info=None: started.append(status),
        )
        b"".join(answer)
        getattr(answer, "close", lambda: None)()
        return started[0]

    assert request() == "200 OK"  # warm: what a first request makes once is made
    found: dict[tuple[Path, int, str], int] = {}
    traced = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        path = Path(frame.f_code.co_filename).resolve()
        if not path.is_relative_to(ROOT) or not ours(path.relative_to(ROOT)):
            return
        key = (path, frame.f_code.co_firstlineno, frame.f_code.co_name)
        if key not in found:
            found[key] = len(inspect.getsourcelines(frame.f_code)[0])

    # The request's own path, not the housekeeping a request does now and then
    # (SQLite's file checked at most once a second: storage/sqlite/file.py): of
    # three requests in a row, the one that enters the fewest lines.
    for _ in range(3):
        found = {}
        sys.setprofile(profile)
        try:
            status = request()
        finally:
            sys.setprofile(None)
        assert status == "200 OK"
        traced.append(found)
    yield min(traced, key=lambda entered: sum(entered.values()))
    app.close()  # its store's connections (Python 3.13 warns of one left open)


def test_every_file_named_exists_and_the_path_starts_at_the_front_door():
    files = reading_list()
    assert files[0] == ROOT / "app.py"
    assert all(path.is_file() for path in files), files
    router = ROOT / "router" / "__init__.py"
    assert router in files and ROOT / "storage" / "records.py" in files


def test_the_reading_lists_every_file_the_request_enters(entered):
    files = {path for path, _, _ in entered}
    assert ROOT / "handlers" / "articles.py" in files  # the trace saw the request
    left_out = sorted(str(p.relative_to(ROOT)) for p in files - set(reading_list()))
    assert left_out == [], "the request enters files the guide does not list"


def test_the_reading_is_an_afternoons(entered):
    lines = sum(entered.values())
    assert 500 <= lines <= MOST_LINES, sorted(
        (n, str(p.relative_to(ROOT)), name) for (p, _, name), n in entered.items()
    )
    assert f"({MOST_LINES} lines in all)" in GUIDE.read_text()
