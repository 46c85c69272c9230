"""schemathesis against the app in process: requests generated from /openapi.json.

The document the app serves is loaded over WSGI, and schemathesis' engine (what its
command line runs) sends each operation a fixed number of generated requests, valid
and invalid, seeded and deterministic: its examples, the boundary cases of every
schema (coverage), random ones (fuzzing), and chains that follow the links it infers
(create, then read, change or delete). Every operation runs, HEAD, OPTIONS, the
paths without /v1 and the lab's statuses included, as ``schemathesis run`` runs them
with tests/schemathesis.toml; and every check, as ``--checks all`` runs them: it
fails on a 500 (but where the lab's /api/status is asked for one), on a status the
document does not list
for the operation (a 502-504 included), on a body, Content-Type or header that does
not match the document, on invalid data accepted or valid data refused, on a missing
required header or an undocumented method not refused, on an ``Allow`` that names
other methods than the document, on an operation that needs a credential answering
without one, and on a created resource that cannot be read or a deleted one that
still can. The rate limit is out of reach and the proxy's allow-list empty, so the
proxy never leaves the machine; the database is the test's own.
"""

from __future__ import annotations

import tomllib
from collections import Counter
from pathlib import Path

from schemathesis import engine, openapi
from schemathesis.config import SchemathesisConfig
from schemathesis.engine import events

from refapi import create_app
from refapi.config import Config
from refapi.web.auth import new_secret, secret_hash
from tests.conftest import TEST_AUTH
from tests.schemathesis_checks import error_object  # and registers its checks

SETTINGS = Path(__file__).with_name("schemathesis.toml")


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


def test_the_app_answers_as_its_document_says(database_url, tmp_path):
    config = Config(
        **TEST_AUTH,
        database_url=database_url,
        secret_key=b"test-secret",
        rate_limit_capacity=10**9,
        rate_limit_refill=10**9,
        proxy_allowed_hosts=(),
        data_dir=str(tmp_path),  # the lab's delay lock
    )
    # The lab's delays wait for nothing, so the fuzzer never waits (docs/lab.md).
    app = create_app(config, sleep=lambda seconds: None)
    try:
        run = SchemathesisConfig.from_path(SETTINGS)
        # Every check, as `schemathesis run --checks all` runs them;
        # positive_data_acceptance and use_after_free run as
        # tests/schemathesis_checks.py's accepts_positive_data and
        # reads_nothing_deleted, which know what no document can say.
        run.projects.default.checks.update(
            included_check_names=["all"],
            excluded_check_names=["positive_data_acceptance", "use_after_free"],
        )
        schema = openapi.from_wsgi("/openapi.json", app, config=run)
        schema.auth(AsAnAdmin, refresh_interval=None)
        failures, sent = _run(schema)
    finally:
        app.close()
    assert failures == [], "\n\n".join(failures)
    operations = {
        f"{method.upper()} {path}"
        for path, item in schema.raw_schema["paths"].items()
        for method in item
    }
    # Every operation was sent requests, and the stateful phase chained some
    # (create, then read, change or delete what was created).
    assert operations <= set(sent)
    assert sent["Stateful tests"] > 0


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
