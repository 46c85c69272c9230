"""The report card's tasks: the URLs a client is sent to, below
``/lab/grade/{run}/``, each answering as its check stages it and recording what
the client did in the run's state for that check (``checks.py`` judges it).

Each request is one step of its check (``Store.grade_step``): it reads what the
client did so far and records this request, atomically across workers and hosts,
so a client's requests may land anywhere. A step decides what to answer; the
answer is made once the step is stored (a refusal staged by the task, a 429, a
503 or a 504, is raised then, so the step is not rolled back with it).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...errors import NotFound, ValidationError
from ...web import Request, Response, json_response
from ...web.auth import request_cookie
from ...web.origin import request_origin
from ...web.statuses import PHRASES
from ..cookies import lab_cookie
from ..errors import Simulated
from . import checks
from .checks import LOOP_HOPS, WAIT, State

if TYPE_CHECKING:
    from ...config import Config
    from ...storage import Store
    from ...storage.grade_runs import GradeRun

LIFETIME = 3600  # seconds a run lives
RUN_PATTERN = "^[0-9a-f]{32}$"  # 128 random bits, as hex

COOKIE = "grade"
Step = Callable[["GradeRun", State | None], tuple[State, Any]]
_RUN = re.compile(RUN_PATTERN)


def seeded(run_id: str, seed: int, what: str) -> str:
    """A value of the run's own, the same for the same run and seed: 16 hex digits."""
    return hashlib.sha256(f"{run_id}:{seed}:{what}".encode()).hexdigest()[:16]


def run_url(request: Request, run_id: str, path: str = "", origin: str = "") -> str:
    """The URL of the run's ``path``, on this origin or ``origin``."""
    here = origin or request_origin(request.environ)
    return f"{here}{request.script_root}/lab/grade/{run_id}" + (
        f"/{path}" if path else ""
    )


def check_run_id(run_id: str) -> None:
    """400 unless ``run_id`` is a run's id as the document's pattern says."""
    if not _RUN.fullmatch(run_id):
        raise ValidationError.one("run", "must be 32 hex digits, a run's id")


def unknown(run_id: str) -> NotFound:
    return NotFound(
        f"No report card run {run_id}: it never was, or it is over an hour old.",
        {"run": run_id},
    )


def step_check(
    store: Store, clock: Callable[[], float], run_id: str, check: str, step: Step
) -> tuple[GradeRun, Any]:
    """One step of ``check`` in the run: the run, and what ``step`` said to answer;
    404 if the run is unknown or over."""
    check_run_id(run_id)

    def stepped(run: GradeRun, state: State | None) -> tuple[State, Any]:
        new, answer = step(run, state)
        return new, (run, answer)

    found = store.grade_step(run_id, check, clock(), LIFETIME, stepped)
    if found is None:
        raise unknown(run_id)
    return found


def _staged(status: int) -> Simulated:
    """The task's own refusal: the status with the error object, code SIMULATED,
    and a message that says the task staged it (no client asked for it)."""
    retry = WAIT if status != 504 else None
    headers = [("Retry-After", str(WAIT))] if retry else []
    staged = Simulated(status, PHRASES[status], retry_after=retry, headers=headers)
    staged.message = f"{PHRASES[status]}, staged by the report card's task" + (
        ": ask again after Retry-After" if retry else ""
    )
    return staged


def done(check: str, **more: Any) -> Response:
    return json_response({"check": check, **more})


# -- see-other ----------------------------------------------------------------


def see_other(
    request: Request, store: Store, clock: Callable[[], float], run: str
) -> Response:
    step_check(
        store,
        clock,
        run,
        "see-other",
        lambda found, state: ({**(state or {}), "posted": True}, None),
    )
    return Response(
        b"", 303, [("Location", run_url(request, run, "see-other/landing"))]
    )


def see_other_landing(
    request: Request, store: Store, clock: Callable[[], float], run: str
) -> Response:
    method = request.environ["REQUEST_METHOD"]

    def step(found: GradeRun, state: State | None) -> tuple[State, None]:
        state = state or {}
        return ({**state, "followed": state.get("followed") or method}, None)

    step_check(store, clock, run, "see-other", step)
    return done("see-other", method=method)


# -- redirect-limit -------------------------------------------------------------


def loop(
    request: Request, store: Store, clock: Callable[[], float], run: str
) -> Response:
    return loop_hop(request, store, clock, run, 0)


def loop_hop(
    request: Request, store: Store, clock: Callable[[], float], run: str, hop: int
) -> Response:
    """A hop of the loop; ``hop`` is 1 to LOOP_HOPS (the router's check of its
    schema's bounds), where the loop ends, or 0 from ``loop``."""

    def step(found: GradeRun, state: State | None) -> tuple[State, None]:
        return {"most": max(hop, (state or {}).get("most", 0))}, None

    step_check(store, clock, run, "redirect-limit", step)
    if hop >= LOOP_HOPS:
        return done("redirect-limit", followed=hop)
    return Response(b"", 302, [("Location", run_url(request, run, f"loop/{hop + 1}"))])


# -- cross-origin-authorization -------------------------------------------------


