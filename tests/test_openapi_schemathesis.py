"""schemathesis against the app in process: requests generated from /openapi.json,
and from the lab's own document, /lab/openapi.json.

The document the app serves is loaded over WSGI, and schemathesis' engine (what its
command line runs) sends each operation a fixed number of generated requests, valid
and invalid, seeded and deterministic: its examples, the boundary cases of every
schema (coverage), random ones (fuzzing), and chains that follow the links it infers
(create, then read, change or delete). Every operation runs, HEAD, OPTIONS, the
paths without /v1 and the lab's statuses included, as ``schemathesis run`` runs them
with tests/schemathesis.toml; and every check, as ``--checks all`` runs them: it
fails on a 500 (but where the lab's /lab/status is asked for one), on a status the
document does not list
for the operation (a 502-504 included), on a body, Content-Type or header that does
not match the document, on invalid data accepted or valid data refused, on a missing
required header or an undocumented method not refused, on an ``Allow`` that names
other methods than the document, on an operation that needs a credential answering
without one, and on a created resource that cannot be read or a deleted one that
still can. The rate limit is out of reach and the proxy's allow-list empty, so the
proxy never leaves the machine; the database is the test's own.

The examples, coverage and fuzzing phases run in SHARDS tests, each over its part of
the operations, and the stateful phase in one test over the whole document, so that
pytest-xdist spreads them over its workers; the parts hold every operation once.
REFAPI_SCHEMATHESIS_EXAMPLES and REFAPI_SCHEMATHESIS_SEED run it deeper, or with
other requests (docs/development.md, "OpenAPI and schemathesis").
"""

from __future__ import annotations

import gzip
import os
import re
import tomllib
import zlib
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

import brotli
import pytest
from schemathesis import engine, openapi
from schemathesis.config import SchemathesisConfig
from schemathesis.engine import events
from werkzeug.test import Client

from refapi import create_app
from refapi.config import Config
from refapi.web.auth import new_secret, secret_hash
from tests.conftest import TEST_AUTH
from tests.schemathesis_checks import error_object  # and registers its checks

pytestmark = pytest.mark.slow  # the shards take 5 to 20 s each

SETTINGS = Path(__file__).with_name("schemathesis.toml")
# The unit phases (examples, coverage, fuzzing) run in shards of the document's
# operations, so pytest-xdist spreads them over its workers; the stateful phase,
# which chains operations across the document, runs over all of it in one test.
# Eight: the largest holds about a fifth of the unit phases' time, some 15 s of CPU
# (docs/development.md, "OpenAPI and schemathesis").
SHARDS = 8
# The lab's document in parts too: one test over all of it took 145 s, twice the
# largest of the core's parts, and made the suite's tail.
LAB_SHARDS = 4
UNIT_PHASES = ["examples", "coverage", "fuzzing"]
CORE, LAB = "/openapi.json", "/lab/openapi.json"  # the two documents
PARTS = {CORE: SHARDS, LAB: LAB_SHARDS}  # each document's parts
# The lab stores nothing, so none of its operations needs another's: they go to
# the parts one by one.
BY_COLLECTION = {CORE: True, LAB: False}


class AsAnAdmin:
    """An admin's Bearer token on every request that has no credential of its own,
    so the operations that need one are exercised, not just refused.

    The generated requests may change or delete the admin itself (a PUT or DELETE
    of ``/api/users/1``), so while the token is good it is reused, and when it is
    not, a new admin and token are made in the store, as a login would make them.
    """

    token = ""
    admins = 0

    def get(self, case, context) -> str:
        store = context.app.store
        live = self.token and store.find_token("bearer", secret_hash(self.token), 0.0)
        if live and live["user"] and live["user"]["role"] == "admin":
            return self.token
        self.admins += 1
        user = store.create_user(
            f"schemathesis-{self.admins}@example.com", "!", "", "", "admin",
            1_795_000_000.0,
        )  # fmt: skip
        self.token = new_secret()
        hashes = {"bearer": secret_hash(self.token)}
        store.create_tokens(new_secret(), hashes, 2**40, user_id=user["id"])
        return self.token

    def set(self, case, token: str, context) -> None:
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {token}"}


@pytest.mark.parametrize("shard", range(SHARDS))
def test_the_app_answers_as_its_document_says(database_url, tmp_path, shard):
    with _schema(database_url, tmp_path, UNIT_PHASES, shard) as schema:
        failures, sent = _run(schema)
    assert failures == [], "\n\n".join(failures)
    # Every operation of the shard was sent requests.
    ids = shards(schema.raw_schema, CORE)[shard]
    assert set(_labels(schema.raw_schema, ids)) <= set(sent)


