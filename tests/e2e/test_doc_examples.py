"""The docs' examples, run: every shell session in README.md and docs/*.md, against
a live server started for that file alone.

A session is a fenced block marked ``console`` whose lines are indented two
spaces: ``$ `` starts a command (``> `` continues it), the lines below are what it
prints, and ``(glob)`` or ``(re)`` at the end of a line stands for what must vary
(ids, times, tokens). prysk, Cram's maintained fork, runs the sessions of a file
in one shell, in order, and answers with a unified diff when the output differs,
so an example that drifts from what the service does fails here. Everything
outside those blocks is prose to it: its lines are unindented before prysk reads
them, so a list's continuation line is never taken for expected output.

Each file gets a fresh gunicorn (two sync workers, as ``make run`` on one core
would start) and a working folder laid out as a checkout after ``make run``:
``data/`` holding the server's database and ``admin-password.txt``, ``.venv``
the environment the tests run in. The shell finds the server's URL in ``$BASE``.
"""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import prysk.test
import pytest

from tests.conftest import skip_or_fail

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
DOCS = [
    "README.md",
    *sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob("docs/*.md")),
]
FENCE = re.compile(r"^\s*(```+|~~~+)\s*(\S*)")
SESSION = "console"
PROMPT = re.compile(r"^\s*\$ ")


@dataclass(frozen=True)
class Server:
    """How a file's server is started: settings beyond ``make run``'s, the app."""

    env: dict[str, str] = field(default_factory=dict)
    app: str = "refapi:create_app()"
    health: str = "/healthz"


# What a file's examples need of its server ({data}: its data folder). The rest run
# against the defaults, the rate limit included, as a person's `make run` would.
SERVERS = {
    # The proxy's examples fetch from the server itself, by address (+private) and
    # by a name whose plain entry does not reach loopback.
    "docs/api.md": Server(
        {"REFAPI_PROXY_ALLOWED_HOSTS": "127.0.0.1+private,localhost"}
    ),
    # A small, slow bucket, so that a loop of requests meets 429.
    "docs/rate-limits.md": Server(
        {"REFAPI_RATE_LIMIT_CAPACITY": "5", "REFAPI_RATE_LIMIT_REFILL": "0.2"}
    ),
    # The gateway as `make run-gateway` starts it: its files under data/gateway.
    "docs/embedding.md": Server(
        {"REFAPI_DATA_DIR": "{data}/gateway"},
        app="examples.gateway:create_gateway()",
        health="/prod/healthz",
    ),
}


def sessions_of(text: str) -> list[bytes]:
    """The lines prysk reads: ``console`` blocks as they are, the rest unindented."""
    lines, fence, in_session = [], "", False
    for line in text.splitlines(keepends=True):
        opened = FENCE.match(line)
        if fence and opened and opened.group(1).startswith(fence[0] * len(fence)):
            fence = ""
        elif not fence and opened:
            fence = opened.group(1)
            in_session = opened.group(2) == SESSION
            lines.append(line.lstrip())
            continue
        if fence and in_session:
            lines.append(line)
        else:
            lines.append(line.lstrip())
    return [line.encode() for line in lines]


def unrun_prompts(text: str) -> list[str]:
    """Lines of other fenced blocks that read as a session: they would never run."""
    found, fence, kind = [], "", ""
    for number, line in enumerate(text.splitlines(), 1):
        opened = FENCE.match(line)
        if fence and opened:
            fence = ""
        elif opened:
            fence, kind = opened.group(1), opened.group(2)
        elif fence and kind != SESSION and PROMPT.match(line):
            found.append(f"line {number}: {line.strip()}")
    return found


def run_sessions(text: str, name: str, work: Path, base: str) -> str:
    """Run ``text``'s sessions in ``work`` with ``$BASE``; prysk's diff, or ''."""
    for tool in ("bash", "curl", "python3"):  # what the examples type
        if shutil.which(tool, path="/usr/local/bin:/usr/bin:/bin") is None:
            skip_or_fail(f"the docs' examples need {tool}")
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(work),
        "BASE": base,
    }
    _, _, diff = prysk.test.test(
        sessions_of(text), shell="/bin/bash", testname=Path(name), env=env,
        dos2unix=True,  # curl -i prints each header line with its CR
    )  # fmt: skip
    return b"".join(diff).decode(errors="replace")


