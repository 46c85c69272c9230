"""The report card for HTTP clients in the lab (lab/grade; docs/lab.md, "A report
card for clients"), in process: for every check, a client that does what its task
asks and one that does not, each scored with what it did (``did``); a run's start,
its validation and ``skip``, its hour, the host's hundred runs, the JUnit XML of a
score, the values a seed makes, and what a run keeps of the client (never a
credential, a cookie's value or an idempotency key).

The clock is the test's (``make_app``): a client that waits moves it, and the
lab's own waits (the cut download's) move it too, so nothing sleeps.
"""

from __future__ import annotations

import gzip
import json
import types
import urllib.parse
from xml.etree import ElementTree

import pytest
import webtest

from refapi.lab.grade import card
from refapi.storage.base import iso
from refapi.web.wsgi import CutShort
from tests.helpers import JSON_TYPE, as_sent, assert_error, response_validator
from tests.storage import sqlite_peek

ORIGIN = "http://other.test:8080"  # the second origin of REFAPI_LAB_GRADE_ORIGIN
HOUR = 3600
SIZE, CUT = 8192, 4096
OCTETS = "application/octet-stream"
NO_ORIGIN = "this service has no second origin (REFAPI_LAB_GRADE_ORIGIN)"
SKIPPED = "the run was started with it in skip"
# Every check, in the order a run lists them: its first request and what it holds
# the client to.
CHECKS = (
    ("see-other", "POST", "see-other", "RFC 9110, section 15.4.4"),
    ("redirect-limit", "GET", "loop", "RFC 9110, section 15.4"),
    ("cross-origin-authorization", "GET", "handoff", "RFC 9110, section 15.4"),
    ("retry-after-429", "GET", "too-many", "RFC 9110, section 10.2.3"),
    ("retry-after-503", "GET", "unavailable", "RFC 9110, section 10.2.3"),
    ("revalidate", "GET", "cached", "RFC 9111, section 4.3.1"),
    ("resume", "GET", "download", "RFC 9110, section 14.2"),
    ("gzip", "GET", "compressed", "RFC 9110, section 8.4.1.3"),
    ("idempotency-key", "POST", "orders",
     "draft-ietf-httpapi-idempotency-key-header, section 2"),
    ("accept", "GET", "json", "RFC 9110, section 12.5.1"),
    ("cookie-path", "GET", "cookies/set", "RFC 6265, section 5.4"),
)  # fmt: skip
NAMES = [name for name, *_ in CHECKS]


@pytest.fixture
def anon(make_app, tmp_path) -> webtest.TestApp:
    return make_app(anonymous=True, data_dir=str(tmp_path))


@pytest.fixture
def two_origins(make_app, tmp_path) -> webtest.TestApp:
    """The app with a second origin (REFAPI_LAB_GRADE_ORIGIN)."""
    return make_app(anonymous=True, data_dir=str(tmp_path), lab_grade_origin=ORIGIN)


class Run:
    """A run started on ``app``, mounted at ``prefix`` (SCRIPT_NAME), and the
    requests of a client that follows its URLs there."""

    def __init__(
        self, app: webtest.TestApp, query: str = "", prefix: str = "", address=None,
        host=None,
    ):  # fmt: skip
        self.app, self.prefix = app, prefix
        # ``address``: the client's, for more starts than one address may make;
        # ``host``: the origin it starts on.
        starter = {"REMOTE_ADDR": address} if address else {}
        environ = {**self.environ(host), **starter}
        self.started = app.post(f"/lab/grade{query}", status=201, extra_environ=environ)
        self.body = self.started.json
        self.id = self.body["id"]
        self.tasks = {task["check"]: task for task in self.body["tasks"]}

    def environ(self, host: str | None = None) -> dict[str, str]:
        environ = {"SCRIPT_NAME": self.prefix}
        return {**environ, "HTTP_HOST": host} if host else environ

    def path(self, url: str) -> str:
        """A URL the run gave, as the app's path (below the mount point)."""
        parts = urllib.parse.urlsplit(url)
        path = parts.path.removeprefix(self.prefix)
        return path + (f"?{parts.query}" if parts.query else "")

    def task(self, check: str) -> str:
        return self.path(self.tasks[check]["url"])

    def below(self, what: str) -> str:
        return f"/lab/grade/{self.id}/{what}"

    def request(self, method: str, url: str, status="*", host=None, **kwargs):
        return self.app.request(
            self.path(url) if "://" in url else url, method=method, status=status,
            expect_errors=True, environ=self.environ(host), **kwargs,
        )  # fmt: skip

    def get(self, url: str, status="*", **kwargs) -> webtest.TestResponse:
        return self.request("GET", url, status, **kwargs)

    def post(self, url: str, status="*", **kwargs) -> webtest.TestResponse:
        return self.request("POST", url, status, **kwargs)

    def score(self, **headers: str) -> webtest.TestResponse:
        return self.app.get(f"/lab/grade/{self.id}", headers=headers,
                            extra_environ=self.environ(), status=200)  # fmt: skip

    def checks(self) -> dict[str, dict[str, str]]:
        return {check["check"]: check for check in self.score().json["checks"]}

    def graded(self, check: str) -> tuple[str, str]:
        """The check's status and what the client did, as the score says."""
        found = self.checks()[check]
        return found["status"], found["did"]


# -- a run, started -------------------------------------------------------------


def test_a_run_hands_out_a_task_a_check_each_a_url_of_its_own(anon, clock):
    run = Run(anon, "?seed=7")
    assert run.started.headers["Location"] == f"/lab/grade/{run.id}"
    assert run.started.headers["Content-Type"] == JSON_TYPE
    body = run.body
    assert len(body["id"]) == 32 and int(body["id"], 16) >= 0
    assert body["seed"] == 7
    assert body["expires"] == iso(clock() + HOUR)
    assert body["score"] == f"http://localhost/lab/grade/{run.id}"
    assert [(t["check"], t["method"], t["url"], t["spec"]) for t in body["tasks"]] == [
        (name, method, f"http://localhost/lab/grade/{run.id}/{path}", spec)
        for name, method, path, spec in CHECKS
        if name != "cross-origin-authorization"
    ]
    assert all(task["do"] for task in body["tasks"])
    assert body["notApplicable"] == [
        {"check": "cross-origin-authorization", "why": NO_ORIGIN}
    ]


def test_every_run_has_an_id_of_its_own_and_a_seed_drawn_when_absent(anon):
    runs = [Run(anon).body for _ in range(3)]
    assert len({run["id"] for run in runs}) == 3
    assert all(0 <= run["seed"] <= 2**31 - 1 for run in runs)


