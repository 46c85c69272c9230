"""What schemathesis's positive_data_acceptance and use_after_free cannot know from a
document.

Loaded by tests/test_openapi_schemathesis.py, and by the command line that
docs/development.md, "OpenAPI and schemathesis", gives (``--config-file`` before
``run``; the server's rate limits out of reach; ``/api/logout`` left out, since it
would end the run's token).

``accepts_positive_data`` is positive_data_acceptance (a request the document calls
valid is not refused with a 4xx), with the refusals no request's shape can avoid:

- those that depend on the server's state (``STATE_DEPENDENT``: a conflict, an
  If-Match that is not current, or empty, which lists no tag (docs/api.md,
  "Conditional requests"), an Idempotency-Key used with another body, an empty
  bucket), where the operation documents them;
- ``400 INVALID_CURSOR`` for a cursor the server did not issue: a cursor is signed
  (docs/api.md, "Pagination"), and a signature is not a schema: any value of the
  documented shape may be sent, and only one the server signed for that collection
  is taken, as only a known id is found (the parameter's description says so);
- ``400 VALIDATION_ERROR`` for a body member that names a record that does not
  exist (``POST /api/keys`` with the ``userId`` of no user: ``names no user``), the
  body's counterpart of an unknown id in the path;
- ``400 VALIDATION_ERROR`` for a password among the 10,000 most common (the list
  ships with the package; a document can only name the rule, ``x-not-common-password``,
  and generators like ``00000000``, the shortest string of eight characters, which
  is one);
- ``400 VALIDATION_ERROR`` for a parameter that one action of an operation reads and
  the others ignore (the demo's GET: ``id`` for detail, ``limit`` and ``cursor``
  for list): the document gives it as text and says its bounds in its description,
  because OpenAPI has no way to make a parameter's schema depend on another's value;
- a 4xx the lab's ``/api/status`` was asked for (code ``SIMULATED``): the answer
  asked for, not a refusal, where the operation answers any 4xx (``4XX``).

A HEAD's refusal has no body, so it cannot say which of these it is: a HEAD's
``400`` with a cursor in its query, or to an operation with parameters only some
actions read, and any 4xx of an operation that answers any 4xx, is let pass; the
GETs of the same path, whose refusals have their error object, are judged by it.

``reads_nothing_deleted`` is use_after_free (after a DELETE, the record's URL is
404), but for OPTIONS, which answers at the routing step whether or not the record
exists. The command line runs both in place of schemathesis's own
(``--exclude-checks positive_data_acceptance,use_after_free``).
"""

from __future__ import annotations

import json

import schemathesis
from schemathesis.openapi.checks import RejectedPositiveData
from schemathesis.specs.openapi.checks import positive_data_acceptance, use_after_free

STATE_DEPENDENT = (409, 412, 422, 429)
PARAMETER = "#/components/parameters/"
SIMULATED = "SIMULATED"  # the lab's status as asked (docs/lab.md), no refusal
UNKNOWN_RECORD = "names no user"  # handlers/keys.py
COMMON_PASSWORD = "is one of the 10,000 most common passwords"  # schemas/__init__.py


@schemathesis.check
def accepts_positive_data(ctx, response, case):
    try:
        return positive_data_acceptance(ctx, response, case)
    except RejectedPositiveData:
        if not _unavoidable(response, case):
            raise
        return None


def _unavoidable(response, case) -> bool:
    """Whether a valid request's refusal is one of those listed above."""
    operation = case.operation.definition.raw
    answers = operation.get("responses", {})
    if response.status_code in STATE_DEPENDENT and str(response.status_code) in answers:
        return True
    parameters = [_resolved(case, p) for p in operation.get("parameters", [])]
    per_action = {
        p["name"] for p in parameters if p.get("description", "").startswith("Read by ")
    }
    query = set(case.query or {})
    if case.method.upper() == "HEAD":
        # No body to name the code or field: taken as one of these where one could
        # be it (a cursor sent, an action's parameter sent or left out, any 4xx the
        # operation answers as asked); the GET is judged by its error object.
        cursor_or_action = response.status_code == 400 and (
            "cursor" in query or per_action
        )
        return bool(cursor_or_action or "4XX" in answers)
    error = error_object(response.content)
    code = error.get("code")
    errors = error.get("details", {}).get("errors", [])
    fields = {e.get("field") for e in errors}
    messages = {e.get("message") for e in errors}
    return (
        (code == SIMULATED and "4XX" in answers)
        or (code == "INVALID_CURSOR" and "cursor" in query)
        or (code == "VALIDATION_ERROR" and bool(fields) and fields <= per_action)
        or (
            code == "VALIDATION_ERROR"
            and bool(messages)
            and messages <= {UNKNOWN_RECORD, COMMON_PASSWORD}
        )
    )


@schemathesis.check
def reads_nothing_deleted(ctx, response, case):
    """use_after_free, but for OPTIONS: it names the path's methods at the routing
    step, as a 405 does, whether or not a record has the id (docs/api.md, "Order of
    checks"), so after a DELETE the path still answers it."""
    if case.method.upper() == "OPTIONS":
        return None
    return use_after_free(ctx, response, case)


def _resolved(case, parameter: dict) -> dict:
    """A parameter as written, or the component it refers to (a parameter that
    several operations share is one, openapi/shared.py)."""
    ref = parameter.get("$ref", "")
    if not ref.startswith(PARAMETER):
        return parameter
    components = case.operation.schema.raw_schema["components"]["parameters"]
    return components[ref.removeprefix(PARAMETER)]


def error_object(body: bytes) -> dict:
    """The error object of an answer, or {} when it is none."""
    try:
        error = json.loads(body)
    except ValueError:
        return {}
    return error if isinstance(error, dict) else {}
