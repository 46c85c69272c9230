"""The learner's lab, a WSGI app of its own mounted at /lab/ (lab/): /lab/anything,
/lab/status/{codes}, /lab/delay/{seconds}; its old paths under /api/ (308), its
conventions (no credential read, its own bucket, its CORS), its own OpenAPI document
and its switch, REFAPI_LAB.

In process; the sleep moves the test's clock (``make_app``) and the random source
is the test's, so nothing waits and every pick is known (docs/lab.md). The host's
share of slow work across workers is tests/e2e/test_lab.py's; the explainer,
tests/lab/test_explain.py's.
"""

from __future__ import annotations

import base64
import csv
import io
import logging
import random
import re
import urllib.parse
from dataclasses import replace

import pytest
import webtest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from werkzeug.http import HTTP_STATUS_CODES

from refapi import create_app
from refapi.lab import DELAYS_A_MINUTE
from refapi.lab import handlers as lab
from refapi.web.cors import EXPOSED
from refapi.web.statuses import PHRASES
from tests.helpers import assert_error, operations_inline, varies_on
from tests.test_metrics import figures, value

# Each test's figures apart from the others' (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("own_metrics_folder")

ECHO_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
# What the lab's own bucket says by default: 1000 a minute (REFAPI_LAB_RATE_LIMIT).
LAB_POLICY = '"lab";q=1000;w=60'
# Every path of the lab, as a request for it: method, path, JSON body.
LAB_REQUESTS = [
    ("GET", "/lab/anything", None),
    ("GET", "/lab/get", None),
    ("POST", "/lab/post", {"a": 1}),
    ("GET", "/lab/headers", None),
    ("GET", "/lab/status/200", None),
    ("GET", "/lab/delay/0", None),
    ("POST", "/lab/explain", {"method": "GET", "path": "/healthz"}),
    ("GET", "/lab/openapi.json", None),
]
# The old paths, each with its new one (docs/lab.md, "Moved").
MOVED = [
    ("/api/echo", "/lab/anything"),
    ("/api/status/503", "/lab/status/503"),
    ("/api/status/200:0.8,503:0.2", "/lab/status/200:0.8,503:0.2"),
    ("/api/delay/1.5", "/lab/delay/1.5"),
]
# As docs/lab.md, "Moved", promises them: written out, not read from the code.
DEPRECATION = "@1795910400"
SUNSET = "Sun, 31 May 2027 00:00:00 GMT"


@pytest.fixture
def anon(make_app, tmp_path) -> webtest.TestApp:
    """An anonymous app whose data folder is the test's."""
    return make_app(anonymous=True, data_dir=str(tmp_path))


@pytest.fixture
def unlimited(make_app, tmp_path) -> webtest.TestApp:
    """An anonymous app whose rate limits no test here reaches (the lab's own)."""
    return make_app(
        anonymous=True, data_dir=str(tmp_path), rate_limit_capacity=10**6,
        lab_rate_limit=10**6,
    )  # fmt: skip


def drawing(config, store, clock, tmp_path, number: float) -> webtest.TestApp:
    """An anonymous app whose random source always draws ``number``."""
    made = create_app(
        replace(config, data_dir=str(tmp_path)),
        store=store, clock=clock, sleep=clock.advance, rand=lambda: number,
    )  # fmt: skip
    return webtest.TestApp(made)


# Echo


@pytest.mark.parametrize("method", ECHO_METHODS)
def test_the_echo_shows_what_the_server_handed_over(anon, method):
    headers = {"Content-Type": "text/plain", "X-Plain": "shown", "Accept": "text/html"}
    response = anon.request(
        "/lab/anything?b=2&a=1", method=method, body=b"caf\xc3\xa9 \xff",
        headers=headers, environ={"REMOTE_ADDR": "192.0.2.7"},
    )  # fmt: skip
    assert response.status_int == 200
    assert response.content_type == "application/json"  # whatever Accept says
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["RateLimit-Policy"] == LAB_POLICY  # the lab's bucket
    echo = response.json
    assert list(echo) == [
        "args", "data", "files", "form", "headers", "json", "method", "origin",
        "url", "credentials", "notes",
    ]  # httpbin's members, in its order, the lab's own last  # fmt: skip
    assert echo["method"] == method
    assert echo["args"] == {"b": "2", "a": "1"}
    assert echo["url"] == "http://localhost/lab/anything?b=2&a=1"
    assert echo["headers"]["X-Plain"] == "shown"
    assert echo["headers"]["Content-Type"] == "text/plain"
    # Any content type, no 415; bytes that are not UTF-8 as httpbin writes them.
    encoded = base64.b64encode(b"caf\xc3\xa9 \xff").decode()
    assert echo["data"] == f"data:application/octet-stream;base64,{encoded}"
    assert (echo["files"], echo["form"], echo["json"]) == ({}, {}, None)
    assert (echo["origin"], echo["credentials"]) == ("192.0.2.7", [])