def test_a_run_below_a_mount_point_names_it_in_every_url(two_origins):
    run = Run(two_origins, prefix="/prod")
    assert run.started.headers["Location"] == f"/prod/lab/grade/{run.id}"
    assert run.body["score"] == f"http://localhost/prod/lab/grade/{run.id}"
    assert {t["url"] for t in run.body["tasks"]} == {
        f"http://localhost/prod/lab/grade/{run.id}/{path}" for *_, path, _ in CHECKS
    }
    assert run.body["notApplicable"] == []


def test_a_run_and_its_score_are_what_their_schemas_say(anon, config):
    run = Run(anon)
    options = vars(config)
    for name, body in (("lab-grade-run", run.body),
                       ("lab-grade-score", run.score().json)):  # fmt: skip
        problems = [e.message for e in response_validator(name, options)
                    .iter_errors(body)]  # fmt: skip
        assert problems == [], name


def test_a_run_nothing_was_done_for_fails_each_check_but_the_one_without_origin(anon):
    score = Run(anon).score().json
    assert score["score"] == {"passed": 0, "failed": 10, "notApplicable": 1}
    assert [(c["check"], c["status"], c["spec"]) for c in score["checks"]] == [
        (name, "not-applicable" if name == "cross-origin-authorization" else "failed",
         spec)
        for name, _, _, spec in CHECKS
    ]  # fmt: skip


def test_the_score_says_when_the_run_began_and_ends(anon, clock):
    began = clock()
    run = Run(anon)
    clock.advance(10)
    score = run.score().json
    assert score["id"] == run.id and score["seed"] == run.body["seed"]
    assert score["created"] == iso(began)
    assert score["expires"] == iso(began + HOUR) == run.body["expires"]


@pytest.mark.parametrize(
    "seed", ["-1", str(2**31), "1.5", "x", "", " 7", "٣", "0x10", "1e3", "1" * 5000],
    ids=["negative", "past the most", "a fraction", "a word", "empty", "a space",
         "a digit not ASCII", "hex", "an exponent",
         "more digits than int() reads"],
)  # fmt: skip
def test_a_seed_outside_0_to_2_31_minus_1_is_refused(anon, seed):
    answer = anon.post(f"/lab/grade?{urllib.parse.urlencode({'seed': seed})}",
                       expect_errors=True)  # fmt: skip
    assert_error(answer, 400, "VALIDATION_ERROR")
    assert [e["field"] for e in answer.json["details"]["errors"]] == ["seed"]


@pytest.mark.parametrize("seed", [0, 2**31 - 1])
def test_a_seed_at_either_bound_is_taken(anon, seed):
    assert Run(anon, f"?seed={seed}").body["seed"] == seed


@pytest.mark.parametrize(
    "skip", ["nope", "gzip,nope", "gzip,,accept", "gzip,", ",gzip", "GZIP",
             "gzip accept", " gzip"],
)  # fmt: skip
def test_a_skip_naming_anything_but_checks_is_refused(anon, skip):
    answer = anon.post(f"/lab/grade?{urllib.parse.urlencode({'skip': skip})}",
                       expect_errors=True)  # fmt: skip
    assert_error(answer, 400, "VALIDATION_ERROR")
    assert [e["field"] for e in answer.json["details"]["errors"]] == ["skip"]


def test_a_refused_start_takes_no_room(anon):
    anon.post("/lab/grade?seed=-1", status=400)
    anon.post("/lab/grade?skip=nope", status=400)
    # The host's room is whole: a hundred runs start.
    for address in addresses(100):
        Run(anon, address=address)


def test_skipped_checks_do_not_apply_and_hand_out_no_task(two_origins):
    run = Run(two_origins, "?skip=gzip,accept,gzip,cross-origin-authorization")
    assert list(run.tasks) == [
        name for name in NAMES
        if name not in ("gzip", "accept", "cross-origin-authorization")
    ]  # fmt: skip
    assert run.body["notApplicable"] == [
        {"check": name, "why": SKIPPED}
        for name in ("cross-origin-authorization", "gzip", "accept")
    ]
    # Done all the same, a skipped check is not applicable still.
    run.get(run.below("json"), headers={"Accept": "application/json"}, status=200)
    score = run.score().json
    assert score["score"]["notApplicable"] == 3
    for name in ("gzip", "accept", "cross-origin-authorization"):
        assert run.graded(name) == ("not-applicable", SKIPPED)


def test_an_empty_skip_skips_nothing(anon):
    assert len(Run(anon, "?skip=").tasks) == len(CHECKS) - 1


@pytest.mark.parametrize("below", ["", "/json", "/cookies/kept", "/loop/1"])
def test_an_unknown_run_is_404(anon, below):
    Run(anon)  # another run is live: it is not found by any other id
    answer = anon.get(f"/lab/grade/{'0' * 32}{below}", expect_errors=True)
    assert_error(answer, 404, "NOT_FOUND")
    assert answer.json["details"] == {"run": "0" * 32}


@pytest.mark.parametrize(
    "run_id", ["xyz", "A" * 32, "0" * 31, "0" * 33],
    ids=["malformed", "upper case", "too short", "too long"],
)  # fmt: skip
@pytest.mark.parametrize("below", ["", "/json", "/cookies/kept", "/loop/1"])
def test_a_run_id_that_is_not_32_hex_digits_is_refused(anon, run_id, below):
    # As the document's pattern says (lab/grade/__init__.py, RUN).
    answer = anon.get(f"/lab/grade/{run_id}{below}", expect_errors=True)
    assert_error(answer, 400, "VALIDATION_ERROR")
    assert [e["field"] for e in answer.json["details"]["errors"]] == ["run"]


@pytest.mark.parametrize(
    ("method", "what"), [("POST", "see-other"), ("POST", "orders")]
)
def test_an_unknown_run_s_post_task_is_404(anon, method, what):
    answer = anon.request(f"/lab/grade/{'0' * 32}/{what}", method=method,
                          expect_errors=True)  # fmt: skip
    assert_error(answer, 404, "NOT_FOUND")


def test_a_run_lives_an_hour_then_is_404(anon, clock):
    run = Run(anon)
    run.get(run.task("accept"), headers={"Accept": "*/*"}, status=200)
    clock.advance(HOUR)
    assert run.graded("accept") == ("passed", "sent Accept: */*")  # the last second
    run.get(run.task("accept"), status=200)
    clock.advance(0.5)
    assert_error(run.get(f"/lab/grade/{run.id}"), 404, "NOT_FOUND")
    for check in ("accept", "see-other", "resume"):
        method = "POST" if check == "see-other" else "GET"
        assert_error(run.request(method, run.task(check)), 404, "NOT_FOUND")


def addresses(n: int) -> list[str]:
    """``n`` client addresses: an address holds at most 5 live runs."""
    return [f"192.0.2.{1 + i // 5}" for i in range(n)]