@pytest.mark.parametrize("shard", range(LAB_SHARDS))
def test_the_lab_answers_as_its_own_document_says(database_url, tmp_path, shard):
    # The lab's document is its own (/lab/openapi.json, docs/lab.md): the unit
    # phases over each part of its operations, as the core's.
    with _schema(database_url, tmp_path, UNIT_PHASES, shard, LAB) as schema:
        failures, sent = _run(schema)
    assert failures == [], "\n\n".join(failures)
    ids = shards(schema.raw_schema, LAB)[shard]
    assert set(_labels(schema.raw_schema, ids)) <= set(sent)


def test_chains_of_operations_answer_as_the_document_says(database_url, tmp_path):
    with _schema(database_url, tmp_path, ["stateful"]) as schema:
        failures, sent = _run(schema)
    assert failures == [], "\n\n".join(failures)
    # The stateful phase chained some (create, then read, change or delete what
    # was created).
    assert sent["Stateful tests"] > 0


@pytest.mark.parametrize(("document", "count"), PARTS.items())
def test_the_shards_hold_every_operation_once(app, document, count):
    served = app.get(document).json
    parts = shards(served, document)
    ids = [
        operation["operationId"]
        for item in served["paths"].values()
        for operation in item.values()
    ]
    assert len(parts) == count and all(parts)
    assert sorted(id for part in parts for id in part) == sorted(ids)


def shards(served: dict, document: str) -> list[set[str]]:
    """The operationIds of ``served`` (the document at the path ``document``) in its
    ``PARTS``, deterministically. In the core's, the operations of one collection
    (its path without /v1 and without a final {id}) stay together, so what its POST
    creates its GETs may find, as in one run; the lab's go one by one
    (``BY_COLLECTION``). The groups go, largest budget first, each to the part with
    the least budget so far (a budget is the operation's max-examples in
    SETTINGS: the first ``[[operations]]`` entry that names one and matches the
    operation's id and path, as schemathesis reads them)."""
    settings = tomllib.loads(SETTINGS.read_text())
    default = settings["generation"]["max-examples"]
    smaller = [
        (
            re.compile(entry.get("include-operation-id-regex", "")),
            re.compile(entry.get("include-path-regex", "")),
            budget,
        )
        for entry in settings["operations"]
        if (budget := entry.get("generation", {}).get("max-examples")) is not None
    ]
    collections: dict[str, dict[str, int]] = {}
    for path, item in served["paths"].items():
        collection = re.sub(r"/\{[^}/]+\}$", "", path.removeprefix("/v1")) or "/"
        for operation in item.values():
            id = operation["operationId"]
            matching = (b for i, p, b in smaller if i.search(id) and p.search(path))
            budget = next(matching, default)
            group = collection if BY_COLLECTION[document] else id
            collections.setdefault(group, {})[id] = budget
    count = PARTS[document]
    parts: list[set[str]] = [set() for _ in range(count)]
    budgets = [0] * count
    for name in sorted(collections, key=lambda c: (-sum(collections[c].values()), c)):
        least = budgets.index(min(budgets))
        parts[least] |= set(collections[name])
        budgets[least] += sum(collections[name].values())
    return parts


@contextmanager
def _schema(
    database_url: str,
    tmp_path: Path,
    phases: list[str],
    shard: int | None = None,
    document: str = CORE,
) -> Iterator:
    """``document`` as the app serves it (the core's, or the lab's), loaded by
    schemathesis with SETTINGS and every check, to run ``phases`` over the
    operations of ``shard`` (every operation without one); the app is closed
    after."""
    config = Config(
        **TEST_AUTH,
        database_url=database_url,
        secret_key=b"test-secret",
        rate_limit_capacity=10**9,
        rate_limit_refill=10**9,
        lab_rate_limit=10**9,
        proxy_allowed_hosts=(),
        data_dir=str(tmp_path),  # the lab's delay lock
    )
    # The lab's delays wait for nothing, so the fuzzer never waits (docs/lab.md).
    app = create_app(config, sleep=lambda seconds: None)
    try:
        settings = _deeper(tomllib.loads(SETTINGS.read_text()), os.environ)
        if shard is not None:
            # The other operations disabled, as `[[operations]]` with
            # `enabled = false` disables them in schemathesis.toml.
            served = Client(app).get(document).json
            ids = sorted(shards(served, document)[shard])
            off = {"exclude-operation-id": ids, "enabled": False}
            settings["operations"] = [*settings["operations"], off]
        run = SchemathesisConfig.from_dict(settings)
        # Every check, as `schemathesis run --checks all` runs them;
        # positive_data_acceptance and use_after_free run as
        # tests/schemathesis_checks.py's accepts_positive_data and
        # reads_nothing_deleted, which know what no document can say.
        run.projects.default.checks.update(
            included_check_names=["all"],
            excluded_check_names=["positive_data_acceptance", "use_after_free"],
        )
        run.projects.default.phases.update(phases=phases)
        schema = openapi.from_wsgi(document, as_a_client_reads(app), config=run)
        schema.auth(AsAnAdmin, refresh_interval=None)
        yield schema
    finally:
        app.close()