def handoff(
    request: Request, config: Config, store: Store, clock: Callable[[], float], run: str
) -> Response:
    if not config.lab_grade_origin:
        raise NotFound(
            "This service has no second origin (REFAPI_LAB_GRADE_ORIGIN): the check"
            " does not apply.",
            {"run": run},
        )
    sent = "HTTP_AUTHORIZATION" in request.environ

    def step(found: GradeRun, state: State | None) -> tuple[State, None]:
        state = state or {}
        return {**state, "sent": state.get("sent", False) or sent}, None

    step_check(store, clock, run, checks.NEEDS_ORIGIN, step)
    there = run_url(request, run, "handoff/landing", config.lab_grade_origin)
    return Response(b"", 302, [("Location", there)])


def handoff_landing(
    request: Request, store: Store, clock: Callable[[], float], run: str
) -> Response:
    carried = "HTTP_AUTHORIZATION" in request.environ

    def step(found: GradeRun, state: State | None) -> tuple[State, None]:
        state = state or {}
        return {
            **state,
            "landed": True,
            "carried": state.get("carried") or carried,
        }, None

    step_check(store, clock, run, checks.NEEDS_ORIGIN, step)
    return done(checks.NEEDS_ORIGIN, authorization="sent" if carried else "not sent")


# -- retry-after-429, retry-after-503 -------------------------------------------


def too_many(
    request: Request, store: Store, clock: Callable[[], float], run: str
) -> Response:
    return _retried(store, clock, run, 429)


def unavailable(
    request: Request, store: Store, clock: Callable[[], float], run: str
) -> Response:
    return _retried(store, clock, run, 503)


def _retried(
    store: Store, clock: Callable[[], float], run: str, status: int
) -> Response:
    name = f"retry-after-{status}"
    now = clock()

    def step(found: GradeRun, state: State | None) -> tuple[State, bool]:
        if state is None:
            return {"refused": now}, False
        if "waited" in state:
            return state, True
        gap = round(now - state["refused"], 3)
        if gap < WAIT - checks.EARLY:
            return {"early": gap, **state, "refused": now}, False
        return {**state, "waited": gap}, True

    _, served = step_check(store, clock, run, name, step)
    if not served:
        raise _staged(status)
    return done(name)


# -- idempotency-key -----------------------------------------------------------


def orders(
    request: Request, store: Store, clock: Callable[[], float], run: str
) -> Response:
    key = request.headers.get("Idempotency-Key")

    def step(found: GradeRun, state: State | None) -> tuple[State, bool]:
        # A short hash under the run's seed: enough to tell one key from another,
        # and no table of common keys reads it back.
        hashed = seeded(run, found.seed, f"key:{key}") if key else None
        if state is None:
            return {"first": hashed}, False
        again = [*state.get("again", []), hashed][:5]
        return {**state, "again": again}, True

    _, placed = step_check(store, clock, run, "idempotency-key", step)
    if not placed:
        raise _staged(504)
    return done("idempotency-key", placed=True)


# -- accept ------------------------------------------------------------------------


def accept(
    request: Request, store: Store, clock: Callable[[], float], run: str
) -> Response:
    # Visible ASCII alone: the score's XML could not hold a control character.
    sent = "".join(c for c in request.headers.get("Accept", "") if " " <= c <= "~")
    sent = sent[:100]
    step_check(
        store, clock, run, "accept", lambda found, state: ({"accept": sent}, None)
    )
    return done("accept", accept=sent)


# -- cookie-path -----------------------------------------------------------------


def cookies_set(
    request: Request, store: Store, clock: Callable[[], float], run: str
) -> Response:
    graded, _ = step_check(
        store, clock, run, "cookie-path",
        lambda found, state: ({**(state or {}), "set": True}, None),
    )  # fmt: skip
    path = f"{request.script_root}/lab/grade/{run}/cookies/kept"
    secure = "Secure" if request.cookie_scope["secure"] else ""
    cookie = lab_cookie(
        request, COOKIE, seeded(run, graded.seed, "cookie"),
        [f"Path={path}", f"Max-Age={LIFETIME}", "HttpOnly", "SameSite=Lax", secure],
    )  # fmt: skip
    return json_response(
        {"check": "cookie-path", "path": path}, headers=[("Set-Cookie", cookie)]
    )


def cookies_kept(
    request: Request, store: Store, clock: Callable[[], float], run: str
) -> Response:
    return _cookie_seen(request, store, clock, run, "kept")


def cookies_other(
    request: Request, store: Store, clock: Callable[[], float], run: str
) -> Response:
    return _cookie_seen(request, store, clock, run, "other")


def _cookie_seen(
    request: Request, store: Store, clock: Callable[[], float], run: str, where: str
) -> Response:
    sent = request_cookie(request.environ, COOKIE)

    def step(found: GradeRun, state: State | None) -> tuple[State, bool]:
        seen = sent == seeded(run, found.seed, "cookie")
        return {**(state or {}), where: seen}, seen

    _, seen = step_check(store, clock, run, "cookie-path", step)
    # Whether it came, never its value (docs/lab.md, "A report card for clients").
    return done("cookie-path", cookie="sent" if seen else "not sent")
