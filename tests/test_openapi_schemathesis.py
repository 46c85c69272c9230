"""schemathesis against the app in process: requests generated from /openapi.json.

The document the app serves is loaded over WSGI, and schemathesis' engine (what its
command line runs) sends each operation a fixed number of generated requests, valid
and invalid, seeded and deterministic: its examples, the boundary cases of every
schema (coverage), random ones (fuzzing), and chains that follow the links it infers
(create, then read, change or delete). It fails on a 500, on a status the document
does not list for the operation (a 502-504 included), on a body, Content-Type or
header that does not match the document, on invalid data accepted, on a missing
required header or an undocumented method not refused, and on a created resource
that cannot be read or a deleted one that still can. The rate limit is out of reach
and the proxy's allow-list empty, so the proxy never leaves the machine; the
database is the test's own.
"""

from __future__ import annotations

from collections import Counter

from schemathesis import engine, openapi
from schemathesis.config import SchemathesisConfig
from schemathesis.engine import events

from refapi import create_app
from refapi.config import Config
from refapi.web.auth import new_secret, secret_hash
from tests.conftest import TEST_AUTH

EXAMPLES = 150  # per operation and phase: about half a minute on two cores
CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    # Invalid data, a missing required header and an undocumented method (405 with
    # Allow) are refused; what was created can be read, what was deleted cannot.
    "negative_data_rejection",
    "missing_required_header",
    "unsupported_method",
    "ensure_resource_availability",
    "use_after_free",
)
RUN = {
    "seed": 20261121,
    "generation": {"max-examples": EXAMPLES, "deterministic": True},
    "checks": {
        "enabled": False,
        # A 5xx other than 500 is for the document to list, and status_code_conformance
        # judges whether it does; a 500 always fails.
        "not_a_server_error": {
            "enabled": True,
            "expected-statuses": ["2XX", "3XX", "4XX", "502", "503", "504"],
        },
        **{name: {"enabled": True} for name in CHECKS[1:]},
    },
}


class AsAnAdmin:
    """Send every request that has no ``Authorization`` with an admin's token, so
    the operations that need a credential are exercised, not just refused.

    The generated requests may change or delete the admin itself (a PUT or DELETE
    of ``/api/users/1``), so while the token is good it is reused, and when it is
    not, a new admin and token are made in the store, as a login would make them.
    """

    def __init__(self, app) -> None:
        self.app = app
        self.store = app.store
        self.token = ""
        self.admins = 0

    def __call__(self, environ, start_response):
        if "HTTP_AUTHORIZATION" not in environ:
            environ["HTTP_AUTHORIZATION"] = f"Bearer {self._token()}"
        return self.app(environ, start_response)

    def _token(self) -> str:
        live = self.token and self.store.find_token(
            "bearer", secret_hash(self.token), 0.0
        )
        if live and live["user"] and live["user"]["role"] == "admin":
            return self.token
        self.admins += 1
        user = self.store.create_user(
            f"schemathesis-{self.admins}@example.com", "!", "", "", "admin",
            "2026-11-23T00:00:00Z",
        )  # fmt: skip
        self.token = new_secret()
        hashes = {"bearer": secret_hash(self.token)}
        self.store.create_tokens(new_secret(), hashes, 2**40, user_id=user["id"])
        return self.token


def test_the_app_answers_as_its_document_says(tmp_path):
    config = Config(
        **TEST_AUTH,
        database_url=f"sqlite:///{tmp_path}/refapi.db",
        secret_key=b"test-secret",
        rate_limit_capacity=10**9,
        rate_limit_refill=10**9,
        proxy_allowed_hosts=(),
    )
    app = create_app(config)
    try:
        schema = openapi.from_wsgi(
            "/openapi.json", AsAnAdmin(app), config=SchemathesisConfig.from_dict(RUN)
        )
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


def _run(schema) -> tuple[list[str], Counter[str]]:
    """Every distinct failure as text (operation, check, what was wrong, a curl line
    to reproduce it), and how many requests each scenario sent."""
    failures: dict[tuple[str, str, str], str] = {}
    sent: Counter[str] = Counter()
    for event in engine.from_schema(schema).execute():
        if isinstance(event, events.NonFatalError):
            failures[(event.label, "error", str(event.value))] = str(event.info)
        elif isinstance(event, events.FatalError):
            failures[("", "fatal", str(event.exception))] = str(event.exception)
        elif isinstance(event, events.ScenarioFinished):
            recorder = event.recorder
            sent[recorder.label] += len(recorder.interactions)
            for check in (c for checks in recorder.checks.values() for c in checks):
                if check.failure_info is not None:
                    info = check.failure_info
                    key = (recorder.label, check.name, str(info.failure))
                    failures.setdefault(
                        key, f"{key[0]} [{key[1]}] {key[2]}\n{info.code_sample}"
                    )
    return sorted(failures.values()), sent
