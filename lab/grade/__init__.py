"""The report card for HTTP clients (docs/lab.md, "A report card for clients"):
``POST /lab/grade`` starts a run (``card.py``), whose tasks below
``/lab/grade/{run}/`` stage what a client meets (``tasks.py``) and record what it
did, and ``GET /lab/grade/{run}`` scores each check (``checks.py``). Runs are kept
in storage (``Store.grade_step``), so every worker and host sees the same run.

These are the lab's rows for it, served as the rest of the lab's are.
"""

from __future__ import annotations

from ... import schemas
from ...errors import MalformedRequest, NotFound, RateLimited, ValidationError
from ...router.route import ANY_BODY, Answer, Param, Route
from ...web.negotiation import JSON, XML
from ..bodies import OCTETS
from ..errors import RangeNotSatisfiable, RunsFull, Simulated
from . import card, checks, content, tasks

RUN = Param("run", "string", "path", True, {
    "type": "string", "pattern": tasks.RUN_PATTERN, "maxLength": 32,
    "description": "The run's id: 32 hex digits (128 random bits)."})  # fmt: skip
HOP = Param(
    "hop",
    "integer",
    "path",
    True,
    {"type": "integer", "format": "int32", "minimum": 1, "maximum": checks.LOOP_HOPS},
)
PROOF = Param("proof", "string", "path", True, {
    "type": "string", "pattern": content.PROOF_PATTERN, "maxLength": 16,
    "description": "The proof the compressed body names."})  # fmt: skip
SEED = Param(
    "seed",
    "integer",
    schema={
        "type": "integer",
        "format": "int64",
        "minimum": 0,
        "maximum": card.SEED_MAX,
        "description": "What the run's values are made from; drawn when absent.",
    },
)
SKIP = Param("skip", "string", schema={
    "type": "string", "pattern": card.SKIP_PATTERN,
    "maxLength": card.SKIP_MAX,
    "description": "Checks that do not apply to the client, comma-separated: "
    + ", ".join(checks.BY_NAME) + "."})  # fmt: skip

_TASK = 'A task of a report card run (docs/lab.md, "A report card for clients"): '
# The refusals the tasks stage, each its own row's (code SIMULATED).
_STAGED = {
    "too-many": Answer("429", "error", "Staged: Retry-After says when to ask again.",
                       ("Retry-After",)),
    "unavailable": Answer("503", "error", "Staged: Retry-After says when to ask "
                          "again.", ("Retry-After",)),
    "orders": Answer("504", "error", "Staged, the first time: whether the order "
                     "was placed is not known."),
}  # fmt: skip
_TASK_ROWS = (
    ("POST", "see-other", tasks.see_other, (), 303, "303 to see-other/landing."),
    ("GET", "see-other/landing", tasks.see_other_landing, (), 200,
     "Where the 303 leads: records the method it was followed with."),
    ("POST", "see-other/landing", tasks.see_other_landing, (), 200,
     "Where the 303 leads: records the method it was followed with."),
    ("GET", "loop", tasks.loop, (), 302, "A redirect to loop/1."),
    ("GET", "loop/{hop}", tasks.loop_hop, (HOP,), 302,
     f"A redirect to the next hop, to {checks.LOOP_HOPS}, which answers 200."),
    ("GET", "handoff", tasks.handoff, (), 302,
     "A redirect to the second origin (REFAPI_LAB_GRADE_ORIGIN); 404 without one."),
    ("GET", "handoff/landing", tasks.handoff_landing, (), 200,
     "Where the redirect to the other origin leads: records whether "
     "Authorization came (never its value)."),
    ("GET", "too-many", tasks.too_many, (), 200,
     f"429 with Retry-After: {checks.WAIT}, until asked again that late."),
    ("GET", "unavailable", tasks.unavailable, (), 200,
     f"503 with Retry-After: {checks.WAIT}, until asked again that late."),
    ("GET", "cached", content.cached, (), 200,
     "no-cache JSON with an ETag: a matching If-None-Match is 304."),
    ("GET", "download", content.download, (), 200,
     f"{checks.SIZE} bytes, the first answer's connection dropped after "
     f"{checks.CUT}; a Range of them is 206."),
    ("GET", "compressed", content.compressed, (), 200,
     "gzip-coded JSON whose next names the proof."),
    ("GET", "compressed/{proof}", content.compressed_proof, (PROOF,), 200,
     "Records whether the proof is the compressed body's."),
    ("POST", "orders", tasks.orders, (), 200,
     "504 the first time; then the order, placed: records each Idempotency-Key "
     "as a short hash."),
    ("GET", "json", tasks.accept, (), 200, "Records the request's Accept."),
    ("GET", "cookies/set", tasks.cookies_set, (), 200,
     "Sets a cookie whose Path is cookies/kept."),
    ("GET", "cookies/kept", tasks.cookies_kept, (), 200,
     "Records whether the cookie came (never its value)."),
    ("GET", "cookies/other", tasks.cookies_other, (), 200,
     "Records whether the cookie came (never its value)."),
)  # fmt: skip


