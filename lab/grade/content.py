"""The report card's tasks about a body (docs/lab.md, "A report card for
clients"): one to revalidate with its entity tag, one to resume when its
connection drops part way, one coded with gzip. As ``tasks.py``'s, each request
is one step of its check, stored before the answer is made.
"""

from __future__ import annotations

import gzip
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
from ..bodies import OCTETS
from ..errors import RangeNotSatisfiable
from ..ranges import byte_span, if_range_holds
from ..slow import slow_work
from .checks import CUT, SIZE, State
from .tasks import done, run_url, seeded, step_check

if TYPE_CHECKING:
    from ...config import Config
    from ...middleware.rate_limit.policy import RateLimits
    from ...slots import Slots
    from ...storage import Store
    from ...storage.grade_runs import GradeRun

PROOF_PATTERN = "^[0-9a-f]{16}$"
_PROOF = re.compile(PROOF_PATTERN)
CUT_WAIT = 0.1  # seconds the cut download waits, so its first part is out first


# -- revalidate ------------------------------------------------------------------


def cached(
    request: Request, store: Store, clock: Callable[[], float], run: str
) -> Response:
    asked = request.headers.get("If-None-Match")

    def step(found: GradeRun, state: State | None) -> tuple[State, None]:
        state = {**(state or {})}
        state["asked"] = state.get("asked", 0) + 1
        etag = seeded(run, found.seed, "etag")
        if state["asked"] > 1:
            matched = asked is not None and parse_etags(asked).contains_weak(etag)
            state["revalidated" if matched else "plain"] = True
        return state, None

    graded, _ = step_check(store, clock, run, "revalidate", step)
    # The router tags the 200 with ``etag`` and answers its If-None-Match with 304.
    answer = done("revalidate")
    answer.etag = seeded(run, graded.seed, "etag")
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
    """The whole file, cut part way the first time (slow work: it waits before the
    cut), or the one range asked of it, ``If-Range`` naming its tag or absent."""
    get = request.environ["REQUEST_METHOD"] == "GET"
    span = _span(request) if get else None
    # Only a GET without Range may be cut, and the cut waits: slow work then
    # (docs/lab.md, "Delays").
    whole_asked = get and "HTTP_RANGE" not in request.environ
    if whole_asked:
        slow_work(request, config, store, limits, slots, CUT_WAIT)
    if_range = request.headers.get("If-Range")

    def step(found: GradeRun, state: State | None) -> tuple[State, str]:
        state = {**(state or {})}
        if not get:
            return state, "whole"
        tag = seeded(run, found.seed, "download")
        if span is not None and if_range_holds(if_range, tag):
            state.setdefault("resumed", span[0])
            return state, "part"
        if whole_asked and not state.get("cut"):
            return {**state, "cut": True}, "cut"
        return {**state, "again": True}, "whole"

    graded, answer = step_check(store, clock, run, "resume", step)
    etag = quote_etag(seeded(run, graded.seed, "download"))
    body = random.Random(f"{run}:{graded.seed}").randbytes(SIZE)
    common = [("Content-Type", OCTETS), ("Accept-Ranges", "bytes"), ("ETag", etag)]
    if answer == "part" and span is not None:
        start, stop = span
        part = ContentRange("bytes", start, stop, SIZE).to_header()
        return Response(body[start:stop], 206, [*common, ("Content-Range", part)])
    if answer != "cut":
        return Response(body, 200, common)

    def cut() -> Iterator[bytes]:
        yield body[:CUT]
        sleep(CUT_WAIT)  # so the server has written the part before it drops
        raise CutShort()

    return Streamed(cut(), 200, common, SIZE)


def _span(request: Request) -> tuple[int, int] | None:
    """The one byte range a GET asks of the file, as ``lab/ranges.py`` reads it
    (several, or another unit: None, the whole file); 416 if it holds no byte."""
    asked = parse_range_header(request.headers.get("Range"))
    span = byte_span(asked, SIZE) if asked is not None else None
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
            **({} if takes else {"refused": True}),
        }, None

    graded, _ = step_check(store, clock, run, "gzip", step)
    proof = seeded(run, graded.seed, "gzip")
    data = {"check": "gzip", "next": run_url(request, run, f"compressed/{proof}")}
    headers = [("Content-Type", JSON_TYPE), ("Vary", "Accept-Encoding")]
    if not takes:
        return Response(json_bytes(data), 200, headers)
    body = gzip.compress(json_bytes(data), mtime=0)
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
