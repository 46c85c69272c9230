"""A TypeScript client generated from the document compiles under ``strict`` and
runs the README's round trip against a real gunicorn (docs/client.md,
"TypeScript").

openapi-typescript turns the served document into ``schema.d.ts`` in a temporary
folder (never a copy in the repository, which could go stale), beside the round
trip (``tools/contract/client/roundtrip.ts``) and its ``tsconfig.json``; ``tsc``
checks and compiles it, refusing to emit on any error, and node runs it with the
server's URL in ``REFAPI_URL``. The round trip asserts each answer itself (statuses,
ETags, the 412, the cursor, the replayed payment) and prints a line a step, which
this test reads. docs/client.md shows the command and the code: the command is
``GENERATE`` below, and each of its TypeScript blocks is a verbatim excerpt of the
round trip, so neither can drift from what runs here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.contract.conftest import TOOLS, node_tool, run_tool
from tests.e2e.conftest import gunicorn  # noqa: F401  (the real server)
from tests.e2e.harness import ROOT

# Its tests go to one worker of a parallel run (pytest-xdist's loadgroup): two of
# them read the client ``compiled`` makes, and compiling takes seconds of CPU that
# a second worker would spend again (docs/development.md, "Running the tests").
pytestmark = pytest.mark.xdist_group("contract.test_typescript_client")

CLIENT = TOOLS / "client"
GUIDE = ROOT / "docs" / "client.md"
# The commands docs/client.md shows, which the test runs with its own server:
# openapi-typescript reads the document's file in place of the URL.
URL = "http://127.0.0.1:8000/openapi.json"
GENERATE = f"npx openapi-typescript {URL} -o schema.d.ts"
COMPILE = "npx tsc -p tsconfig.json"
RUN = "REFAPI_URL=http://127.0.0.1:8000 node roundtrip.js"
RUN_SECONDS = 120


@dataclass(frozen=True)
class Compiled:
    folder: Path
    tsc: subprocess.CompletedProcess


@pytest.fixture(scope="module")
def compiled(openapi_file: Path, tmp_path_factory) -> Compiled:
    """The round trip with types from the document, compiled by tsc in a folder of
    its own, whose node_modules is the pinned tools'."""
    generator, tsc = node_tool("openapi-typescript"), node_tool("tsc")
    folder = tmp_path_factory.mktemp("typescript")
    for name in ("roundtrip.ts", "tsconfig.json", "package.json"):
        shutil.copy(CLIENT / name, folder / name)
    (folder / "node_modules").symlink_to(TOOLS / "node_modules")
    # Run from the folder: openapi-typescript lints the document with the
    # redocly.yaml of its working folder, and tools/contract's is the lint test's.
    args = GENERATE.removeprefix("npx openapi-typescript ").split()
    args[args.index(URL)] = str(openapi_file)
    generated = run_tool([generator, *args], cwd=folder)
    assert generated.returncode == 0, generated.stdout + generated.stderr
    compile_args = COMPILE.removeprefix("npx tsc ").split()
    return Compiled(folder, run_tool([tsc, *compile_args], cwd=folder))


def test_the_round_trip_compiles_under_strict(compiled):
    assert compiled.tsc.returncode == 0, compiled.tsc.stdout + compiled.tsc.stderr
    assert (compiled.folder / "roundtrip.js").is_file()


STEPS = [
    r"registered and logged in as user \d+",
    r'created article \d+, ETag "[^"]+"; 304 with If-None-Match',
    r'patched article \d+: 412 on a stale If-Match, new ETag "[^"]+"',
    r"deleted article \d+ with the new ETag; now 404",
    r"paged items 1, 2, 3, 4 with the cursor of the first page",
    r"paid pay_\w+ once; the second answer replayed it",
    r"logged out; the token is refused",
]


def test_the_round_trip_runs_against_a_live_server(compiled, gunicorn):  # noqa: F811
    assert compiled.tsc.returncode == 0, "does not compile:\n" + compiled.tsc.stdout
    server = gunicorn(workers=2)
    node = shutil.which("node")
    assert node is not None  # node_tool found the tools, which npm installed
    result = subprocess.run(
        [node, RUN.rpartition(" node ")[2]],
        cwd=compiled.folder,
        env={"PATH": os.environ["PATH"], "REFAPI_URL": server.base_url},
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(STEPS), result.stdout
    for line, step in zip(lines, STEPS, strict=True):
        assert re.fullmatch(step, line), (line, step)
    assert server.log_failures() == []


# A fence's language, then its marks (```sh skip: docs/development.md, "The docs'
# examples"), its body.
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def test_the_guide_shows_the_command_and_code_that_run_here():
    blocks = FENCE.findall(GUIDE.read_text())
    shells = [body.splitlines() for kind, body in blocks if kind == "sh"]
    assert [GENERATE, COMPILE, RUN] in shells, "docs/client.md: the commands differ"
    code = [body for kind, body in blocks if kind == "ts"]
    assert code, "docs/client.md shows no TypeScript"
    assert 'createClient<paths, "application/json">' in "".join(code)
    source = (CLIENT / "roundtrip.ts").read_text()
    for body in code:
        assert body in source, f"not in tools/contract/client/roundtrip.ts:\n{body}"