@pytest.mark.parametrize("path", ["a", "a/b/c", "caf%C3%A9/x%2Fy"])
def test_the_echo_answers_any_path_below_it(anon, path):
    echo = anon.request(f"/lab/anything/{path}?q=1", method="PUT", body=b'{"a": 1}')
    assert echo.status_int == 200
    assert echo.json["method"] == "PUT" and echo.json["json"] == {"a": 1}
    url = urllib.parse.unquote(echo.json["url"])
    assert url == f"http://localhost/lab/anything/{urllib.parse.unquote(path)}?q=1"


def test_the_echo_s_own_path_ends_at_its_name(anon):
    # /lab/anything/ names no path below it: 404, as any path the lab lacks.
    assert_error(anon.get("/lab/anything/", expect_errors=True), 404, "NOT_FOUND")


def test_head_of_the_echo_has_no_body(anon):
    head = anon.head("/lab/anything")
    assert head.body == b"" and int(head.headers["Content-Length"]) > 0
    assert head.headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize(
    "name",
    ["Authorization", "Proxy-Authorization", "Cookie", "X-API-Key", "X-CSRF-Token",
     "X-Auth-User", "X-Upstream-Token", "X-Signing-Key", "X-Client-Secret",
     "X-Session-Id", "X-Jwt-Assertion", "X-Hub-Signature", "Set-Cookie2"],
)  # fmt: skip
def test_a_header_that_may_carry_a_credential_is_redacted(anon, name):
    response = anon.get("/lab/anything", headers={name: "Bearer s3cr3t-value"})
    assert "s3cr3t" not in response.text
    named = [
        value for found, value in response.json["headers"].items()
        if found.lower() == name.lower()
    ]  # fmt: skip
    assert named == ["[redacted]"]


@pytest.mark.parametrize(
    ("headers", "kinds"),
    [
        ({"Authorization": "Bearer not-a-real-token"}, ["bearer"]),
        ({"Authorization": "bearer\tbroken"}, ["bearer"]),
        ({"Authorization": "Basic dXNlcjpwYXNz"}, ["basic"]),
        ({"Authorization": "Digest x"}, ["other"]),
        ({"X-API-Key": "not-a-real-key"}, ["api_key"]),
        ({"Cookie": "refapi_session=stale; theme=dark"}, ["session"]),
        ({"Cookie": "theme=dark"}, []),
        ({"Authorization": "Bearer a", "X-API-Key": "b"}, ["bearer", "api_key"]),
    ],
    ids=["bearer", "malformed", "basic", "other", "key", "session", "cookie", "both"],
)
def test_the_echo_names_the_kind_of_credential_and_checks_none(anon, headers, kinds):
    response = anon.get("/lab/anything", headers=headers)  # never 401
    assert response.json["credentials"] == kinds


def test_an_invalid_token_on_the_echo_costs_the_address_s_bucket(make_app, tmp_path):
    app = make_app(anonymous=True, data_dir=str(tmp_path), lab_rate_limit=2)
    bogus = {"Authorization": "Bearer bogus"}
    for _ in range(2):
        app.get("/lab/anything", headers=bogus)
    refused = app.get("/lab/anything", status=429)  # the same bucket, by address
    assert refused.json["code"] == "RATE_LIMITED"
    assert refused.headers["RateLimit"] == '"lab";r=0;t=30'


def test_the_echo_takes_a_body_up_to_the_service_s_limit(make_app, tmp_path):
    app = make_app(anonymous=True, data_dir=str(tmp_path), max_body_bytes=64 * 1024)
    body = b"x" * (64 * 1024)  # past the 16 KiB of its own it had
    plain = "text/plain"
    answer = app.post("/lab/anything", body, content_type=plain)
    assert answer.json["data"] == body.decode()
    refused = app.post("/lab/anything", body + b"x", content_type=plain,
                       expect_errors=True)  # fmt: skip
    assert_error(refused, 413, "PAYLOAD_TOO_LARGE")
    assert refused.json["details"] == {"limit": 64 * 1024}
    assert refused.headers["Cache-Control"] == "no-store"


def test_under_a_mount_point_the_echo_shows_the_prefix(anon):
    echo = anon.get("/lab/anything", extra_environ={"SCRIPT_NAME": "/prod"}).json
    assert echo["url"] == "http://localhost/prod/lab/anything"


def test_the_client_address_is_the_one_the_trusted_proxy_rule_gives(make_app, tmp_path):
    app = make_app(anonymous=True, data_dir=str(tmp_path), trust_proxy=1)
    echo = app.get(
        "/lab/anything", headers={"X-Forwarded-For": "198.51.100.4"},
        extra_environ={"REMOTE_ADDR": "10.0.0.1"},
    ).json  # fmt: skip
    assert echo["origin"] == "198.51.100.4"


# Statuses


