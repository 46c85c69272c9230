"""The report card's checks: what each asks a client to do, the RFC section it
holds the client to, and how its state (what the client did, ``tasks.py``) reads
as passed, failed or not applicable (docs/lab.md, "A report card for clients").

A state is a small JSON object per run and check; it says what was present,
never what a credential, a cookie or a key said (an idempotency key is kept as a
short hash, to compare one with another).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

State = dict[str, Any]
Verdict = tuple[str, str]  # (passed | failed | not-applicable, what the client did)

PASSED, FAILED, NOT_APPLICABLE = "passed", "failed", "not-applicable"
SEMANTICS, CACHING, COOKIES = "RFC 9110", "RFC 9111", "RFC 6265"
IDEMPOTENCY_DRAFT = "draft-ietf-httpapi-idempotency-key-header"

LOOP_HOPS = 100  # a redirect chain no sane limit follows to its end
WAIT = 1  # seconds: the Retry-After of the staged 429 and 503
# A retry this much before Retry-After is early; less is the clocks': two hosts
# that share a run each time the client's requests by their own.
EARLY = 0.25
SIZE, CUT = 8192, 4096  # the download's bytes, and where the first answer stops


@dataclass(frozen=True)
class Check:
    name: str
    spec: str  # "RFC 9110, section 15.4.4"
    method: str  # of the task's first request
    path: str  # the task's first URL, below the run's
    do: str  # what the task asks, one line
    judge: Callable[[State], Verdict]


def _see_other(state: State) -> Verdict:
    followed = state.get("followed")
    if not state.get("posted"):
        return FAILED, "did not POST to the task's URL"
    if followed is None:
        return FAILED, "did not follow the 303"
    if followed in ("GET", "HEAD"):
        return PASSED, f"followed the 303 with {followed}"
    return (
        FAILED,
        f"followed the 303 with {followed}: a 303's Location is fetched with GET",
    )


def _redirect_limit(state: State) -> Verdict:
    most = state.get("most")
    if most is None:
        return FAILED, "did not ask for the task's URL"
    if most == 0:
        return FAILED, "did not follow the redirect"
    if most >= LOOP_HOPS:
        return FAILED, f"followed all {LOOP_HOPS} redirects: a client stops at a limit"
    return PASSED, f"stopped after {most} redirects"


def _authorization(state: State) -> Verdict:
    if "sent" not in state:
        return FAILED, "did not ask for the task's URL"
    if not state["sent"]:
        return FAILED, "sent no Authorization with the first request, as the task asks"
    if not state.get("landed"):
        return FAILED, "did not follow the redirect to the other origin"
    if state.get("carried"):
        return FAILED, "sent Authorization on to the other origin"
    return PASSED, "dropped Authorization on the redirect to the other origin"


def _retry_after(status: int) -> Callable[[State], Verdict]:
    def judge(state: State) -> Verdict:
        if not state:
            return FAILED, "did not ask for the task's URL"
        if "early" in state:
            return FAILED, (
                f"asked again {state['early']:.2f} s after the {status}: Retry-After"
                f" said {WAIT} s"
            )
        if "waited" not in state:
            return FAILED, f"did not ask again after the {status}"
        return PASSED, f"waited {state['waited']:.2f} s, as Retry-After said ({WAIT} s)"

    return judge


def _revalidate(state: State) -> Verdict:
    asked = state.get("asked", 0)
    if not asked:
        return FAILED, "did not ask for the task's URL"
    if state.get("plain"):
        return FAILED, "asked again without If-None-Match: revalidate with the ETag"
    if not state.get("revalidated"):
        return FAILED, "asked once: ask again, with the ETag in If-None-Match"
    return PASSED, "revalidated with If-None-Match and was answered 304"


def _resume(state: State) -> Verdict:
    if "cut" not in state:
        return FAILED, "did not download the file"
    at = state.get("resumed")
    if at is None:
        if state.get("again"):
            return FAILED, "downloaded the whole file again instead of resuming it"
        return FAILED, "did not resume the download after the cut"
    if not state["cut"] < at <= CUT:
        return (
            FAILED,
            f"asked from byte {at}, but bytes {state['cut']} to {CUT} had arrived",
        )
    return PASSED, f"resumed at byte {at} with Range"


def _gzip(state: State) -> Verdict:
    if not state.get("asked"):
        return FAILED, "did not ask for the task's URL"
    if not state.get("gzipped"):
        # A client may refuse a coding (RFC 9110 section 12.5.3), and gets none.
        return NOT_APPLICABLE, "refused gzip in Accept-Encoding, and got none"
    if state.get("proof"):
        return PASSED, "decompressed the gzip body and followed its next"
    if state.get("proof") is None:
        return FAILED, "did not come back to the body's next: was it decompressed?"
    return FAILED, "came back with another proof than the body's"


def _idempotency(state: State) -> Verdict:
    if "first" not in state:
        return FAILED, "did not POST to the task's URL"
    again = state.get("again", [])
    if not again:
        return NOT_APPLICABLE, "did not send the POST again after the 504"
    first = state["first"]
    if first is None:
        return FAILED, "sent the POST again, and it had no Idempotency-Key"
    if any(key is None for key in again):
        return FAILED, "sent the POST again without its Idempotency-Key"
    if any(key != first for key in again):
        return FAILED, "sent the POST again with another Idempotency-Key"
    return PASSED, "sent the POST again with the same Idempotency-Key"


def _accept(state: State) -> Verdict:
    if "accept" not in state:
        return FAILED, "did not ask for the task's URL"
    if not state["accept"]:
        return FAILED, "sent no Accept: say what the client reads"
    return PASSED, f"sent Accept: {state['accept']}"


def _cookie_path(state: State) -> Verdict:
    if not state.get("set"):
        return FAILED, "did not ask for the cookie"
    for where in ("kept", "other"):
        if where not in state:
            return FAILED, f"did not ask for cookies/{where}"
    if not state["kept"]:
        return FAILED, "did not send the cookie to cookies/kept, inside its Path"
    if state["other"]:
        return FAILED, "sent the cookie to cookies/other, outside its Path"
    return PASSED, "sent the cookie inside its Path only"


CHECKS: tuple[Check, ...] = (
    Check("see-other", f"{SEMANTICS}, section 15.4.4", "POST", "see-other",
          "POST here, and follow the 303 as a client does.", _see_other),
    Check("redirect-limit", f"{SEMANTICS}, section 15.4", "GET", "loop",
          "GET here, and follow redirects as a client does: they never end.",
          _redirect_limit),
    Check("cross-origin-authorization", f"{SEMANTICS}, section 15.4", "GET",
          "handoff", "GET here with an Authorization header, and follow the "
          "redirect to the other origin.", _authorization),
    Check("retry-after-429", f"{SEMANTICS}, section 10.2.3", "GET", "too-many",
          "GET here until the answer is 200.", _retry_after(429)),
    Check("retry-after-503", f"{SEMANTICS}, section 10.2.3", "GET", "unavailable",
          "GET here until the answer is 200.", _retry_after(503)),
    Check("revalidate", f"{CACHING}, section 4.3.1", "GET", "cached",
          "GET here twice, as a cache would: the answer says no-cache.",
          _revalidate),
    Check("resume", f"{SEMANTICS}, section 14.2", "GET", "download",
          f"GET the {SIZE:,} bytes here: the connection drops part way; get the "
          "rest.", _resume),
    Check("gzip", f"{SEMANTICS}, section 8.4.1.3", "GET", "compressed",
          "GET here, read the JSON body, and GET its next.", _gzip),
    Check("idempotency-key", f"{IDEMPOTENCY_DRAFT}, section 2", "POST", "orders",
          "POST here as a create that may be sent again, until it is placed.",
          _idempotency),
    Check("accept", f"{SEMANTICS}, section 12.5.1", "GET", "json",
          "GET this JSON document.", _accept),
    Check("cookie-path", f"{COOKIES}, section 5.4", "GET", "cookies/set",
          "GET here, then cookies/kept and cookies/other, keeping cookies as a "
          "client does.", _cookie_path),
)  # fmt: skip
BY_NAME = {check.name: check for check in CHECKS}
NEEDS_ORIGIN = "cross-origin-authorization"
