"""The report card's tasks about a body (docs/lab.md, "A report card for
clients"): one to revalidate with its entity tag, one to resume when its
connection drops part way, one coded with gzip. As ``tasks.py``'s, each request
is one step of its check, stored before the answer is made.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from werkzeug.datastructures import ContentRange
from werkzeug.http import (
    parse_accept_header,
    parse_etags,
    parse_range_header,
    quote_etag,
)

from ...errors import ValidationError
from ...web import JSON_TYPE, Request, Response, Streamed, json_bytes
from ...web.wsgi import CutShort
from ..bodies import CODINGS, OCTETS
from ..errors import RangeNotSatisfiable
from ..ranges import byte_span, if_range_holds
from ..slow import slow_work
from .checks import CUT, SIZE, State
from .tasks import (
    LIFETIME,
    check_run_id,
    done,
    run_url,
    seeded,
    step_check,
    unknown,
)

if TYPE_CHECKING:
    from ...config import Config
    from ...middleware.rate_limit.policy import RateLimits
    from ...slots import Slots
    from ...storage import Store
    from ...storage.grade_runs import GradeRun

PROOF_PATTERN = "^[0-9a-f]{16}$"
_PROOF = re.compile(PROOF_PATTERN)
# Seconds the cut answer waits before its connection drops, so the server has
# written its first part: Granian drops an answer whose body fails before its
# head is out (a quarter second: ample on a busy host, tests/e2e/test_grade.py).
CUT_WAIT = 0.25

# -- revalidate ------------------------------------------------------------------


def cached(
    request: Request, store: Store, clock: Callable[[], float], run: str
) -> Response:
    asked = request.headers.get("If-None-Match")

    def step(found: GradeRun, state: State | None) -> tuple[State, str]:
        state = {**(state or {})}
        state["asked"] = state.get("asked", 0) + 1
        etag = seeded(run, found.seed, "etag")
        if state["asked"] > 1:
            matched = asked is not None and parse_etags(asked).contains_weak(etag)
            state["revalidated" if matched else "plain"] = True
        return state, etag

    _, etag = step_check(store, clock, run, "revalidate", step)
    # The router tags the 200 with ``etag`` and answers its If-None-Match with 304.
    answer = done("revalidate")
    answer.etag = etag
    answer.headers.append(("Cache-Control", "no-cache"))
    return answer


# -- resume ----------------------------------------------------------------------


def download(
    request: Request,
    config: Config,
    store: Store,
    clock: Callable[[], float],
    limits: RateLimits,
    slots: Slots,
    sleep: Callable[[float], None],
    run: str,
) -> Response:
    """The file, or the one range asked of it (``If-Range`` naming its tag, or
    none); the first answer that holds byte ``CUT`` is cut there."""
    check_run_id(run)
    peeked = store.grade_run(run, clock(), LIFETIME)
    if peeked is None:
        raise unknown(run)
    get = request.environ["REQUEST_METHOD"] == "GET"
    tag = seeded(run, peeked.seed, "download")
    span = _span(request, tag) if get else None
    start, stop = span or (0, SIZE)
    # The cut waits first, so it is slow work (docs/lab.md, "Delays"); a step
    # that finds the cut made meanwhile, by another worker, cuts nothing.
    may_cut = (
        get and start < CUT < stop and "cut" not in peeked.states.get("resume", {})
    )
    if may_cut:
        slow_work(request, config, store, limits, slots, CUT_WAIT)

    def step(found: GradeRun, state: State | None) -> tuple[State, bool]:
        state = {**(state or {})}
        if not get:
            return state, False
        if "cut" in state:  # after the cut: a resume, or the whole again
            if span is not None:
                state.setdefault("resumed", start)
            else:
                state["again"] = True
            return state, False
        return ({**state, "cut": start}, True) if may_cut else (state, False)

    _, cut = step_check(store, clock, run, "resume", step)
    body = random.Random(f"{run}:{peeked.seed}").randbytes(SIZE)
    headers = [
        ("Content-Type", OCTETS),
        ("Accept-Ranges", "bytes"),
        ("ETag", quote_etag(tag)),
    ]
    status = 206 if span is not None else 200
    if span is not None:
        headers.append(
            ("Content-Range", ContentRange("bytes", start, stop, SIZE).to_header())
        )
    if not cut:
        return Response(body[start:stop], status, headers)

    def cut_at_cut() -> Iterator[bytes]:
        yield body[start:CUT]
        sleep(CUT_WAIT)  # so the server has written the part before it drops
        raise CutShort()

    return Streamed(cut_at_cut(), status, headers, stop - start)


def _span(request: Request, tag: str) -> tuple[int, int] | None:
    """The one byte range a GET asks of the file, as ``lab/ranges.py`` reads it:
    None for none, several, another unit, or an ``If-Range`` naming another tag
    (the whole file then); 416 if it holds no byte."""
    asked = parse_range_header(request.headers.get("Range"))
    if asked is None or not if_range_holds(request.headers.get("If-Range"), tag):
        return None
    span = byte_span(asked, SIZE)
    if span is not None and span[0] >= span[1]:
        raise RangeNotSatisfiable(SIZE)
    return span


# -- gzip --------------------------------------------------------------------------


def compressed(
    request: Request, store: Store, clock: Callable[[], float], run: str
) -> Response:
    accepted = request.headers.get("Accept-Encoding")
    takes = accepted is None or parse_accept_header(accepted)["gzip"] > 0

    def step(found: GradeRun, state: State | None) -> tuple[State, None]:
        return {
            **(state or {}),
            "asked": True,
            # Its next proves the decoding only once a gzip body carried it.
            **({"gzipped": True} if takes else {}),
        }, None

    graded, _ = step_check(store, clock, run, "gzip", step)
    proof = seeded(run, graded.seed, "gzip")
    data = {"check": "gzip", "next": run_url(request, run, f"compressed/{proof}")}
    headers = [("Content-Type", JSON_TYPE), ("Vary", "Accept-Encoding")]
    if not takes:
        return Response(json_bytes(data), 200, headers)
    body = CODINGS["gzip"][1](json_bytes(data))  # as /lab/gzip codes its own
    return Response(body, 200, [*headers, ("Content-Encoding", "gzip")])


def compressed_proof(
    request: Request, store: Store, clock: Callable[[], float], run: str, proof: str
) -> Response:
    if not _PROOF.fullmatch(proof):
        raise ValidationError.one("proof", "must be 16 hex digits, as next names it")

    def step(found: GradeRun, state: State | None) -> tuple[State, bool]:
        right = proof == seeded(run, found.seed, "gzip")
        state = state or {}
        return {**state, "proof": state.get("proof") or right}, right

    _, right = step_check(store, clock, run, "gzip", step)
    return done("gzip", proof="right" if right else "wrong")