@pytest.mark.parametrize(
    ("code", "headers", "body"),
    [
        ("200", {}, {"status": 200, "message": "OK, as asked"}),
        ("201", {"Location": "/lab/anything"},
         {"status": 201, "message": "Created, as asked"}),
        ("204", {}, None),
        ("301", {"Location": "/lab/anything"},
         {"status": 301, "message": "Moved Permanently, as asked"}),
        ("304", {}, None),
        ("401", {"WWW-Authenticate": 'Bearer realm="refapi"'}, {"status": 401}),
        ("405", {"Allow": lab.ALLOW}, {"status": 405}),
        ("418", {}, {"status": 418}),
        ("429", {"Retry-After": "1"}, {"status": 429, "retry_after": 1}),
        ("500", {}, {"status": 500}),
        ("503", {"Retry-After": "1"}, {"status": 503, "retry_after": 1}),
    ],
)  # fmt: skip
def test_a_status_comes_with_what_it_requires(anon, code, headers, body):
    response = anon.get(f"/lab/status/{code}", status=int(code))
    for name, expected in headers.items():
        assert response.headers[name] == expected
    assert "Location" in response.headers or "Location" not in headers
    if body is None:
        assert response.body == b""
    elif int(code) < 400:
        assert response.json == body
    else:
        assert response.json == {
            "code": "SIMULATED",
            "message": f"{PHRASES[int(code)]}, as asked",
            "details": body,
        }
    assert ("Retry-After" in response.headers) == (code in ("429", "503"))


def test_every_served_status_is_answered_and_phrased_from_the_table(anon):
    for code in sorted(lab.SERVED):
        response = anon.post(f"/lab/status/{code}", status=code)
        # httpbin's status line, as Werkzeug writes it (docs/lab.md, "Conventions")
        assert response.status == f"{code} {HTTP_STATUS_CODES[code].upper()}"
    known = [code for code in PHRASES if 200 <= code <= 599]
    assert lab.SERVED == set(known) - {206, 407, 416}


def test_no_row_of_the_lab_answers_406(anon):
    """The lab's answers ignore Accept (docs/lab.md, "Conventions"); the explainer
    and the lab's document answered 406 to an Accept they could not meet."""
    from refapi.lab.routes import ROUTES

    assert [(row.method, row.path) for row in ROUTES if row.negotiated] == []
    html = {"Accept": "text/html"}
    anon.get("/lab/openapi.json", headers=html, status=200)
    asked = {"method": "GET", "path": "/healthz"}
    assert anon.post_json("/lab/explain", asked, headers=html).status_code == 200


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("/lab/status/401", "401 UNAUTHORIZED"),
        ("/lab/redirect/1", "302 FOUND"),
        ("/lab/basic-auth/u/p", "401 UNAUTHORIZED"),
        ("/lab/no-such-path", "404 NOT FOUND"),
        ("/lab/status/413", "413 REQUEST ENTITY TOO LARGE"),
        ("/lab/get", "200 OK"),
        ("/v1/todos/999999", "404 Not Found"),  # the rest of the service: RFC 9110's
    ],
)
def test_the_lab_s_status_lines_are_httpbin_s(anon, path, line):
    """httpie's own tests compare the status line: httpbin writes Werkzeug's
    phrase in upper case."""
    assert anon.get(path, expect_errors=True).status == line


def test_the_location_is_built_from_the_mount_point_never_from_the_request(anon):
    response = anon.get(
        "/lab/status/302", headers={"Host": "evil.example", "X-Forwarded-Host": "x"},
        extra_environ={"SCRIPT_NAME": "/dev"}, status=302,
    )  # fmt: skip
    assert response.headers["Location"] == "/dev/lab/anything"


@pytest.mark.parametrize(
    "code",
    ["206", "407", "416", "199", "600", "299", "0200", "2000", "abc", "200:0",
     "200:-1", "200:x", "200,", ",200", "200:0.5;503", ",".join(["200"] * 11)],
)  # fmt: skip
def test_any_other_code_is_a_validation_error(anon, code):
    response = anon.get(f"/lab/status/{code}", expect_errors=True)
    assert_error(response, 400, "VALIDATION_ERROR")
    assert response.json["details"]["errors"][0]["field"] == "codes"


def _code_schema(app) -> dict:
    document = operations_inline(app.get("/lab/openapi.json").json)
    operation = document["paths"]["/lab/status/{codes}"]["get"]
    return next(p for p in operation["parameters"] if p["name"] == "codes")["schema"]


def _answered(app, code: str) -> bool:
    """Whether the lab serves ``code`` (a status it simulates), or refuses it."""
    response = app.get(f"/lab/status/{code}?seed=1", expect_errors=True)
    if response.status_int < 400 or response.json["code"] == "SIMULATED":
        return True
    assert_error(response, 400, "VALIDATION_ERROR")
    return False