def test_the_101st_live_run_is_503_busy_until_the_oldest_expires(anon, clock):
    oldest = Run(anon)
    clock.advance(1000)
    for address in addresses(99):
        Run(anon, address=address)
    full = anon.post("/lab/grade", expect_errors=True)
    assert_error(full, 503, "BUSY")
    # The oldest goes once it is over an hour old: in a second more than what is left.
    assert full.headers["Retry-After"] == str(HOUR - 1000 + 1)
    assert full.json["details"] == {"retry_after": HOUR - 1000 + 1}
    clock.advance(HOUR - 1000 - 10)
    again = anon.post("/lab/grade", expect_errors=True)
    assert_error(again, 503, "BUSY")
    assert again.headers["Retry-After"] == "11"
    clock.advance(10.5)  # the oldest is over: its room is the next run's
    Run(anon)
    assert_error(oldest.get(f"/lab/grade/{oldest.id}"), 404, "NOT_FOUND")
    # The rest are live still: the next room is the second oldest's.
    full = anon.post("/lab/grade", expect_errors=True)
    assert_error(full, 503, "BUSY")
    assert full.headers["Retry-After"] == "1000"


def test_a_client_that_waits_the_retry_after_of_a_busy_host_may_start(anon, clock):
    """Retry-After is when the next run may start (RFC 9110 section 10.2.3): a client
    that waits just that long is let in."""
    Run(anon)
    for address in addresses(99):
        Run(anon, address=address)
    clock.advance(1000)
    full = anon.post("/lab/grade", expect_errors=True)
    assert_error(full, 503, "BUSY")
    clock.advance(int(full.headers["Retry-After"]))
    anon.post("/lab/grade", status=201)


# -- the score as JUnit XML -----------------------------------------------------


def a_mixed_run(app: webtest.TestApp) -> Run:
    """A run with each status: accept passed, gzip's next never followed, the
    second origin absent, the rest not done."""
    run = Run(app)
    run.get(run.task("accept"), headers={"Accept": "application/json"}, status=200)
    run.get(run.task("gzip"), status=200)
    return run


@pytest.mark.parametrize(
    "accept",
    ["application/xml", "application/json;q=0.5, application/xml",
     "text/html, application/xml;q=0.9"],
)  # fmt: skip
def test_a_score_is_junit_xml_when_accept_prefers_xml(anon, accept):
    run = a_mixed_run(anon)
    as_json = run.checks()
    answer = run.score(Accept=accept)
    assert answer.headers["Content-Type"] == "application/xml; charset=utf-8"
    assert answer.body.startswith(b"<?xml version='1.0' encoding='utf-8'?>")
    suite = ElementTree.fromstring(answer.body)
    assert suite.tag == "testsuite"
    assert suite.get("name") == f"refapi report card {run.id}"
    assert {k: suite.get(k) for k in ("tests", "failures", "errors", "skipped")} == {
        "tests": "11", "failures": "9", "errors": "0", "skipped": "1"
    }  # fmt: skip
    cases = suite.findall("testcase")
    assert [case.get("name") for case in cases] == NAMES
    for case in cases:
        graded = as_json[case.get("name")]
        assert case.get("classname") == "refapi.grade"
        (child,) = list(case)
        if graded["status"] == "failed":
            assert child.tag == "failure"
            assert child.attrib == {"message": graded["did"], "type": graded["spec"]}
        elif graded["status"] == "not-applicable":
            assert child.tag == "skipped"
            assert child.attrib == {"message": graded["did"]}
        else:
            assert child.tag == "system-out" and child.text == graded["did"]
    assert [c.get("name") for c in cases if c.find("system-out") is not None] == [
        "accept"
    ]
    assert cases[NAMES.index("gzip")].find("failure").get("message") == (
        "did not come back to the body's next: was it decompressed?"
    )


@pytest.mark.parametrize(
    "accept", [None, "*/*", "application/json", "application/xml;q=0.1, */*"]
)
def test_a_score_is_json_unless_accept_prefers_xml(anon, accept):
    run = a_mixed_run(anon)
    answer = run.score(**({"Accept": accept} if accept else {}))
    assert answer.headers["Content-Type"] == JSON_TYPE
    assert answer.json["score"] == {"passed": 1, "failed": 9, "notApplicable": 1}


# -- see-other ------------------------------------------------------------------


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_see_other_passes_a_client_that_follows_the_303_with_get(anon, method):
    run = Run(anon)
    other = run.post(run.task("see-other"), status=303)
    assert other.headers["Location"] == (
        f"http://localhost/lab/grade/{run.id}/see-other/landing"
    )
    assert other.body == b""
    landed = run.request(method, other.headers["Location"], status=200)
    if method == "GET":
        assert landed.json == {"check": "see-other", "method": "GET"}
    assert run.graded("see-other") == ("passed", f"followed the 303 with {method}")


@pytest.mark.parametrize(
    ("requests", "did"),
    [
        ([("POST", "see-other"), ("POST", "see-other/landing")],
         "followed the 303 with POST: a 303's Location is fetched with GET"),
        ([("POST", "see-other")], "did not follow the 303"),
        ([("GET", "see-other/landing")], "did not POST to the task's URL"),
        ([], "did not POST to the task's URL"),
        # The first way it was followed counts.
        ([("POST", "see-other"), ("POST", "see-other/landing"),
          ("GET", "see-other/landing")],
         "followed the 303 with POST: a 303's Location is fetched with GET"),
    ],
    ids=["followed with POST", "never followed", "never posted", "nothing",
         "POST then GET"],
)  # fmt: skip
def test_see_other_fails_a_client_that_does_otherwise(anon, requests, did):
    run = Run(anon)
    for method, what in requests:
        assert run.request(method, run.below(what)).status_int in (200, 303)
    assert run.graded("see-other") == ("failed", did)


# -- redirect-limit -------------------------------------------------------------


def follow_loop(run: Run, most: int) -> webtest.TestResponse:
    """The loop's first URL, then at most ``most`` of its redirects."""
    answer = run.get(run.task("redirect-limit"), status=302)
    for hop in range(1, most + 1):
        location = answer.headers["Location"]
        assert location == f"http://localhost/lab/grade/{run.id}/loop/{hop}"
        answer = run.get(location, status="*")
    return answer


def test_redirect_limit_passes_a_client_that_stops_at_its_limit(anon):
    run = Run(anon)
    last = follow_loop(run, 30)
    assert last.status_int == 302  # there is more: the client stopped
    assert run.graded("redirect-limit") == ("passed", "stopped after 30 redirects")


def test_redirect_limit_fails_a_client_that_follows_all_100(anon):
    run = Run(anon)
    last = follow_loop(run, 100)
    assert last.status_int == 200
    assert last.json == {"check": "redirect-limit", "followed": 100}
    assert run.graded("redirect-limit") == (
        "failed", "followed all 100 redirects: a client stops at a limit"
    )  # fmt: skip