# How an HTTP client decodes a coded body before it reads it (requests, curl
# --compressed): the lab's /lab/gzip, /lab/deflate and /lab/brotli (docs/lab.md,
# "Bodies").
DECODE = {"gzip": gzip.decompress, "deflate": zlib.decompress, "br": brotli.decompress}


def as_a_client_reads(app: WSGIApplication) -> WSGIApplication:
    """``app``, each coded body decoded as requests decodes it over HTTP, its
    Content-Encoding kept: schemathesis, in process, reads a body as sent."""

    def decoded(environ: WSGIEnvironment, start_response: StartResponse) -> list[bytes]:
        started: list = []

        def keep(status: str, headers: list, exc_info: object = None) -> object:
            started[:] = [status, headers]
            return lambda data: None  # the app returns its body, writes none

        chunks = app(environ, keep)
        try:
            body = b"".join(chunks)
        finally:
            getattr(chunks, "close", lambda: None)()
        status, headers = started
        coding = next((v for k, v in headers if k.lower() == "content-encoding"), None)
        if coding in DECODE and body:
            body = DECODE[coding](body)
            headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
            headers.append(("Content-Length", str(len(body))))
        start_response(status, headers)
        return [body]

    return decoded


def _deeper(settings: dict, environ: Mapping[str, str]) -> dict:
    """SETTINGS with another seed and more examples, when asked: a run before
    changing the document (docs/development.md, "OpenAPI and schemathesis").
    REFAPI_SCHEMATHESIS_EXAMPLES is the examples per operation and phase, and
    the smaller budgets of [[operations]] grow in proportion."""
    if seed := environ.get("REFAPI_SCHEMATHESIS_SEED"):
        settings["seed"] = int(seed)
    if examples := environ.get("REFAPI_SCHEMATHESIS_EXAMPLES"):
        default = settings["generation"]["max-examples"]
        settings["generation"]["max-examples"] = int(examples)
        for entry in settings["operations"]:
            generation = entry.get("generation", {})
            if "max-examples" in generation:
                share = generation["max-examples"] * int(examples) // default
                generation["max-examples"] = max(1, share)
    return settings


def _labels(document: dict, ids: set[str]) -> Iterator[str]:
    """The labels schemathesis gives the operations ``ids`` ("GET /v1/items")."""
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if operation["operationId"] in ids:
                yield f"{method.upper()} {path}"


def test_what_gunicorn_refuses_before_the_app_is_expected_of_any_request():
    # A request line or a header field over gunicorn's limits is 414 or 431 whatever
    # its values, and every operation lists both: a run against a live server
    # (docs/development.md) meets them with values the document calls valid, such
    # as the long path segment OPTIONS takes.
    settings = tomllib.loads(SETTINGS.read_text())
    for check in ("positive_data_acceptance", "negative_data_rejection"):
        expected = settings["checks"][check]["expected-statuses"]
        assert {"414", "431"} <= set(expected), check


def _run(schema) -> tuple[list[str], Counter[str]]:
    """Every distinct failure as text (operation, check, what was wrong, the status
    and error code answered, a curl line to reproduce it), and how many requests
    each scenario sent."""
    failures: dict[tuple[str, ...], str] = {}
    sent: Counter[str] = Counter()
    for event in engine.from_schema(schema).execute():
        if isinstance(event, events.NonFatalError):
            failures[(event.label, "error", str(event.value))] = str(event.info)
        elif isinstance(event, events.FatalError):
            failures[("", "fatal", str(event.exception))] = str(event.exception)
        elif isinstance(event, events.ScenarioFinished):
            recorder = event.recorder
            sent[recorder.label] += len(recorder.interactions)
            for case_id, checks in recorder.checks.items():
                for check in checks:
                    if check.failure_info is None:
                        continue
                    info = check.failure_info
                    answer = _answer(recorder.interactions.get(case_id))
                    key = (recorder.label, check.name, str(info.failure), answer)
                    failures.setdefault(
                        key, f"{key[0]} [{key[1]}] {key[2]} -> {answer}\n"
                        f"{info.code_sample}",
                    )  # fmt: skip
    return sorted(failures.values()), sent


def _answer(interaction) -> str:
    """The status and, for an error object, its code: what tells failures apart."""
    response = interaction and interaction.response
    if response is None:
        return "no answer"
    code = error_object(response.content).get("code", "")
    return f"{response.status_code} {code}".strip()