def test_the_document_s_code_pattern_admits_exactly_the_codes_served(unlimited):
    # A generator (schemathesis) takes the pattern at its word: /lab/status/000
    # was valid to the document and refused by the lab.
    anon = unlimited
    schema = _code_schema(anon)
    assert schema == lab.CODE_SCHEMA  # the handler's own, which the test below reads
    pattern = re.compile(schema["pattern"])
    for number in range(1000):
        code = f"{number:03}"
        assert bool(pattern.fullmatch(code)) == _answered(anon, code), code
    weighted = [
        "200:1", "200:0", "200:0.0", "200:000000", "200:000001", "200:0.000001",
        "200:00.5", "200:1.5", "200:123456.123456", "200:1234567", "200:1.1234567",
        "200:0.0000001", "200:.5", "200:5.", "200:1.2.3", "200:+1", "200:1e2",
        "200,503:2", "200,,503", "000:1", ",".join(["503:123456.123456"] * 10),
        ",".join(["200"] * 11),
    ]  # fmt: skip
    for code in weighted:
        assert bool(pattern.fullmatch(code)) == _answered(anon, code), code
    # The pattern bounds the length (x-bounded-by in place of a maxLength): ten of
    # the longest choice pass, above; an eleventh does not.
    assert "maxLength" not in schema and "503:123456.123456" in schema["x-bounded-by"]
    assert not pattern.fullmatch(",".join(["503:123456.123456"] * 11))


# The app is only read: answering a code changes nothing a later input sees.
@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(code=st.from_regex(lab.CODE_SCHEMA["pattern"], fullmatch=True))
def test_every_code_the_document_calls_valid_is_answered(unlimited, code):
    assert _answered(unlimited, code)


@pytest.mark.parametrize(
    ("number", "status"), [(0.0, 200), (0.79, 200), (0.8, 503), (0.999, 503)]
)
def test_a_weighted_code_is_picked_by_the_injected_random_source(
    config, store, clock, tmp_path, number, status
):
    app = drawing(config, store, clock, tmp_path, number)
    app.get("/lab/status/200:0.8,503:0.2", status=status)
    app.get("/lab/status/200:4,503:1", status=status)  # weights are relative


def test_ten_weighted_codes_are_taken(anon):
    anon.get("/lab/status/" + ",".join(["200:1"] * 10), status=200)


def test_a_seed_makes_the_pick_repeatable_whatever_the_random_source(
    config, store, clock, tmp_path
):
    low = drawing(config, store, clock, tmp_path, 0.0)
    high = drawing(config, store, clock, tmp_path, 0.999)
    picks = []
    for seed in range(1, 21):
        url = f"/lab/status/200:0.5,503:0.5?seed={seed}"
        status = low.get(url, status="*").status_int
        assert high.get(url, status="*").status_int == status
        expected = 200 if random.Random(seed).random() < 0.5 else 503
        assert status == expected
        picks.append(status)
    assert set(picks) == {200, 503}
    assert_error(low.get("/lab/status/200?seed=x", status=400), 400, "VALIDATION_ERROR")


def test_a_simulated_answer_is_logged_at_info_without_a_traceback(anon, caplog):
    with caplog.at_level(logging.INFO):
        anon.get("/lab/status/500", status=500)
    assert not [r for r in caplog.records if r.levelno > logging.INFO or r.exc_info]


def test_a_simulated_429_or_503_is_counted_as_a_request_only(make_app, tmp_path):
    app = make_app(anonymous=True, data_dir=str(tmp_path), metrics=("127.0.0.1",))
    inside = {"REMOTE_ADDR": "127.0.0.1"}
    before = figures(app)
    for code in (429, 503, 429):
        app.get(f"/lab/status/{code}", extra_environ=inside, status=code)
    after = figures(app)
    for name in ("refapi_rate_limited_total", "refapi_storage_errors_total"):
        assert value(after, name, mount="") == value(before, name, mount="")
    labels = {"mount": "", "route": "/lab/status/{codes}", "method": "GET"}
    requests = "refapi_requests_total"
    assert (
        value(after, requests, **labels, status="429")
        == value(before, requests, **labels, status="429") + 2
    )
    app.get("/healthz", status=200)  # unaffected


def test_a_refusal_of_the_lab_s_buckets_is_counted_a_simulated_429_is_not(
    make_app, tmp_path
):
    """refapi_rate_limited_total counts what a bucket refused (RateLimit's mark,
    or the handler's, for the delay's bucket), never a 429 asked for."""
    app = make_app(
        anonymous=True, data_dir=str(tmp_path), metrics=("127.0.0.1",),
        lab_rate_limit=DELAYS_A_MINUTE + 2,
    )  # fmt: skip
    inside = {"REMOTE_ADDR": "127.0.0.1"}

    def refusals() -> float:
        return value(figures(app), "refapi_rate_limited_total", mount="")

    counted = refusals()
    for _ in range(DELAYS_A_MINUTE):
        app.get("/lab/delay/0", extra_environ=inside, status=200)
    app.get("/lab/status/429", extra_environ=inside, status=429)  # asked for
    assert refusals() == counted
    # The delay's bucket, passed by its handler, refuses: the lab's token goes back.
    delay = app.get("/lab/delay/0", extra_environ=inside, status=429)
    assert_error(delay, 429, "RATE_LIMITED")
    assert '"delay";r=0' in delay.headers["RateLimit"]
    assert refusals() == counted + 1
    # The lab's own bucket, passed by RateLimit: its last token, then a refusal.
    app.get("/lab/anything", extra_environ=inside, status=200)
    refused = app.get("/lab/anything", extra_environ=inside, status=429)
    assert refused.headers["RateLimit"].startswith('"lab";r=0;')
    assert refusals() == counted + 2