def test_redirect_limit_fails_a_client_that_never_asked(anon):
    run = Run(anon)
    assert run.graded("redirect-limit") == ("failed", "did not ask for the task's URL")


@pytest.mark.parametrize("hop", ["0", "101", "99999"])
def test_a_hop_outside_1_to_100_is_refused(anon, hop):
    """The loop is 100 hops long, as its document says (``hop``: 1 to 100)."""
    run = Run(anon)
    answer = run.get(run.below(f"loop/{hop}"))
    assert_error(answer, 400, "VALIDATION_ERROR")
    assert [e["field"] for e in answer.json["details"]["errors"]] == ["hop"]
    assert run.graded("redirect-limit") == ("failed", "did not ask for the task's URL")


# -- cross-origin-authorization -------------------------------------------------


def test_cross_origin_authorization_does_not_apply_without_a_second_origin(anon):
    run = Run(anon)
    assert "cross-origin-authorization" not in run.tasks
    assert run.graded("cross-origin-authorization") == ("not-applicable", NO_ORIGIN)
    answer = run.get(run.below("handoff"), headers={"Authorization": "Basic eDp5"})
    assert_error(answer, 404, "NOT_FOUND")


def hand_off(run: Run, first: dict, then: dict | None) -> webtest.TestResponse:
    """The task's URL with ``first``'s headers; the redirect followed to the other
    origin with ``then``'s, unless None."""
    off = run.get(run.task("cross-origin-authorization"), headers=first, status=302)
    location = off.headers["Location"]
    there = f"{ORIGIN}{run.prefix}/lab/grade/{run.id}/handoff/landing"
    assert location == there
    if then is None:
        return off
    host = urllib.parse.urlsplit(location).netloc
    return run.get(location, headers=then, host=host, status=200)


SECRET = {"Authorization": "Bearer grade-secret-token"}


@pytest.mark.parametrize("prefix", ["", "/prod"])
def test_cross_origin_authorization_passes_a_client_that_drops_it(two_origins, prefix):
    run = Run(two_origins, prefix=prefix)
    landed = hand_off(run, SECRET, {})
    assert landed.json == {
        "check": "cross-origin-authorization", "authorization": "not sent"
    }  # fmt: skip
    assert run.graded("cross-origin-authorization") == (
        "passed", "dropped Authorization on the redirect to the other origin"
    )  # fmt: skip


@pytest.mark.parametrize(
    ("first", "then", "did"),
    [
        (SECRET, SECRET, "sent Authorization on to the other origin"),
        ({}, {}, "sent no Authorization with the first request, as the task asks"),
        ({}, SECRET, "sent no Authorization with the first request, as the task asks"),
        (SECRET, None, "did not follow the redirect to the other origin"),
    ],
    ids=["carried", "never sent", "sent only there", "not followed"],
)
def test_cross_origin_authorization_fails_a_client_that_does_otherwise(
    two_origins, first, then, did
):
    run = Run(two_origins, prefix="/prod")
    landed = hand_off(run, first, then)
    if then is not None:
        said = "sent" if then else "not sent"
        assert landed.json["authorization"] == said
    assert run.graded("cross-origin-authorization") == ("failed", did)


def test_cross_origin_authorization_fails_a_client_that_never_asked(two_origins):
    run = Run(two_origins)
    assert run.graded("cross-origin-authorization") == (
        "failed", "did not ask for the task's URL"
    )  # fmt: skip


# -- retry-after-429, retry-after-503 -------------------------------------------

RETRIED = pytest.mark.parametrize(
    ("check", "status"), [("retry-after-429", 429), ("retry-after-503", 503)]
)


def refused(run: Run, check: str, status: int) -> webtest.TestResponse:
    answer = run.get(run.task(check))
    assert_error(answer, status, "SIMULATED")
    assert answer.headers["Retry-After"] == "1"
    assert answer.json["details"] == {"status": status, "retry_after": 1}
    return answer


@RETRIED
@pytest.mark.parametrize("wait", [1, 0.96, 30])
def test_retry_after_passes_a_client_that_waits_as_told(anon, clock, check, status,
                                                         wait):  # fmt: skip
    run = Run(anon)
    refused(run, check, status)
    clock.advance(wait)
    assert run.get(run.task(check), status=200).json == {"check": check}
    assert run.graded(check) == (
        "passed", f"waited {wait:.2f} s, as Retry-After said (1 s)"
    )  # fmt: skip
    # Once served, it is served.
    assert run.get(run.task(check), status=200).json == {"check": check}


@RETRIED
@pytest.mark.parametrize("wait", [0, 0.5])
def test_retry_after_fails_a_client_that_asks_again_too_soon(anon, clock, check,
                                                             status, wait):  # fmt: skip
    run = Run(anon)
    refused(run, check, status)
    clock.advance(wait)
    refused(run, check, status)  # refused again: the wait starts again
    did = f"asked again {wait:.2f} s after the {status}: Retry-After said 1 s"
    assert run.graded(check) == ("failed", did)
    # Waiting after that is too late: the first retry was early.
    clock.advance(1)
    run.get(run.task(check), status=200)
    assert run.graded(check) == ("failed", did)


@RETRIED
def test_retry_after_fails_a_client_that_never_asks_again(anon, check, status):
    run = Run(anon)
    assert run.graded(check) == ("failed", "did not ask for the task's URL")
    refused(run, check, status)
    assert run.graded(check) == ("failed", f"did not ask again after the {status}")


# -- revalidate -----------------------------------------------------------------


def cached(run: Run, **headers: str) -> webtest.TestResponse:
    return run.get(run.task("revalidate"), headers=headers)


def test_revalidate_passes_a_client_that_sends_if_none_match(anon):
    run = Run(anon)
    first = cached(run)
    assert first.status_int == 200 and first.json == {"check": "revalidate"}
    etag = first.headers["ETag"]
    controls = ",".join(first.headers.getall("Cache-Control"))
    assert controls == "no-cache" and "no-store" not in controls
    current = cached(run, **{"If-None-Match": etag})
    assert current.status_int == 304 and current.body == b""
    assert current.headers["ETag"] == etag
    assert ",".join(current.headers.getall("Cache-Control")) == "no-cache"
    assert run.graded("revalidate") == (
        "passed", "revalidated with If-None-Match and was answered 304"
    )  # fmt: skip


def test_revalidate_takes_the_tag_weak_or_among_others(anon):
    run = Run(anon)
    etag = cached(run).headers["ETag"]
    assert cached(run, **{"If-None-Match": f'"other", W/{etag}'}).status_int == 304
    assert run.graded("revalidate")[0] == "passed"