# What each task answers once its check is done: the row's sample (its schema,
# "lab-grade-task", is the tasks' shared shape). The run in a URL is the sample run's.
_SAMPLE_RUN = "/lab/grade/3f2a9c4e8b7d6a5f1e0c9b8a7d6e5f4a"  # the path of its URLs
_DONE: dict[tuple[str, str], dict[str, object]] = {
    ("GET", "see-other/landing"): {"check": "see-other", "method": "GET"},
    ("POST", "see-other/landing"): {"check": "see-other", "method": "POST"},
    ("GET", "handoff/landing"): {"check": checks.NEEDS_ORIGIN,
                                 "authorization": "not sent"},
    ("GET", "too-many"): {"check": "retry-after-429"},
    ("GET", "unavailable"): {"check": "retry-after-503"},
    ("GET", "cached"): {"check": "revalidate"},
    ("GET", "compressed"): {"check": "gzip",
                            "next": f"https://refapi.example{_SAMPLE_RUN}"
                                    "/compressed/5d1c2b3a4f6e7d8c"},
    ("GET", "compressed/{proof}"): {"check": "gzip", "proof": "right"},
    ("POST", "orders"): {"check": "idempotency-key", "placed": True},
    ("GET", "json"): {"check": "accept", "accept": "application/json"},
    ("GET", "cookies/set"): {"check": "cookie-path",
                             "path": f"{_SAMPLE_RUN}/cookies/kept"},
    ("GET", "cookies/kept"): {"check": "cookie-path", "cookie": "sent"},
    ("GET", "cookies/other"): {"check": "cookie-path", "cookie": "not sent"},
}  # fmt: skip


def _task_row(
    method: str,
    path: str,
    handler: object,
    params: tuple[Param, ...],
    status: int,
    said: str,
) -> Route:
    redirect = status in (302, 303)
    task_json = not redirect and path != "download"
    answers = [_STAGED[path]] if path in _STAGED else []
    if path == "download":
        answers.append(Answer("206", None, "The one range asked (Range), If-Range "
                              "naming the file's ETag or absent.",
                              ("Content-Range", "Accept-Ranges", "ETag"),
                              produces=(OCTETS,)))  # fmt: skip
    return Route(
        method, f"/lab/grade/{{run}}/{path}", handler,  # type: ignore[arg-type]
        params=(RUN, *params), negotiated=False,
        # Each answer is the run's alone; the cached one says no-cache itself.
        sensitive=path != "cached",
        body_types=ANY_BODY,
        response="lab-grade-task" if task_json else None,
        sample=_DONE[method, path] if task_json else None,
        produces=(OCTETS,) if path == "download" else (),
        errors=(NotFound, ValidationError, MalformedRequest,
                *((Simulated,) if path in _STAGED else ()),
                *((RangeNotSatisfiable,) if path == "download" else ())),
        answers=tuple(answers), status=status,
        headers=("Location",) if redirect else (),
        streamed=path == "download",
        description=_TASK + said + " Public.",
    )  # fmt: skip


ROUTES: tuple[Route, ...] = (
    Route(
        "POST",
        "/lab/grade",
        card.start,
        params=(SEED, SKIP),
        response="lab-grade-run",
        sample=schemas.sample("lab-grade-run"),
        negotiated=False,
        sensitive=True,
        errors=(ValidationError, RunsFull, RateLimited),
        description="Start a report card run: its id, expiry, score URL and "
        "tasks, each a URL a client follows as a well-behaved client would. "
        "At most 100 runs live an hour each (beyond, 503 BUSY), 5 of them an "
        "address's (beyond, 429). Public.",
    ),
    Route(
        "GET",
        "/lab/grade/{run}",
        card.score,
        params=(RUN,),
        response="lab-grade-score",
        sample=schemas.sample("lab-grade-score"),
        produces=(JSON, XML),
        negotiated=False,
        sensitive=True,
        errors=(NotFound, ValidationError),
        status=200,
        description="The run's score: each check passed, failed or "
        "not-applicable, with its RFC section and what the client did; "
        "JUnit XML when Accept prefers application/xml. Public.",
    ),
    *(_task_row(*row) for row in _TASK_ROWS),
)