# Delays


def test_a_delay_answers_after_the_injected_sleep(anon, clock):
    started = clock()
    response = anon.put("/lab/delay/1.5")
    assert response.json["seconds"] == 1.5
    assert clock() - started == 1.5
    assert anon.delete("/lab/delay/0").json["seconds"] == 0
    assert anon.get("/lab/delay/2.5e-1").json["seconds"] == 0.25
    policy = response.headers["RateLimit-Policy"]
    assert policy == f'{LAB_POLICY}, "delay";q={DELAYS_A_MINUTE};w=60'


@pytest.mark.parametrize("seconds", ["5.001", "6", "1e1", "1e999", "123456789"])
def test_a_delay_over_the_most_waits_the_most_as_httpbin_s(anon, clock, seconds):
    started = clock()
    answer = anon.get(f"/lab/delay/{seconds}")
    assert answer.json["seconds"] == 5
    assert clock() - started == 5
    assert answer.json["url"] == f"http://localhost/lab/delay/{seconds}"


@pytest.mark.parametrize("seconds", ["abc", "-1", "1..2", "nan", "inf", "0x1", ".5"])
def test_a_delay_that_is_no_number_is_refused(anon, clock, seconds):
    started = clock()
    response = anon.get(f"/lab/delay/{seconds}", expect_errors=True)
    assert_error(response, 400, "VALIDATION_ERROR")
    assert response.json["details"]["errors"] == [
        {"field": "seconds", "message": "must be a number of seconds, 0 or more"}
    ]
    assert clock() == started


def test_the_most_is_configured(make_app, tmp_path, clock):
    app = make_app(anonymous=True, data_dir=str(tmp_path), lab_max_delay=0.5)
    assert app.get("/lab/delay/0.5").json["seconds"] == 0.5
    assert app.get("/lab/delay/0.6").json["seconds"] == 0.5


def test_a_delay_beyond_the_hosts_share_of_slow_work_is_refused_at_once(
    config, store, clock, tmp_path
):
    inner = []

    def sleep(seconds: float) -> None:
        # While the first delay holds the host's share (two slots, one for slow
        # work: slots.py): a second request comes.
        inner.append(app.get("/lab/delay/1", status="*"))
        clock.advance(seconds)

    configured = replace(
        config, data_dir=str(tmp_path), workers=2, threads=1, metrics=("127.0.0.1",)
    )
    app = webtest.TestApp(create_app(configured, store=store, clock=clock, sleep=sleep))
    before = figures(app)
    first = app.get("/lab/delay/3")
    assert first.json["seconds"] == 3
    [second] = inner
    assert_error(second, 429, "RATE_LIMITED")
    assert second.headers["Retry-After"] == "3"  # when the first one ends
    assert second.json["details"] == {"retry_after": 3}
    assert second.headers["Cache-Control"] == "no-store"
    # Refused for the host's sake: a refusal, counted as a bucket's is.
    counted = "refapi_rate_limited_total"
    after = figures(app)
    assert value(after, counted, mount="") == value(before, counted, mount="") + 1
    # The slot was let go: the next delay is served.
    inner.clear()
    app.get("/lab/delay/1", status=200)


def test_delays_pass_a_bucket_of_their_own_per_address(anon):
    for _ in range(DELAYS_A_MINUTE):
        anon.get("/lab/delay/0", status=200)
    refused = anon.get("/lab/delay/0", status=429)
    assert refused.json["code"] == "RATE_LIMITED"
    assert '"delay";r=0' in refused.headers["RateLimit"]
    anon.get("/lab/anything", status=200)  # the lab's bucket still has tokens
    other = {"REMOTE_ADDR": "192.0.2.8"}  # another address: its own delay bucket
    anon.get("/lab/delay/0", extra_environ=other, status=200)


# Moved: the old paths answer 308 to the new, until the sunset


@pytest.mark.parametrize("method", [*lab.METHODS, "HEAD"])
@pytest.mark.parametrize(("old", "new"), MOVED, ids=[old for old, _ in MOVED])
def test_an_old_path_answers_308_to_its_new_one_query_and_mount_kept(
    anon, clock, old, new, method
):
    started = clock()
    for prefix in ("", "/prod"):
        response = anon.request(
            f"{old}?b=2&a=%20", method=method, body=b"kept",
            environ={"SCRIPT_NAME": prefix}, status=308,
        )  # fmt: skip
        assert response.headers["Location"] == f"{prefix}{new}?b=2&a=%20"
        assert response.headers["Deprecation"] == DEPRECATION == lab.DEPRECATION
        assert response.headers["Sunset"] == SUNSET == lab.SUNSET
        assert response.body == b""
    assert clock() == started  # moved, not served: no delay slept