@pytest.mark.parametrize(
    ("again", "did"),
    [
        ([{}], "asked again without If-None-Match: revalidate with the ETag"),
        ([{"If-None-Match": '"another"'}],
         "asked again without If-None-Match: revalidate with the ETag"),
        # Once plainly is once too many, whatever follows.
        ([{}, {"If-None-Match": "{etag}"}],
         "asked again without If-None-Match: revalidate with the ETag"),
        ([], "asked once: ask again, with the ETag in If-None-Match"),
        (None, "did not ask for the task's URL"),
    ],
    ids=["plainly", "another tag", "plainly then with the tag", "once", "never"],
)  # fmt: skip
def test_revalidate_fails_a_client_that_does_not_revalidate(anon, again, did):
    run = Run(anon)
    if again is not None:
        etag = cached(run).headers["ETag"]
        for headers in again:
            sent = {k: v.format(etag=etag) for k, v in headers.items()}
            answer = cached(run, **sent)
            assert answer.status_int == (304 if sent.get("If-None-Match") == etag
                                         else 200)  # fmt: skip
    assert run.graded("revalidate") == ("failed", did)


# -- resume ---------------------------------------------------------------------


def cut(run: Run) -> None:
    """The download's first GET: its connection drops after its first part."""
    with pytest.raises(CutShort):
        run.get(run.task("resume"))


def whole_file(run: Run) -> webtest.TestResponse:
    answer = run.get(run.task("resume"), status=200)
    assert len(answer.body) == SIZE
    assert answer.headers["Content-Type"] == OCTETS
    assert answer.headers["Accept-Ranges"] == "bytes"
    assert "Content-Range" not in answer.headers
    return answer


def test_resume_passes_a_client_that_asks_for_the_rest_with_range(anon):
    run = Run(anon)
    cut(run)
    rest = run.get(run.task("resume"), headers={"Range": "bytes=4096-"}, status=206)
    assert rest.headers["Content-Range"] == "bytes 4096-8191/8192"
    assert rest.headers["Content-Length"] == str(SIZE - CUT)
    assert rest.headers["Content-Type"] == OCTETS
    assert run.graded("resume") == ("passed", "resumed at byte 4096 with Range")
    # The bytes are the file's last half (a whole download after the pass).
    whole = whole_file(run)
    assert rest.body == whole.body[CUT:]
    assert rest.headers["ETag"] == whole.headers["ETag"]
    with_tag = run.get(run.task("resume"), status=206, headers={
        "Range": "bytes=4096-", "If-Range": whole.headers["ETag"]})  # fmt: skip
    assert with_tag.body == rest.body
    assert run.graded("resume") == ("passed", "resumed at byte 4096 with Range")


def test_resume_passes_a_client_that_resumes_earlier_than_the_cut(anon):
    run = Run(anon)
    cut(run)
    run.get(run.task("resume"), headers={"Range": "bytes=2048-"}, status=206)
    assert run.graded("resume") == ("passed", "resumed at byte 2048 with Range")


@pytest.mark.parametrize(
    ("headers", "status", "length", "did"),
    [
        ({}, 200, SIZE, "downloaded the whole file again instead of resuming it"),
        ({"Range": "bytes=4096-", "If-Range": '"not-the-file-s"'}, 200, SIZE,
         "downloaded the whole file again instead of resuming it"),
        ({"Range": "bytes=0-"}, 206, SIZE,
         "asked from byte 0, but bytes 0 to 4096 had arrived"),
        ({"Range": "bytes=5000-"}, 206, SIZE - 5000,
         "asked from byte 5000, but bytes 0 to 4096 had arrived"),
        (None, None, None, "did not resume the download after the cut"),
    ],
    ids=["whole again", "If-Range another tag", "from 0", "past the cut",
         "never again"],
)  # fmt: skip
def test_resume_fails_a_client_that_does_otherwise(anon, headers, status, length,
                                                   did):  # fmt: skip
    run = Run(anon)
    cut(run)
    if headers is not None:
        answer = run.get(run.task("resume"), headers=headers, status=status)
        assert len(answer.body) == length
    assert run.graded("resume") == ("failed", did)


def test_resume_fails_a_client_that_never_asked(anon):
    run = Run(anon)
    assert run.graded("resume") == ("failed", "did not download the file")


def test_a_probe_before_the_cut_neither_cuts_nor_counts_as_the_resume(anon):
    """A client that first asks for one byte (is the file there? does it take
    ranges?) is answered whole, and is judged on what it does after the cut."""
    run = Run(anon)
    probe = run.get(run.task("resume"), headers={"Range": "bytes=0-0"}, status=206)
    assert probe.headers["Content-Range"] == "bytes 0-0/8192"
    cut(run)
    run.get(run.task("resume"), headers={"Range": "bytes=4096-"}, status=206)
    assert run.graded("resume") == ("passed", "resumed at byte 4096 with Range")


def test_a_download_that_asks_with_range_from_the_start_is_cut_and_resumed(anon):
    """A download manager asks with Range from its first request: the first answer
    that holds byte 4096 is cut there, a 206 as asked."""
    run = Run(anon)
    with pytest.raises(CutShort):
        run.get(run.task("resume"), headers={"Range": "bytes=1000-"})
    run.get(run.task("resume"), headers={"Range": "bytes=4096-"}, status=206)
    assert run.graded("resume") == ("passed", "resumed at byte 4096 with Range")
    again = Run(anon)
    with pytest.raises(CutShort):
        again.get(again.task("resume"), headers={"Range": "bytes=1000-"})
    # A resume from before where its cut answer began asks for bytes it has.
    again.get(again.task("resume"), headers={"Range": "bytes=500-"}, status=206)
    assert again.graded("resume") == (
        "failed", "asked from byte 500, but bytes 1000 to 4096 had arrived"
    )  # fmt: skip


def test_the_download_of_an_unknown_or_malformed_run_is_refused_before_its_range(anon):
    for run_id, status in (("0" * 32, 404), ("zz", 400)):
        answer = anon.get(
            f"/lab/grade/{run_id}/download", headers={"Range": "bytes=99999-"},
            expect_errors=True,
        )  # fmt: skip
        assert answer.status_int == status


def test_redirect_limit_fails_a_client_that_follows_no_redirect(anon):
    run = Run(anon)
    run.get(run.task("redirect-limit"), status=302)
    assert run.graded("redirect-limit") == ("failed", "did not follow the redirect")


def test_gzip_refused_then_taken_and_followed_passes(anon):
    run = Run(anon)
    as_sent(anon, run.task("gzip"), {"Accept-Encoding": "identity"})
    body = json.loads(gzip.decompress(as_sent(anon, run.task("gzip"), {}).data))
    run.get(body["next"], status=200)
    assert run.graded("gzip") == (
        "passed", "decompressed the gzip body and followed its next"
    )  # fmt: skip


