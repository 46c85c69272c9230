"""requests' own test suite, unedited, against the lab and against psf/httpbin side
by side: every test that passes against httpbin passes against the lab, but the
few the lab refuses by a rule of its own (docs/lab.md, "Checked by clients' own
suites").

1. requests' released source, its sdist from the package index (``pip download``,
   its SHA-256 checked), is unpacked into the checkout's ``build/clients/``, with
   an environment of its own made there from what requests declares for its tests
   (its ``test`` dependency group: pytest-httpbin, psf's httpbin, trustme, ...).
   Both are kept for the next run. Its own environment, not refapi's: psf's
   httpbin on Python 3.11 wants greenlet below 3, which Playwright's excludes
   (and the one release that installs beside it fails to import with Werkzeug 3),
   and none of refapi's pytest plugins belongs in requests' run.
2. Two refapi servers on loopback (tests/e2e/harness.py), one plain and one over
   TLS, its certificate made by the test.
3. requests' ``tests/`` runs twice at once, each run one test at a time (``-p
   no:xdist``) and bounded in time: against psf/httpbin as pytest-httpbin serves
   it, and against the lab,
   pytest-httpbin turned off and tests/clients/lab_httpbin.py serving its
   fixtures (``httpbin("get")`` is ``<server>/lab/get``). That plugin keeps both
   runs on loopback and writes each test's outcome.
4. The counts, by endpoint group (the first path a test asks httpbin for), are
   printed (``-s``) and written to ``build/clients/requests-<version>.md``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import urllib3

from tests.clients.groups import endpoint_groups, note, passing
from tests.conftest import skip_or_fail
from tests.e2e.harness import GunicornServer, launch
from tests.helpers import ROOT, building_in_the_checkout, make_certificates

VERSION = "2.34.2"
SDIST = f"requests-{VERSION}.tar.gz"
# The sdist's digest, as the package index lists it: the source this test reads.
SDIST_SHA256 = "f288924cae4e29463698d6d60bc6a4da69c89185ad1e0bcc4104f584e960b9ed"
CACHE = ROOT / "build" / "clients"
PLUGIN = Path(__file__).with_name("lab_httpbin.py")
PIP_SECONDS = 300
# A guard against a hang: a run took 80 s here, on two cores busy with other runs.
RUN_SECONDS = 900
# The tests that pass against httpbin and not against the lab, each for a rule of
# the lab's own: at most three, each named in docs/lab.md, "Checked by clients' own
# suites". The value says the rule.
REQUESTS_TESTS = "tests/test_requests.py::TestRequests::"
REFUSED = {
    "tests/test_requests.py::TestPreparingURLs::test_redirecting_to_bad_url"
    "[http://:1-InvalidURL]": "an absolute url names the request's own host or one "
    'of REFAPI_LAB_REDIRECT_HOSTS, else 403 (docs/lab.md, "Redirects")',
    REQUESTS_TESTS + "test_proxy_authorization_preserved_on_request": "the echo "
    'shows every credential redacted (docs/lab.md, "Echo")',
    REQUESTS_TESTS + "test_prepared_from_session": "the echo shows a header whose "
    'name contains auth redacted (docs/lab.md, "Echo")',
}
# The lab's bucket out of the way, as the harness puts the default one: the whole
# suite comes from one address in about a minute.
LAB_ENV = {"REFAPI_LAB_RATE_LIMIT": "1000000"}


@dataclass(frozen=True)
class Suite:
    source: Path  # the unpacked sdist: its tests/ as released
    python: Path  # of the environment its tests declare


def _run(*args: str) -> subprocess.CompletedProcess:
    """A step of the set-up (pip, venv), to its end, its output kept."""
    return subprocess.run(
        [*args], capture_output=True, text=True, timeout=PIP_SECONDS, check=False
    )


def _download(folder: Path) -> Path:
    """The sdist, from the cache or the package index; skipped (a failure in CI)
    when the index cannot be reached, failed when it is not the expected file."""
    sdist = folder / SDIST
    if not sdist.exists():
        pip = (sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary",
               ":all:", "--disable-pip-version-check", "--dest", str(folder),
               f"requests=={VERSION}")  # fmt: skip
        done = _run(*pip)
        if done.returncode != 0 or not sdist.exists():
            tail = done.stderr.strip().splitlines()[-1:] or ["(no output)"]
            skip_or_fail(f"the package index cannot be reached: {tail[0]}")
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    if digest != SDIST_SHA256:
        sdist.unlink()
        pytest.fail(f"{SDIST} is not the released file: sha256 {digest}")
    return sdist


def _environment(sdist: Path, source: Path, venv: Path) -> Path:
    """A virtual environment with requests from ``sdist`` and its test group."""
    shutil.rmtree(venv, ignore_errors=True)
    python = venv / "bin" / "python"
    steps = (
        (sys.executable, "-m", "venv", str(venv)),
        # dependency groups (PEP 735) need pip 25.1, as in the Makefile
        (str(python), "-m", "pip", "install", "--upgrade", "pip>=25.1"),
        (str(python), "-m", "pip", "install", "--disable-pip-version-check",
         f"requests[socks] @ {sdist.as_uri()}",
         "--group", f"{source / 'pyproject.toml'}:test"),
    )  # fmt: skip
    for step in steps:
        done = _run(*step)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    (venv / "ready").touch()
    return python


def _unpack(sdist: Path, source: Path) -> None:
    """The sdist's files at ``source``, whole or not at all (a run cut short
    mid-way leaves a folder the next one removes)."""
    unpacking = source.with_name("unpacking")
    shutil.rmtree(unpacking, ignore_errors=True)
    with tarfile.open(sdist) as archive:
        archive.extractall(unpacking, filter="data")
    (unpacking / source.name).rename(source)
    unpacking.rmdir()


@pytest.fixture(scope="module")
def suite() -> Suite:
    """requests' released suite and its environment, made once and kept."""
    folder = CACHE / f"requests-{VERSION}"
    with building_in_the_checkout():
        folder.mkdir(parents=True, exist_ok=True)
        sdist = _download(folder)
        source = folder / f"requests-{VERSION}"
        if not source.exists():
            _unpack(sdist, source)
        venv = folder / f"venv-{sys.version_info.major}.{sys.version_info.minor}"
        python = venv / "bin" / "python"
        if not (venv / "ready").exists():
            python = _environment(sdist, source, venv)
    return Suite(source, python)


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Iterator[dict[str, str]]:
    """Two refapi servers, plain and over TLS: the plugin's environment for them."""
    base = tmp_path_factory.mktemp("lab")
    certificates = make_certificates(base, "IP:127.0.0.1, DNS:localhost")
    tls = ("--certfile", str(certificates / "leaf.pem"),
           "--keyfile", str(certificates / "leaf.key"))  # fmt: skip
    servers: list[GunicornServer] = []
    try:
        for name, extra, ready in (("plain", (), "healthz"), ("tls", tls, "booted")):
            servers.append(launch(
                base / name, workers=4, db_path=base / f"{name}.db", env=LAB_ENV,
                ready=ready, extra_args=extra,
            ))  # fmt: skip
        plain, secure = servers
        secure_url = f"https://127.0.0.1:{secure.port}"
        with urllib3.PoolManager(ca_certs=str(certificates / "ca.pem")) as client:
            assert client.request("GET", secure_url + "/healthz").status == 200
        yield {
            "LAB_HTTPBIN_URL": plain.url("/lab"),
            "LAB_HTTPBIN_SECURE_URL": secure_url + "/lab",
            "LAB_HTTPBIN_CA_BUNDLE": str(certificates / "ca.pem"),
        }
        for server in servers:
            assert server.log_failures() == [], server.log()[-3000:]
    finally:
        for server in servers:
            server.stop()