def test_the_old_explainer_answers_308_to_the_new_one_for_post(anon):
    for prefix in ("", "/prod"):
        response = anon.post_json(
            "/api/explain?x=1", {"method": "GET", "path": "/healthz"},
            extra_environ={"SCRIPT_NAME": prefix}, status=308,
        )  # fmt: skip
        assert response.headers["Location"] == f"{prefix}/lab/explain?x=1"
        assert response.headers["Deprecation"] == DEPRECATION
        assert response.headers["Sunset"] == SUNSET
    refused = anon.get("/api/explain", status=405)  # POST only, as it was
    assert refused.headers["Allow"] == "OPTIONS, POST"


def test_a_client_that_follows_the_308_is_served_the_same_request(anon):
    # 308, not 301: the method and the body go to the new path (RFC 9110 15.4.9).
    moved = anon.put(
        "/api/echo?x=1", b"kept", headers={"Content-Type": "text/plain"}, status=308
    )
    echo = anon.put(
        moved.headers["Location"], b"kept", headers={"Content-Type": "text/plain"}
    ).json
    assert (echo["method"], echo["url"], echo["data"]) == (
        "PUT", "http://localhost/lab/anything?x=1", "kept",
    )  # fmt: skip


# Conventions: no credential read, a bucket of its own, its CORS


BAD_CREDENTIALS = {
    "bearer": {"Authorization": "Bearer nonsense"},
    "malformed": {"Authorization": "Bearer"},
    "basic": {"Authorization": "Basic bm9ib2R5Om5vdGhpbmc="},
    "api-key": {"X-API-Key": "nonsense"},
    "session": {"Cookie": "refapi_session=nonsense"},
}


@pytest.mark.parametrize("credential", BAD_CREDENTIALS.values(), ids=BAD_CREDENTIALS)
def test_a_bad_credential_on_any_lab_path_is_never_401(unlimited, credential):
    """The lab reads no credential (docs/lab.md, "Conventions"): what a request
    carries is the lab's data, on its paths and its old ones."""
    app = unlimited
    for method, path, form in LAB_REQUESTS:
        if form is None:
            answer = app.request(path, method=method, headers=credential, status="*")
        else:
            answer = app.post_json(path, form, headers=credential, status="*")
        assert answer.status_int == 200, (path, answer.status)
    echo = app.get("/lab/anything", headers=credential).json
    assert len(echo["credentials"]) == 1  # shown as a kind, never checked
    for old, _ in MOVED:
        app.get(old, headers=credential, status=308)
    app.post_json("/api/explain", {}, headers=credential, status=308)
    # The core reads it and refuses it: on a public route (a stale session cookie
    # only where a credential is needed, and cleared: docs/authentication.md,
    # "Sessions and CSRF").
    stale = "Cookie" in credential
    refused = app.get("/api/keys" if stale else "/v1/todos/1", headers=credential,
                      status=401)  # fmt: skip
    assert_error(refused, 401, "UNAUTHENTICATED")
    assert ("Set-Cookie" in refused.headers) is stale


def test_the_lab_s_bucket_is_its_own_per_address_apart_from_the_core_s(
    make_app, tmp_path
):
    app = make_app(
        anonymous=True, data_dir=str(tmp_path), rate_limit_capacity=2, lab_rate_limit=2
    )
    one, two, three = ({"REMOTE_ADDR": f"192.0.2.{n}"} for n in (1, 2, 3))
    # The core's default bucket empty: the lab still answers the address.
    for _ in range(2):
        app.get("/v1/todos/1", extra_environ=one, status=200)
    assert_error(app.get("/v1/todos/1", extra_environ=one, status=429), 429,
                 "RATE_LIMITED")  # fmt: skip
    echo = app.get("/lab/anything", extra_environ=one, status=200)
    assert echo.headers["RateLimit-Policy"] == '"lab";q=2;w=60'
    assert echo.headers["RateLimit"] == '"lab";r=1;t=0'
    # The lab's bucket empty: the core still answers the address.
    for _ in range(2):
        app.get("/lab/anything", extra_environ=two, status=200)
    refused = app.get("/lab/anything", extra_environ=two, status=429)
    assert_error(refused, 429, "RATE_LIMITED")
    assert refused.headers["RateLimit"].startswith('"lab";r=0;')
    core = app.get("/v1/todos/1", extra_environ=two, status=200)
    assert core.headers["RateLimit"].startswith('"default";r=1;')
    # Another address: a full bucket of its own.
    third = app.get("/lab/anything", extra_environ=three, status=200)
    assert third.headers["RateLimit"] == '"lab";r=1;t=0'


def test_the_lab_s_bucket_is_the_address_s_whatever_credential_comes(
    make_app, tmp_path
):
    """No credential is read, so none buys a bucket of its own: the admin's token
    and no token at all, from one address, share the address's."""
    admin = make_app(data_dir=str(tmp_path), lab_rate_limit=2)  # the admin's token
    assert "HTTP_AUTHORIZATION" in admin.extra_environ
    anon = webtest.TestApp(admin.app)
    address = {"REMOTE_ADDR": "192.0.2.1"}
    admin.get("/lab/anything", extra_environ=address, status=200)
    anon.get("/lab/anything", extra_environ=address, status=200)
    refused = admin.get("/lab/anything", extra_environ=address, status=429)
    assert_error(refused, 429, "RATE_LIMITED")