@pytest.mark.parametrize("range_", ["bytes=8192-", "bytes=9000-9999"])
def test_a_range_past_the_download_s_end_is_416(anon, range_):
    run = Run(anon)
    cut(run)
    answer = run.get(run.task("resume"), headers={"Range": range_})
    assert_error(answer, 416, "RANGE_NOT_SATISFIABLE")
    assert answer.headers["Content-Range"] == "bytes */8192"
    assert answer.json["details"] == {"length": SIZE}
    assert run.graded("resume") == (
        "failed", "did not resume the download after the cut"
    )  # fmt: skip


def test_the_cut_download_is_the_file_s_first_half_and_holds_a_slot_until_closed(
    make_app, tmp_path
):
    """Slow work (docs/lab.md, "Delays"): two slots, one of them for slow work
    (slots.py), held while the cut is written; the server closes the answer
    whose body raised (PEP 3333), and the slot is free again."""
    app = make_app(anonymous=True, data_dir=str(tmp_path), workers=2, threads=1)
    run = Run(app)
    environ = webtest.TestRequest.blank(run.task("resume")).environ
    answer = app.app(environ, lambda status, headers, exc_info=None: None)
    assert_error(app.get("/lab/delay/1", status="*"), 429, "RATE_LIMITED")
    chunks = iter(answer)
    first = next(chunks)
    with pytest.raises(CutShort):
        next(chunks)
    answer.close()
    assert app.get("/lab/delay/1").json["seconds"] == 1
    whole = run.get(run.task("resume"), headers={"Range": "bytes=0-"}, status=206)
    assert first == whole.body[:CUT]


def test_only_the_first_download_is_cut(anon):
    run = Run(anon)
    cut(run)
    whole_file(run)
    whole_file(run)


# -- gzip -----------------------------------------------------------------------


def test_the_compressed_body_is_gzip_coded_json_naming_its_next(anon):
    run = Run(anon)
    sent = as_sent(anon, run.task("gzip"))
    assert sent.status_code == 200
    assert sent.headers["Content-Encoding"] == "gzip"
    assert sent.headers["Content-Type"] == JSON_TYPE
    assert "Accept-Encoding" in sent.headers["Vary"]
    assert sent.data[:2] == b"\x1f\x8b"
    body = json.loads(gzip.decompress(sent.data))
    assert body["check"] == "gzip"
    assert body["next"].startswith(f"http://localhost/lab/grade/{run.id}/compressed/")


@pytest.mark.parametrize("accept_encoding", [None, "gzip", "gzip, deflate, br", "*"])
def test_gzip_passes_a_client_that_decompresses_and_follows_next(anon, accept_encoding):
    run = Run(anon)
    headers = {"Accept-Encoding": accept_encoding} if accept_encoding else {}
    answer = run.get(run.task("gzip"), headers=headers, status=200)
    proof = run.get(answer.json["next"], status=200)  # WebTest decoded it
    assert proof.json == {"check": "gzip", "proof": "right"}
    assert run.graded("gzip") == (
        "passed", "decompressed the gzip body and followed its next"
    )  # fmt: skip


@pytest.mark.parametrize("accept_encoding", ["identity", "gzip;q=0", "br"])
def test_gzip_does_not_apply_to_a_client_that_refuses_gzip(anon, accept_encoding):
    """A client may refuse a coding (RFC 9110 section 12.5.3): it gets none."""
    run = Run(anon)
    sent = as_sent(anon, run.task("gzip"), {"Accept-Encoding": accept_encoding})
    assert "Content-Encoding" not in sent.headers
    assert "Accept-Encoding" in sent.headers["Vary"]
    body = json.loads(sent.data)  # plain JSON
    run.get(body["next"], status=200)  # followed, all the same
    assert run.graded("gzip") == (
        "not-applicable", "refused gzip in Accept-Encoding, and got none"
    )  # fmt: skip


def test_gzip_fails_a_client_that_brings_another_proof(anon):
    run = Run(anon)
    run.get(run.task("gzip"), status=200)
    answer = run.get(run.below("compressed/" + "0" * 16), status=200)
    assert answer.json == {"check": "gzip", "proof": "wrong"}
    assert run.graded("gzip") == (
        "failed", "came back with another proof than the body's"
    )  # fmt: skip


def test_gzip_fails_a_client_that_never_follows_next(anon):
    run = Run(anon)
    assert run.graded("gzip") == ("failed", "did not ask for the task's URL")
    run.get(run.task("gzip"), status=200)
    assert run.graded("gzip") == (
        "failed", "did not come back to the body's next: was it decompressed?"
    )  # fmt: skip


@pytest.mark.parametrize("proof", ["0" * 15, "G" * 16, "0" * 17])
def test_a_proof_that_is_not_16_hex_digits_is_refused(anon, proof):
    """As its document says (``proof``: 16 hex digits): no proof of the run's."""
    run = Run(anon)
    run.get(run.task("gzip"), status=200)
    answer = run.get(run.below(f"compressed/{proof}"))
    assert_error(answer, 400, "VALIDATION_ERROR")
    assert [e["field"] for e in answer.json["details"]["errors"]] == ["proof"]
    assert run.graded("gzip") == (
        "failed", "did not come back to the body's next: was it decompressed?"
    )  # fmt: skip


# -- idempotency-key --------------------------------------------------------------


def order(run: Run, key: str | None, status: int) -> webtest.TestResponse:
    headers = {"Idempotency-Key": key} if key else {}
    return run.post(run.task("idempotency-key"), headers=headers, status=status)


def test_idempotency_key_passes_a_client_that_sends_the_same_key_again(anon):
    run = Run(anon)
    timeout = order(run, "order-1", 504)
    assert_error(timeout, 504, "SIMULATED")
    assert "Retry-After" not in timeout.headers
    placed = order(run, "order-1", 200)
    assert placed.json == {"check": "idempotency-key", "placed": True}
    order(run, "order-1", 200)  # again, as often as it likes
    assert run.graded("idempotency-key") == (
        "passed", "sent the POST again with the same Idempotency-Key"
    )  # fmt: skip


@pytest.mark.parametrize(
    ("keys", "status", "did"),
    [
        ([None, None], "failed",
         "sent the POST again, and it had no Idempotency-Key"),
        (["order-1", None], "failed",
         "sent the POST again without its Idempotency-Key"),
        (["order-1", "order-2"], "failed",
         "sent the POST again with another Idempotency-Key"),
        (["order-1", "order-1", "order-2"], "failed",
         "sent the POST again with another Idempotency-Key"),
        (["order-1"], "not-applicable",
         "did not send the POST again after the 504"),
        ([], "failed", "did not POST to the task's URL"),
    ],
    ids=["no key", "the key dropped", "another key", "another key later",
         "no retry", "nothing"],
)  # fmt: skip
def test_idempotency_key_fails_a_client_that_does_otherwise(anon, keys, status, did):
    run = Run(anon)
    for n, key in enumerate(keys):
        order(run, key, 200 if n else 504)
    assert run.graded("idempotency-key") == (status, did)