def run_suite(suite: Suite, side: str, env: dict[str, str]) -> dict[str, dict]:
    """requests' tests/ against one side: each test's outcome, by node id."""
    results = CACHE / f"requests-{VERSION}-{side}.json"
    log = CACHE / f"requests-{VERSION}-{side}.log"
    results.unlink(missing_ok=True)
    environ = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PYTEST_", "LAB_HTTPBIN_")) and name != "PYTHONPATH"
    }
    # The released files stay as released: no bytecode written beside them.
    environ.update(PYTHONPATH=str(PLUGIN.parent), PYTHONDONTWRITEBYTECODE="1",
                   LAB_HTTPBIN_RESULTS=str(results), **env)  # fmt: skip
    turned_off = ("-p", "no:httpbin") if env else ()
    args = (str(suite.python), "-m", "pytest", "tests", "-q", "-p", "no:xdist",
            "-p", "no:cacheprovider", *turned_off, "-p", PLUGIN.stem)  # fmt: skip
    with open(log, "w") as output:
        try:
            done = subprocess.run(
                args, cwd=suite.source, env=environ, stdout=output,
                stderr=subprocess.STDOUT, timeout=RUN_SECONDS, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            pytest.fail(f"requests' suite against {side} overran {RUN_SECONDS} s")
    # 0: all passed, 1: some failed; anything else is a run that did not happen.
    assert done.returncode in (0, 1), log.read_text()[-5000:]
    return json.loads(results.read_text())


@pytest.mark.e2e
@pytest.mark.slow
def test_requests_passes_against_the_lab_what_it_passes_against_httpbin(suite, lab):
    # Both at once: a run spends most of its 80 s waiting on requests' own
    # time-outs, so side by side they take the time of one.
    with ThreadPoolExecutor(2) as both:
        runs = {
            "psf/httpbin": both.submit(run_suite, suite, "httpbin", {}),
            "refapi": both.submit(run_suite, suite, "refapi", lab),
        }
        outcomes = {side: run.result() for side, run in runs.items()}
    reference, lab_passed = (passing(ran) for ran in outcomes.values())
    lost = reference - lab_passed
    title = f"requests {VERSION}'s own suite, unedited, against each server"
    report = note(title, outcomes, endpoint_groups(suite.source), REFUSED)
    (CACHE / f"requests-{VERSION}.md").write_text(report)
    print(report)
    assert reference, "no test passed against psf/httpbin"
    assert sorted(lost - set(REFUSED)) == [], report
    # A refusal that no longer costs a test goes from REFUSED and the docs.
    assert sorted(set(REFUSED) - lost) == []


def test_each_refusal_is_named_in_the_docs():
    docs = (ROOT / "docs" / "lab.md").read_text()
    section = docs.partition("## Checked by clients' own suites")[2]
    section = section.partition("\n## ")[0]
    assert len(REFUSED) <= 3
    for test in REFUSED:
        name = test.rpartition("::")[2].partition("[")[0]
        assert f"`{name}`" in section, name