PREFLIGHT = {
    "Access-Control-Request-Method": "PUT",
    "Access-Control-Request-Headers": "X-Anything-1, X-Other",
}
ALLOWED_ORIGINS = [
    pytest.param(("*",), "https://x.example", "*", id="any-origin"),
    pytest.param(("https://a.example",), "https://a.example", "https://a.example",
                 id="listed-origin"),
]  # fmt: skip


@pytest.mark.parametrize(("origins", "origin", "allow_origin"), ALLOWED_ORIGINS)
def test_a_preflight_to_the_lab_allows_any_header_it_asks_for(
    make_app, tmp_path, origins, origin, allow_origin
):
    app = make_app(anonymous=True, data_dir=str(tmp_path), cors_origins=origins)
    preflight = {**PREFLIGHT, "Origin": origin}
    for _, path, _ in LAB_REQUESTS:
        response = app.options(path, headers=preflight, status=204)
        assert response.headers["Access-Control-Allow-Origin"] == allow_origin
        assert response.headers["Access-Control-Allow-Headers"] == (
            "X-Anything-1, X-Other"
        )
        assert "PUT" in response.headers["Access-Control-Allow-Methods"].split(", ")
    # The core's preflight allows its own list of headers only.
    core = app.options("/v1/articles/1", headers=preflight, status=204)
    allowed = core.headers["Access-Control-Allow-Headers"].lower().split(", ")
    assert "x-anything-1" not in allowed and "x-other" not in allowed
    # The request itself, as the browser then sends it: its headers echoed.
    sent = {"Origin": origin, "X-Anything-1": "a", "X-Other": "b"}
    echo = app.put("/lab/anything", headers=sent).json
    assert echo["headers"]["X-Anything-1"] == "a"


@pytest.mark.parametrize(("origins", "origin", "allow_origin"), ALLOWED_ORIGINS)
def test_an_answer_of_the_lab_to_an_allowed_origin_exposes_every_header(
    make_app, tmp_path, origins, origin, allow_origin
):
    app = make_app(anonymous=True, data_dir=str(tmp_path), cors_origins=origins)
    # A success, a simulated error, a validation error, a move: errors included.
    for path, status in (
        ("/lab/anything", 200), ("/lab/status/201", 201), ("/lab/status/429", 429),
        ("/lab/status/abc", 400), ("/lab/delay/0", 200), ("/api/echo", 308),
    ):  # fmt: skip
        response = app.get(path, headers={"Origin": origin}, status=status)
        assert response.headers["Access-Control-Allow-Origin"] == allow_origin
        assert response.headers["Access-Control-Expose-Headers"] == "*"
        assert ("origin" in varies_on(response)) is (allow_origin != "*")
    # The core exposes its own list.
    core = app.get("/v1/todos/1", headers={"Origin": origin})
    assert core.headers["Access-Control-Expose-Headers"] == EXPOSED


def test_an_unlisted_origin_is_granted_nothing_by_the_lab(make_app, tmp_path):
    app = make_app(
        anonymous=True, data_dir=str(tmp_path), cors_origins=("https://a.example",)
    )
    evil = {"Origin": "https://evil.example"}
    preflight = app.options("/lab/anything", headers={**PREFLIGHT, **evil}, status=204)
    answer = app.get("/lab/anything", headers=evil, status=200)
    for response in (preflight, answer):
        assert not [n for n in response.headers if n.startswith("Access-Control-")]
        assert "origin" in varies_on(response)


# Its own document


# Of every method, then httpbin's endpoints (the methods each takes), then the
# explainer.
EVERY_METHOD = {"/lab/anything", "/lab/anything/{path}", "/lab/redirect-to",
                "/lab/status/{codes}", "/lab/delay/{seconds}"}  # fmt: skip
REQUESTS = {
    "/lab/get": "get", "/lab/post": "post", "/lab/put": "put", "/lab/patch": "patch",
    "/lab/delete": "delete", "/lab/headers": "get", "/lab/ip": "get",
    "/lab/user-agent": "get", "/lab/uuid": "get", "/lab/redirect/{n}": "get",
    "/lab/relative-redirect/{n}": "get", "/lab/absolute-redirect/{n}": "get",
    "/lab/basic-auth/{user}/{passwd}": "get",
    "/lab/hidden-basic-auth/{user}/{passwd}": "get", "/lab/bearer": "get",
    "/lab/digest-auth/{qop}/{user}/{passwd}": "get",
    "/lab/digest-auth/{qop}/{user}/{passwd}/{algorithm}": "get",
    "/lab/digest-auth/{qop}/{user}/{passwd}/{algorithm}/{stale_after}": "get",
    "/lab": "get", "/lab/stream/{n}": "get", "/lab/stream-bytes/{n}": "get",
    "/lab/drip": "get", "/lab/sse": "get",
    "/lab/cookies": "get", "/lab/cookies/set": "get", "/lab/cookies/delete": "get",
    "/lab/response-headers": "get post",
    "/lab/gzip": "get", "/lab/deflate": "get", "/lab/brotli": "get",
    "/lab/html": "get", "/lab/encoding/utf8": "get", "/lab/json": "get",
    "/lab/xml": "get", "/lab/robots.txt": "get", "/lab/deny": "get",
    "/lab/base64/{value}": "get", "/lab/bytes/{n}": "get",
    "/lab/links/{n}/{offset}": "get", "/lab/range/{n}": "get", "/lab/cache": "get",
    "/lab/cache/{n}": "get", "/lab/etag/{etag}": "get",
    # The report card (tests/lab/test_grade.py).
    "/lab/grade": "post", "/lab/grade/{run}": "get",
    **{f"/lab/grade/{{run}}/{task}": "get" for task in (
        "loop", "loop/{hop}", "handoff", "handoff/landing", "too-many", "unavailable",
        "cached", "download", "compressed", "compressed/{proof}", "json",
        "cookies/set", "cookies/kept", "cookies/other")},
    "/lab/grade/{run}/see-other": "post", "/lab/grade/{run}/orders": "post",
    "/lab/grade/{run}/see-other/landing": "get post",
}  # fmt: skip
LAB_PATHS = EVERY_METHOD | set(REQUESTS) | {"/lab/explain"}