# -- accept ---------------------------------------------------------------------


@pytest.mark.parametrize("accept", ["application/json", "*/*", "application/*"])
def test_accept_passes_a_client_that_says_what_it_reads(anon, accept):
    run = Run(anon)
    answer = run.get(run.task("accept"), headers={"Accept": accept}, status=200)
    assert answer.json == {"check": "accept", "accept": accept}
    assert run.graded("accept") == ("passed", f"sent Accept: {accept}")


def test_accept_fails_a_client_that_sends_none(anon):
    run = Run(anon)
    assert run.graded("accept") == ("failed", "did not ask for the task's URL")
    answer = run.get(run.task("accept"), status=200)
    assert "Accept" not in answer.request.headers  # WebTest adds none of its own
    assert answer.json == {"check": "accept", "accept": ""}
    assert run.graded("accept") == (
        "failed", "sent no Accept: say what the client reads"
    )  # fmt: skip


def test_the_last_accept_is_the_one_scored(anon):
    run = Run(anon)
    run.get(run.task("accept"), headers={"Accept": "application/json"}, status=200)
    run.get(run.task("accept"), status=200)
    assert run.graded("accept")[0] == "failed"


# -- cookie-path ------------------------------------------------------------------


def set_cookie(run: Run) -> str:
    """The task's first URL: its cookie's value, kept in WebTest's jar."""
    answer = run.get(run.task("cookie-path"), status=200)
    kept = f"{run.prefix}/lab/grade/{run.id}/cookies/kept"
    assert answer.json == {"check": "cookie-path", "path": kept}
    (cookie,) = answer.headers.getall("Set-Cookie")
    pair, *attributes = [part.strip() for part in cookie.split(";")]
    name, _, value = pair.partition("=")
    assert name == "grade" and len(value) == 16
    assert attributes == [f"Path={kept}", "Max-Age=3600", "HttpOnly", "SameSite=Lax"]
    return value


@pytest.mark.parametrize("prefix", ["", "/prod"])
def test_cookie_path_passes_a_client_that_keeps_the_cookie_in_its_path(anon, prefix):
    run = Run(anon, prefix=prefix)
    set_cookie(run)
    kept = run.get(run.below("cookies/kept"), status=200)
    assert kept.json == {"check": "cookie-path", "cookie": "sent"}
    other = run.get(run.below("cookies/other"), status=200)
    assert other.json == {"check": "cookie-path", "cookie": "not sent"}
    assert run.graded("cookie-path") == (
        "passed", "sent the cookie inside its Path only"
    )  # fmt: skip


def test_the_cookie_is_secure_over_https(anon):
    run = Run(anon)
    answer = anon.get(run.task("cookie-path"), status=200,
                      extra_environ={"wsgi.url_scheme": "https"})  # fmt: skip
    assert answer.headers["Set-Cookie"].endswith("; Secure")


def test_cookie_path_fails_a_client_that_sends_it_outside_its_path(anon):
    run = Run(anon)
    value = set_cookie(run)
    run.get(run.below("cookies/kept"), status=200)
    other = run.get(run.below("cookies/other"), headers={"Cookie": f"grade={value}"},
                    status=200)  # fmt: skip
    assert other.json["cookie"] == "sent"
    assert run.graded("cookie-path") == (
        "failed", "sent the cookie to cookies/other, outside its Path"
    )  # fmt: skip


@pytest.mark.parametrize("sent", [None, "grade=0000000000000000"],
                         ids=["none", "another value"])  # fmt: skip
def test_cookie_path_fails_a_client_that_does_not_send_it_inside(anon, sent):
    run = Run(anon)
    set_cookie(run)
    anon.reset()  # the jar forgets it
    headers = {"Cookie": sent} if sent else {}
    kept = run.get(run.below("cookies/kept"), headers=headers, status=200)
    assert kept.json["cookie"] == "not sent"
    run.get(run.below("cookies/other"), status=200)
    assert run.graded("cookie-path") == (
        "failed", "did not send the cookie to cookies/kept, inside its Path"
    )  # fmt: skip


@pytest.mark.parametrize(
    ("asked", "did"),
    [
        ([], "did not ask for the cookie"),
        (["cookies/kept", "cookies/other"], "did not ask for the cookie"),
        (["cookies/set"], "did not ask for cookies/kept"),
        (["cookies/set", "cookies/kept"], "did not ask for cookies/other"),
        (["cookies/set", "cookies/other"], "did not ask for cookies/kept"),
    ],
    ids=["nothing", "never set", "set only", "no other", "no kept"],
)
def test_cookie_path_fails_a_client_that_skips_a_step(anon, asked, did):
    run = Run(anon)
    for what in asked:
        run.get(run.below(what), status=200)
    assert run.graded("cookie-path") == ("failed", did)


# -- every check at once ----------------------------------------------------------


def test_a_client_that_does_every_task_right_passes_every_check(two_origins, clock):
    run = Run(two_origins, "?seed=11")
    first = run.post(run.task("see-other"), status=303)
    run.get(first.headers["Location"], status=200)
    follow_loop(run, 20)
    hand_off(run, SECRET, {})
    for check, status in (("retry-after-429", 429), ("retry-after-503", 503)):
        refused(run, check, status)
    clock.advance(1)
    for check in ("retry-after-429", "retry-after-503"):
        run.get(run.task(check), status=200)
    etag = cached(run).headers["ETag"]
    cached(run, **{"If-None-Match": etag})
    cut(run)
    run.get(run.task("resume"), headers={"Range": "bytes=4096-"}, status=206)
    run.get(run.get(run.task("gzip"), status=200).json["next"], status=200)
    order(run, "k", 504)
    order(run, "k", 200)
    run.get(run.task("accept"), headers={"Accept": "application/json"}, status=200)
    set_cookie(run)
    run.get(run.below("cookies/kept"), status=200)
    run.get(run.below("cookies/other"), status=200)
    score = run.score().json
    assert score["score"] == {"passed": 11, "failed": 0, "notApplicable": 0}
    suite = ElementTree.fromstring(run.score(Accept="application/xml").body)
    assert suite.get("failures") == suite.get("skipped") == "0"
    assert len(suite.findall("testcase/system-out")) == 11


# -- what the seed makes, what a run keeps -----------------------------------------


def a_run_with_the_id(app, monkeypatch, run_id: str, seed: int) -> Run:
    """A run whose id is ``run_id``, as if drawn."""
    fixed = types.SimpleNamespace(token_hex=lambda n: run_id,
                                  randbelow=card.secrets.randbelow)  # fmt: skip
    monkeypatch.setattr(card, "secrets", fixed)
    return Run(app, f"?seed={seed}")


