"""The report card itself: ``POST /lab/grade`` starts a run and hands out its
tasks; ``GET /lab/grade/{run}`` scores it, as JSON or, for CI, as JUnit XML
(docs/lab.md, "A report card for clients").

A run's id is 128 random bits, so no one finds another's run; it lives an hour,
and the host keeps at most ``MOST_RUNS``, ``MOST_EACH`` of them an address's (the
oldest's expiry says when the next may start). Its seed makes the run's tags,
cookie, proof and bytes: the same seed and id give the same values.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING

from werkzeug.datastructures import MIMEAccept
from werkzeug.http import parse_accept_header

from ...errors import RateLimited, ValidationError
from ...storage.base import iso
from ...storage.grade_runs import GradeRun, GradeRunsFull
from ...web import Request, Response, json_response
from ...web.auth import client_address
from ...web.negotiation import JSON, XML
from ...web.origin import same_origin
from ...web.wsgi import whole_number
from ..errors import RunsFull
from . import checks
from .tasks import LIFETIME, check_run_id, run_url, unknown

if TYPE_CHECKING:
    from ...config import Config
    from ...storage import Store

MOST_RUNS = 100  # docs/lab.md and lab/errors.py's RunsFull say it
MOST_EACH = 5  # live runs an address may hold: 20 addresses to fill the host
SEED_MAX = 2**31 - 1
XML_TYPE = "application/xml; charset=utf-8"
# ``skip``: check names, comma-separated (the document's pattern too).
_NAME = "(" + "|".join(checks.BY_NAME) + ")"
SKIP_PATTERN = f"^({_NAME}(,{_NAME})*)?$"
SKIP_MAX = len(",".join(checks.BY_NAME))  # each check named once
_SKIP = re.compile(SKIP_PATTERN)


def start(
    request: Request, config: Config, store: Store, clock: Callable[[], float]
) -> Response:
    """A new run: its id, seed, expiry, score URL and tasks, each check that does
    not apply named with why (settled now and kept, so every host scores it alike)."""
    seed = _seed(request.arg("seed"))
    apart = _apart(request, _skip(request.arg("skip")), config)
    address = client_address(request.environ).encode()
    starter = hashlib.sha256(address).hexdigest()[:16]  # not the address itself
    run = GradeRun(secrets.token_hex(16), seed, apart, starter, clock(), {})
    try:
        store.start_grade_run(
            run, lifetime=LIFETIME, most=MOST_RUNS, most_each=MOST_EACH
        )
    except GradeRunsFull as full:
        if full.mine:
            raise RateLimited(full.retry_after) from None
        raise RunsFull(full.retry_after) from None
    tasks = [
        {
            "check": check.name, "spec": check.spec, "method": check.method,
            "url": run_url(request, run.id, check.path), "do": check.do,
        }
        for check in checks.CHECKS
        if check.name not in apart
    ]  # fmt: skip
    body = {
        "id": run.id,
        "seed": seed,
        "expires": iso(run.created + LIFETIME),
        "score": run_url(request, run.id),
        "tasks": tasks,
        "notApplicable": [{"check": name, "why": why} for name, why in apart.items()],
    }
    where = request.link(f"/lab/grade/{run.id}")
    return json_response(body, 201, [("Location", where)])


def score(
    request: Request, store: Store, clock: Callable[[], float], run: str
) -> Response:
    """The run's score: each check passed, failed or not applicable, with its RFC
    section and what the client did; JUnit XML when ``Accept`` prefers XML."""
    check_run_id(run)
    found = store.grade_run(run, clock(), LIFETIME)
    if found is None:
        raise unknown(run)
    graded = []
    for check in checks.CHECKS:
        why = found.apart.get(check.name)
        if why:
            status, did = checks.NOT_APPLICABLE, why
        else:
            status, did = check.judge(found.states.get(check.name, {}))
        graded.append(
            {"check": check.name, "status": status, "spec": check.spec, "did": did}
        )
    counts = {
        "passed": sum(g["status"] == checks.PASSED for g in graded),
        "failed": sum(g["status"] == checks.FAILED for g in graded),
        "notApplicable": sum(g["status"] == checks.NOT_APPLICABLE for g in graded),
    }
    # The one answer of the lab chosen by Accept (docs/lab.md, "Conventions").
    vary = [("Vary", "Accept")]
    accept = parse_accept_header(request.headers.get("Accept"), MIMEAccept)
    if accept.best_match([JSON, XML], default=JSON) == XML:
        junit = _junit(found.id, graded, counts)
        return Response(junit, 200, [("Content-Type", XML_TYPE), *vary])
    return json_response({
        "id": found.id, "seed": found.seed, "created": iso(found.created),
        "expires": iso(found.created + LIFETIME), "score": counts, "checks": graded,
    }, headers=vary)  # fmt: skip


def _junit(run: str, graded: list[dict[str, str]], counts: dict[str, int]) -> bytes:
    """The score as JUnit XML: a test case a check, a failure a failed one, a
    skipped one a check that does not apply; what the client did, each's message."""
    # Here: half a MiB of a worker that no other answer needs (docs/benchmarks.md,
    # "A worker's memory").
    from xml.etree import ElementTree

    suite = ElementTree.Element("testsuite", {
        "name": f"refapi report card {run}", "tests": str(len(graded)),
        "failures": str(counts["failed"]), "errors": "0",
        "skipped": str(counts["notApplicable"]),
    })  # fmt: skip
    for g in graded:
        case = ElementTree.SubElement(
            suite, "testcase", {"classname": "refapi.grade", "name": g["check"]}
        )
        if g["status"] == checks.FAILED:
            ElementTree.SubElement(
                case, "failure", {"message": g["did"], "type": g["spec"]}
            )
        elif g["status"] == checks.NOT_APPLICABLE:
            ElementTree.SubElement(case, "skipped", {"message": g["did"]})
        else:
            ElementTree.SubElement(case, "system-out").text = g["did"]
    ElementTree.indent(suite)
    return ElementTree.tostring(suite, encoding="utf-8", xml_declaration=True) + b"\n"


def _apart(request: Request, skip: tuple[str, ...], config: Config) -> dict[str, str]:
    """Each check that does not apply to a run started by ``request``, with why."""
    apart = dict.fromkeys(skip, "the run was started with it in skip")
    if checks.NEEDS_ORIGIN not in apart:
        origin = config.lab_grade_origin
        if not origin:
            apart[checks.NEEDS_ORIGIN] = (
                "this service has no second origin (REFAPI_LAB_GRADE_ORIGIN)"
            )
        elif same_origin(origin, request.environ):
            # Its redirect would not leave the origin: keeping Authorization is right.
            apart[checks.NEEDS_ORIGIN] = "the run was started on the second origin"
    return {name: apart[name] for name in checks.BY_NAME if name in apart}


def _seed(raw: str | None) -> int:
    if raw is None:
        return secrets.randbelow(SEED_MAX + 1)
    return whole_number("seed", raw, 0, SEED_MAX)


def _skip(raw: str | None) -> tuple[str, ...]:
    if raw is None:
        return ()
    if len(raw) > SKIP_MAX or not _SKIP.fullmatch(raw):
        raise ValidationError.one(
            "skip", "must name checks, comma-separated: " + ", ".join(checks.BY_NAME)
        )
    return tuple(dict.fromkeys(name for name in raw.split(",") if name))