def test_the_lab_has_a_document_of_its_own_the_core_s_lists_none_of_it(anon):
    paths = anon.get("/lab/openapi.json").json["paths"]
    assert set(paths) == LAB_PATHS
    for path in EVERY_METHOD:
        assert {"get", "post", "put", "patch", "delete"} <= set(paths[path])
    for path, method in REQUESTS.items():
        assert set(paths[path]) - {"head", "options"} == set(method.split())
    assert "post" in paths["/lab/explain"]
    core = anon.get("/openapi.json").json["paths"]
    old = ("/api/echo", "/api/status/", "/api/delay/", "/api/explain")
    assert not [path for path in core if path.startswith(("/lab/", *old))]
    # The catalogue lists every row served, the lab's with the core's; not the
    # old paths, nor the lab's document (neither is documented).
    names = anon.get("/api/download_csv.php").text
    assert "reflect_anything (method=PATCH)" in names
    endpoints = {row["endpoint"] for row in csv.DictReader(io.StringIO(names))}
    assert LAB_PATHS <= endpoints
    assert not [e for e in endpoints if e.startswith(old) or e.endswith("openapi.json")]


def test_the_lab_s_document_names_no_credential(anon):
    """The lab reads none (docs/lab.md): no operation asks for one, no scheme is
    declared, none answers 401; the core's declares the schemes its operations name."""
    document = anon.get("/lab/openapi.json").json
    operations = [op for item in document["paths"].values() for op in item.values()]
    assert not [op for op in operations if op.get("security")]
    assert "securitySchemes" not in document["components"]
    # 401 only from its own challenges, which check the path's user, not a
    # credential of the service (docs/lab.md, "Authentication").
    challenged = {op["operationId"] for op in operations if "401" in op["responses"]}
    digest = ("digest_auth", "digest_auth_algorithm", "digest_auth_stale_after")
    assert challenged == {
        f"{name}{head}"
        for name in ("basic_auth", "bearer", *digest)
        for head in ("", "_head")
    }
    core = anon.get("/openapi.json").json["components"]["securitySchemes"]
    assert set(core) == {"bearerAuth", "apiKeyAuth", "sessionCookie"}


def test_under_a_mount_point_the_lab_s_document_is_served_there(anon):
    mounted = {"SCRIPT_NAME": "/prod"}
    document = anon.get("/lab/openapi.json", extra_environ=mounted).json
    assert set(document["paths"]) == LAB_PATHS
    assert [server["url"] for server in document["servers"]] == ["/prod"]


# The switch


OFF = [
    "/lab/anything", "/lab/get", "/lab/status/200", "/lab/delay/0", "/lab/explain",
    "/lab/openapi.json", "/lab/", "/api/echo", "/api/status/200", "/api/delay/0",
    "/api/explain",
]  # fmt: skip


@pytest.mark.parametrize("method", ["GET", "HEAD", "POST", "PUT", "OPTIONS"])
def test_refapi_lab_0_turns_the_lab_off(make_app, tmp_path, method):
    app = make_app(anonymous=True, data_dir=str(tmp_path), lab=False)
    for path in OFF:
        response = app.request(
            path, method=method, headers={"Authorization": "Bearer bogus"},
            expect_errors=True,
        )  # fmt: skip
        if method == "HEAD":
            assert response.status_int == 404, path
        else:
            assert_error(response, 404, "NOT_FOUND")
    # Nothing of it is listed either.
    assert "reflect_anything" not in app.get("/api/download_csv.php").text


@pytest.mark.parametrize(
    "path",
    ["/lab/image", "/lab/image/png", "/lab/forms/post", "/lab/cookies/set/a/b",
     "/lab/links/3"],
)  # fmt: skip
def test_what_of_httpbins_surface_the_lab_leaves_out_is_404(anon, path):
    # docs/lab.md names each.
    assert_error(anon.get(path, status=404), 404, "NOT_FOUND")