def made(run: Run) -> tuple:
    """What the run's seed makes: the cached tag, the file, the proof, the cookie."""
    etag = cached(run).headers["ETag"]
    # A range that ends before byte 4096 or starts at it is never cut (docs/lab.md).
    head = run.get(run.task("resume"), headers={"Range": "bytes=0-4095"}, status=206)
    rest = run.get(run.task("resume"), headers={"Range": "bytes=4096-"}, status=206)
    proof = run.get(run.task("gzip"), status=200).json["next"].rsplit("/", 1)[1]
    cookie = run.get(run.task("cookie-path"), status=200).headers["Set-Cookie"]
    return (
        etag,
        rest.headers["ETag"],
        head.body + rest.body,
        proof,
        cookie.split(";")[0],
    )


def test_the_same_seed_and_id_make_the_same_values(anon, clock, monkeypatch):
    run_id = "0123456789abcdef" * 2
    first = made(a_run_with_the_id(anon, monkeypatch, run_id, 7))
    assert len(first[2]) == SIZE
    clock.advance(HOUR + 1)  # over: its id may be drawn again
    again = a_run_with_the_id(anon, monkeypatch, run_id, 7)
    # The new run starts with nothing done, though its id is the old one's.
    assert again.score().json["score"]["passed"] == 0
    assert made(again) == first
    clock.advance(HOUR + 1)
    other = made(a_run_with_the_id(anon, monkeypatch, run_id, 8))
    assert all(a != b for a, b in zip(other, first, strict=True))


def test_another_id_with_the_same_seed_makes_other_values(anon):
    one, two = made(Run(anon, "?seed=7")), made(Run(anon, "?seed=7"))
    assert all(a != b for a, b in zip(one, two, strict=True))


@pytest.mark.sqlite_only  # reads SQLite's file beneath the interface
def test_a_run_keeps_no_credential_cookie_value_or_key(two_origins, store):
    run = Run(two_origins)
    token, key = "grade-secret-token", "grade-secret-idempotency-key"
    authorization = {"Authorization": f"Bearer {token}"}
    hand_off(run, authorization, authorization)  # carried on, as a careless client
    value = set_cookie(run)
    for where in ("kept", "other"):
        run.get(run.below(f"cookies/{where}"), status=200,
                headers={"Cookie": f"grade={value}"})  # fmt: skip
    order(run, key, 504)
    order(run, key, 200)
    run.get(run.task("accept"), headers={"Accept": "application/json"}, status=200)
    checks = sqlite_peek.rows(store, "SELECT run, name, state FROM lab_grade_checks")
    assert {name for _, name, _ in checks} == {
        "cross-origin-authorization", "cookie-path", "idempotency-key", "accept"
    }  # fmt: skip
    kept = repr(checks) + repr(sqlite_peek.rows(store, "SELECT * FROM lab_grade_runs"))
    for secret in (token, "Bearer", key, value):
        assert secret not in kept
    # What was present is kept, as flags and a short hash to compare keys with.
    states = {name: json.loads(state) for _, name, state in checks}
    assert states["cross-origin-authorization"] == {
        "sent": True, "landed": True, "carried": True
    }  # fmt: skip
    assert states["cookie-path"] == {"set": True, "kept": True, "other": True}
    hashed = states["idempotency-key"]
    assert hashed["again"] == [hashed["first"]] and len(hashed["first"]) == 16


@pytest.mark.sqlite_only  # reads SQLite's file beneath the interface
def test_an_expired_run_s_checks_go_with_it(anon, store, clock):
    old = Run(anon)
    old.get(old.task("accept"), status=200)
    clock.advance(HOUR + 1)
    Run(anon)  # a start drops the runs that are over
    assert sqlite_peek.rows(store, "SELECT count(*) FROM lab_grade_checks") == [(0,)]
    assert sqlite_peek.rows(
        store, "SELECT count(*) FROM lab_grade_runs WHERE id = ?", (old.id,)
    ) == [(0,)]


def test_a_fresh_start_forgets_runs_and_a_reset_keeps_them(anon, store):
    run = Run(anon)
    run.get(run.task("accept"), headers={"Accept": "*/*"}, status=200)
    store.reset()
    assert run.graded("accept") == ("passed", "sent Accept: */*")
    store.reset(everything=True)
    assert_error(run.get(f"/lab/grade/{run.id}"), 404, "NOT_FOUND")


def test_an_address_holds_at_most_5_live_runs(anon, clock):
    """So that one client cannot take the host's 100 (lab/grade/card.py): the
    sixth start is 429, its Retry-After until the address's oldest run ends, and
    another address starts meanwhile."""
    oldest = Run(anon)
    clock.advance(100)
    for _ in range(4):
        Run(anon)
    refused = anon.post("/lab/grade", expect_errors=True)
    assert_error(refused, 429, "RATE_LIMITED")
    assert refused.headers["Retry-After"] == str(HOUR - 100 + 1)
    Run(anon, address="192.0.2.99")  # another address has room
    clock.advance(HOUR - 100 + 1)
    assert_error(anon.get(f"/lab/grade/{oldest.id}", status=404), 404, "NOT_FOUND")
    Run(anon)  # the oldest is over: its room is the address's again


def test_a_run_started_on_the_second_origin_does_not_check_it(two_origins):
    """Its handoff would not leave the origin: a client keeps Authorization there,
    rightly, so the check does not apply; settled at the start, for every host."""
    there = Run(two_origins, host=urllib.parse.urlsplit(ORIGIN).netloc)
    assert there.body["notApplicable"] == [
        {"check": "cross-origin-authorization",
         "why": "the run was started on the second origin"}
    ]  # fmt: skip
    assert "cross-origin-authorization" not in there.tasks


def test_a_staged_refusal_says_the_task_staged_it(anon):
    run = Run(anon)
    refused = run.get(run.task("retry-after-429"), status=429)
    assert refused.json["message"] == (
        "Too Many Requests, staged by the report card's task: ask again after "
        "Retry-After"
    )
    refused = run.post(run.task("idempotency-key"), status=504)
    assert (
        refused.json["message"] == "Gateway Timeout, staged by the report card's task"
    )
    assert "Retry-After" not in refused.headers


def test_the_card_s_operations_are_one_tag_in_the_lab_s_document(anon):
    """One part of the API, one tag: the package's (openapi/__init__.py, _tag)."""
    document = anon.get("/lab/openapi.json").json
    tags = {
        tag
        for path, item in document["paths"].items() if path.startswith("/lab/grade")
        for operation in item.values()
        for tag in operation["tags"]
    }  # fmt: skip
    assert tags == {"grade"}
    described = {tag["name"]: tag["description"] for tag in document["tags"]}
    assert described["grade"].startswith("The report card for HTTP clients")