@pytest.fixture
def work(tmp_path, monkeypatch) -> Path:
    """A folder laid out as a checkout after `make run`: data/ and .venv."""
    folder = tmp_path / "work"
    (folder / "data").mkdir(parents=True)
    (folder / ".venv").symlink_to(Path(sys.prefix))
    monkeypatch.chdir(folder)  # prysk's shell runs in the current folder
    return folder


def start(gunicorn, work: Path, server: Server):
    data = work / "data"
    env = {
        # The defaults a person's `make run` has; the harness's are for load tests.
        "REFAPI_RATE_LIMIT_CAPACITY": "100",
        "REFAPI_RATE_LIMIT_REFILL": "10",
        "REFAPI_AUTH_RATE_LIMIT": "10",
        "REFAPI_REGISTER_RATE_LIMIT": "5",
        # No admin named: the first start writes data/admin-password.txt.
        "REFAPI_ADMIN_EMAIL": "",
        "REFAPI_ADMIN_PASSWORD": "",
        "REFAPI_DATA_DIR": str(data),
    }
    env.update({k: v.format(data=data) for k, v in server.env.items()})
    return gunicorn(
        workers=2, db_path=data / "refapi.db", env=env, app=server.app,
        health=server.health,
    )  # fmt: skip


@pytest.mark.parametrize("name", DOCS)
def test_the_examples_of_a_doc_are_what_the_service_answers(gunicorn, work, name):
    text = (ROOT / name).read_text()
    assert unrun_prompts(text) == [], f"{name}: a session outside a console block"
    server = start(gunicorn, work, SERVERS.get(name, Server()))
    diff = run_sessions(text, name, work, server.base_url)
    assert diff == "", f"{name} drifted from the service:\n{diff}"
    assert server.log_failures() == []


DRIFTED = """\
# A todo

List items' continuation lines, indented, are prose:

- a todo is read
  with one GET

```console
  $ curl -s $BASE/v1/todos/1
  {"userId":1,"id":1,"title":"a title nobody wrote","completed":false} (no-eol)
  $ curl -s -o /dev/null -w '%{http_code}\\n' $BASE/v1/todos/2
  200
```
"""


def test_an_example_that_drifted_fails_with_the_diff(gunicorn, work):
    server = start(gunicorn, work, Server())
    diff = run_sessions(DRIFTED, "drifted.md", work, server.base_url)
    removed = [line for line in diff.splitlines() if line.startswith("-  ")]
    added = [line for line in diff.splitlines() if line.startswith("+  ")]
    assert removed == ['-  {"userId":1,"id":1,"title":"a title nobody wrote",'
                       '"completed":false} (no-eol)']  # fmt: skip
    assert len(added) == 1 and '"title":"a title nobody wrote"' not in added[0]
    assert added[0].startswith('+  {"userId":1,"id":1,"title":')
    fixed = DRIFTED.replace('"a title nobody wrote"', '"*"').replace(
        "(no-eol)", "(no-eol) (glob)"
    )
    assert run_sessions(fixed, "fixed.md", work, server.base_url) == ""


def test_a_session_outside_a_console_block_is_found():
    text = "```sh\n$ curl -s $BASE/healthz\n```\n\n```console\n  $ true\n```\n"
    assert unrun_prompts(text) == ["line 2: $ curl -s $BASE/healthz"]


LINK = re.compile(r"\]\((?!https?:|mailto:)([^)#\s]*)(?:#([^)\s]+))?\)")


def slug(heading: str) -> str:
    """The anchor a Markdown renderer gives a heading (GitHub's rule)."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    lines = path.read_text().splitlines()
    return {slug(line.lstrip("#")) for line in lines if line.startswith("#")}


@pytest.mark.parametrize("name", DOCS)
def test_every_link_between_the_docs_reaches_a_file_and_a_heading(name):
    # Code comments cite these headings ("docs/authentication.md, 'Login
    # failures'"), so a renamed heading must show up here, not in a dead link.
    source = ROOT / name
    for target, anchor in LINK.findall(source.read_text()):
        path = (source.parent / target) if target else source
        assert path.exists(), f"{name}: {target} does not exist"
        if anchor:
            assert anchor in anchors(path), f"{name}: no heading #{anchor} in {target}"


def test_the_readme_fits_on_a_few_screens():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 160
