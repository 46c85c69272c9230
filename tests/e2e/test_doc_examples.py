"""The docs' examples, run: every ``sh`` block of README.md and docs/*.md against a
live server, compared with the ``output`` block after it (doc_examples.py has the
format, docs/development.md "The docs' examples" says it in words).

The walk: one server started with the settings of the README's ``sh server``
block (its "Before you start"), then the README's examples, then each guide's in
the order the README lists them, one bash a file (a reader opens each guide in a
new terminal: shell variables do not carry over, the server's records do). A guide
with a ``sh server`` block of its own (the rate-limit guide's small bucket, the
embedding guide's gateway) gets that server alone instead.

Each server gets a working folder laid out as a checkout after ``make run``:
``data/`` holding its database and ``admin-password.txt``, ``.venv`` the
environment the tests run in, ``examples/`` the checkout's. The shell finds the
server's URL in ``$BASE``.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from refapi import doc_examples
from tests.conftest import skip_or_fail

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
DOCS = [
    "README.md",
    *sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob("docs/*.md")),
]
PATH = "/usr/local/bin:/usr/bin:/bin"
LINK = re.compile(r"\]\((?!https?:|mailto:)([^)#\s]*)(?:#([^)\s]+))?\)")


def text_of(name: str) -> str:
    return (ROOT / name).read_text()


def the_walk() -> list[str]:
    """The README, then the guides in the order it links them, own servers aside."""
    linked = [target for target, _ in LINK.findall(text_of("README.md"))]
    guides = [name for name in dict.fromkeys(linked) if name in DOCS]
    return ["README.md"] + [
        name for name in guides if doc_examples.server_of(text_of(name)) is None
    ]


OWN_SERVERS = [
    name for name in DOCS[1:] if doc_examples.server_of(text_of(name)) is not None
]


@pytest.fixture
def work(tmp_path) -> Path:
    """A folder laid out as a checkout after `make run`: data/, .venv and the
    examples the lab's report card runs (docs/lab.md)."""
    folder = tmp_path / "work"
    (folder / "data").mkdir(parents=True)
    (folder / ".venv").symlink_to(Path(sys.prefix))
    (folder / "examples").symlink_to(ROOT / "examples")
    return folder


def start(gunicorn, work: Path, name: str):
    """The server the file's ``sh server`` block starts, as ``make`` would."""
    found = doc_examples.server_of(text_of(name))
    assert found is not None, f"{name}: no sh server block"
    return serve(gunicorn, work, *found)


def serve(gunicorn, work: Path, settings: dict[str, str], target: str = "run"):
    """The server ``NAME=value ... make TARGET`` starts: ``make run``'s defaults."""
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
        **settings,
    }
    app, health = "refapi:create_app()", "/healthz"
    if target == "run-gateway":  # as the Makefile starts it: its files in data/gateway
        app, health = "examples.gateway:create_gateway()", "/prod/healthz"
        env["REFAPI_DATA_DIR"] = str(data / "gateway")
    return gunicorn(
        workers=2, db_path=data / "refapi.db", env=env, app=app, health=health
    )


def differences(names: list[str], work: Path, base: str) -> list[str]:
    """Run each file's examples in a bash of its own; what differs, an example each."""
    for tool in ("bash", "curl", "python3"):  # what the examples type
        if shutil.which(tool, path=PATH) is None:
            skip_or_fail(f"the docs' examples need {tool}")
    env = {"PATH": PATH, "HOME": str(work), "BASE": base}
    found = []
    for name in names:
        examples = doc_examples.examples_of(text_of(name), name)
        for ran in doc_examples.run(examples, cwd=work, env=env):
            if said := ran.difference():
                found.append(f"{ran.example.name} differs:\n{said}")
    return found


@pytest.mark.parametrize("name", DOCS)
def test_a_doc_is_written_in_the_format(name):
    assert doc_examples.mistakes_of(text_of(name)) == []


def test_the_walk_covers_every_guide_with_examples():
    walked = set(the_walk()) | set(OWN_SERVERS)
    unwalked = [
        name
        for name in DOCS
        if name not in walked and doc_examples.examples_of(text_of(name), name)
    ]
    assert unwalked == []
    assert OWN_SERVERS == ["docs/embedding.md", "docs/rate-limits.md"]


def test_the_readme_and_the_guides_in_order_on_one_server(gunicorn, work):
    server = start(gunicorn, work, "README.md")
    found = differences(the_walk(), work, server.base_url)
    assert found == [], "\n\n".join(found)
    assert server.log_failures() == []
    # No example leaves a file in the checkout (a secret least of all).
    assert sorted(p.name for p in work.iterdir()) == [".venv", "data", "examples"]


@pytest.mark.parametrize("name", OWN_SERVERS)
def test_a_guide_with_a_server_of_its_own(gunicorn, work, name):
    server = start(gunicorn, work, name)
    found = differences([name], work, server.base_url)
    assert found == [], "\n\n".join(found)
    assert server.log_failures() == []


DRIFTED = """\
# A todo

```sh
curl -s "$BASE/v1/todos/1"
```

```output
{"userId":1,"id":1,"title":"a title nobody wrote","completed":false}
```

```sh
curl -s -o /dev/null -w '%{http_code}\\n' "$BASE/v1/todos/2"
```

```output
200
```
"""


def test_an_example_that_drifted_fails_with_the_diff(gunicorn, work):
    server = start(gunicorn, work, "README.md")
    drifted = doc_examples.examples_of(DRIFTED, "drifted.md")
    env = {"PATH": PATH, "HOME": str(work), "BASE": server.base_url}
    first, second = doc_examples.run(drifted, cwd=work, env=env)
    said = first.difference().splitlines()
    assert [line for line in said if line.startswith(("-{", "+{"))] == [
        '-{"userId":1,"id":1,"title":"a title nobody wrote","completed":false}',
        '+{"userId":1,"id":1,"title":"review the cursor #1","completed":false}',
    ]
    assert second.difference() == ""
    fixed = DRIFTED.replace('"a title nobody wrote"', '"<any>"')
    ran = doc_examples.run(doc_examples.examples_of(fixed, "f.md"), cwd=work, env=env)
    assert [r.difference() for r in ran] == ["", ""]


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
