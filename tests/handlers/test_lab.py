"""The learner's lab: /api/echo, /api/status/{code}, /api/delay/{seconds}.

In process; the sleep moves the test's clock (``make_app``) and the random source
is the test's, so nothing waits and every pick is known (docs/lab.md). The host's
share of slow work across workers is tests/e2e/test_lab.py's.
"""

from __future__ import annotations

import logging
import random
import re
from dataclasses import replace

import pytest
import webtest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refapi import create_app
from refapi.handlers import lab
from refapi.web.rate_limits import DELAYS_A_MINUTE
from refapi.web.statuses import PHRASES
from tests.helpers import assert_error, operations_inline
from tests.test_metrics import figures, value

ECHO_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


@pytest.fixture
def anon(make_app, tmp_path) -> webtest.TestApp:
    """An anonymous app whose data folder is the test's."""
    return make_app(anonymous=True, data_dir=str(tmp_path))


@pytest.fixture
def unlimited(make_app, tmp_path) -> webtest.TestApp:
    """An anonymous app whose rate limit no test here reaches."""
    return make_app(anonymous=True, data_dir=str(tmp_path), rate_limit_capacity=10**6)


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
        "/api/echo?b=2&a=1", method=method, body=b"caf\xc3\xa9 \xff",
        headers=headers, environ={"REMOTE_ADDR": "192.0.2.7"},
    )  # fmt: skip
    assert response.status_int == 200
    assert response.content_type == "application/json"  # whatever Accept says
    assert response.headers["Cache-Control"] == "no-store"
    assert "q=100;w=10" in response.headers["RateLimit-Policy"]
    echo = response.json
    assert echo["method"] == method
    assert (echo["path"], echo["prefix"], echo["query"]) == ("/api/echo", "", "b=2&a=1")
    assert {"name": "X-Plain", "value": "shown"} in echo["headers"]
    assert {"name": "Content-Type", "value": "text/plain"} in echo["headers"]
    assert echo["body"] == "café \ufffd"  # any content type, no 415
    assert (echo["client"], echo["credentials"]) == ("192.0.2.7", [])


def test_head_of_the_echo_has_no_body(anon):
    head = anon.head("/api/echo")
    assert head.body == b"" and int(head.headers["Content-Length"]) > 0
    assert head.headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize(
    "name",
    ["Authorization", "Proxy-Authorization", "Cookie", "X-API-Key", "X-CSRF-Token",
     "X-Auth-User", "X-Upstream-Token", "X-Signing-Key", "X-Client-Secret",
     "X-Session-Id", "X-Jwt-Assertion", "X-Hub-Signature", "Set-Cookie2"],
)  # fmt: skip
def test_a_header_that_may_carry_a_credential_is_redacted(anon, name):
    response = anon.get("/api/echo", headers={name: "Bearer s3cr3t-value"})
    assert "s3cr3t" not in response.text
    named = [h for h in response.json["headers"] if h["name"].lower() == name.lower()]
    assert named == [{"name": named[0]["name"], "value": "[redacted]"}]


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
    response = anon.get("/api/echo", headers=headers)  # never 401
    assert response.json["credentials"] == kinds


def test_an_invalid_token_on_the_echo_costs_the_address_s_bucket(make_app, tmp_path):
    app = make_app(anonymous=True, data_dir=str(tmp_path), rate_limit_capacity=2)
    bogus = {"Authorization": "Bearer bogus"}
    for _ in range(2):
        app.get("/api/echo", headers=bogus)
    refused = app.get("/api/echo", status=429)  # the same bucket, by address
    assert refused.json["code"] == "RATE_LIMITED"


def test_the_echo_takes_a_body_up_to_its_own_limit(anon):
    body = b"x" * lab.ECHO_BODY_LIMIT
    assert anon.post("/api/echo", body).json["body"] == body.decode()
    refused = anon.post("/api/echo", body + b"x", expect_errors=True)
    assert_error(refused, 413, "PAYLOAD_TOO_LARGE")
    assert refused.json["details"] == {"limit": lab.ECHO_BODY_LIMIT}
    assert refused.headers["Cache-Control"] == "no-store"


def test_under_a_mount_point_the_echo_shows_the_prefix(anon):
    echo = anon.get("/api/echo", extra_environ={"SCRIPT_NAME": "/prod"}).json
    assert (echo["path"], echo["prefix"]) == ("/api/echo", "/prod")


def test_the_client_address_is_the_one_the_trusted_proxy_rule_gives(make_app, tmp_path):
    app = make_app(anonymous=True, data_dir=str(tmp_path), trust_proxy=1)
    echo = app.get(
        "/api/echo", headers={"X-Forwarded-For": "198.51.100.4"},
        extra_environ={"REMOTE_ADDR": "10.0.0.1"},
    ).json  # fmt: skip
    assert echo["client"] == "198.51.100.4"


# Statuses


@pytest.mark.parametrize(
    ("code", "headers", "body"),
    [
        ("200", {}, {"status": 200, "message": "OK, as asked"}),
        ("201", {"Location": "/api/echo"},
         {"status": 201, "message": "Created, as asked"}),
        ("204", {}, None),
        ("301", {"Location": "/api/echo"},
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
    response = anon.get(f"/api/status/{code}", status=int(code))
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
        response = anon.post(f"/api/status/{code}", status=code)
        assert response.status == f"{code} {PHRASES[code]}"
    known = [code for code in PHRASES if 200 <= code <= 599]
    assert lab.SERVED == set(known) - {206, 407, 416}


def test_the_location_is_built_from_the_mount_point_never_from_the_request(anon):
    response = anon.get(
        "/api/status/302", headers={"Host": "evil.example", "X-Forwarded-Host": "x"},
        extra_environ={"SCRIPT_NAME": "/dev"}, status=302,
    )  # fmt: skip
    assert response.headers["Location"] == "/dev/api/echo"


@pytest.mark.parametrize(
    "code",
    ["206", "407", "416", "199", "600", "299", "0200", "2000", "abc", "200:0",
     "200:-1", "200:x", "200,", ",200", "200:0.5;503", ",".join(["200"] * 11)],
)  # fmt: skip
def test_any_other_code_is_a_validation_error(anon, code):
    response = anon.get(f"/api/status/{code}", expect_errors=True)
    assert_error(response, 400, "VALIDATION_ERROR")
    assert response.json["details"]["errors"][0]["field"] == "code"


def _code_schema(app) -> dict:
    document = operations_inline(app.get("/openapi.json").json)
    operation = document["paths"]["/api/status/{code}"]["get"]
    return next(p for p in operation["parameters"] if p["name"] == "code")["schema"]


def _answered(app, code: str) -> bool:
    """Whether the lab serves ``code`` (a status it simulates), or refuses it."""
    response = app.get(f"/api/status/{code}?seed=1", expect_errors=True)
    if response.status_int < 400 or response.json["code"] == "SIMULATED":
        return True
    assert_error(response, 400, "VALIDATION_ERROR")
    return False


def test_the_document_s_code_pattern_admits_exactly_the_codes_served(unlimited):
    # A generator (schemathesis) takes the pattern at its word: /api/status/000
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
    assert len(",".join(["503:123456.123456"] * 10)) == schema["maxLength"]


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
    app.get("/api/status/200:0.8,503:0.2", status=status)
    app.get("/api/status/200:4,503:1", status=status)  # weights are relative


def test_ten_weighted_codes_are_taken(anon):
    anon.get("/api/status/" + ",".join(["200:1"] * 10), status=200)


def test_a_seed_makes_the_pick_repeatable_whatever_the_random_source(
    config, store, clock, tmp_path
):
    low = drawing(config, store, clock, tmp_path, 0.0)
    high = drawing(config, store, clock, tmp_path, 0.999)
    picks = []
    for seed in range(1, 21):
        url = f"/api/status/200:0.5,503:0.5?seed={seed}"
        status = low.get(url, status="*").status_int
        assert high.get(url, status="*").status_int == status
        expected = 200 if random.Random(seed).random() < 0.5 else 503
        assert status == expected
        picks.append(status)
    assert set(picks) == {200, 503}
    assert_error(low.get("/api/status/200?seed=x", status=400), 400, "VALIDATION_ERROR")


def test_a_simulated_answer_is_logged_at_info_without_a_traceback(anon, caplog):
    with caplog.at_level(logging.INFO):
        anon.get("/api/status/500", status=500)
    assert not [r for r in caplog.records if r.levelno > logging.INFO or r.exc_info]


def test_a_simulated_429_or_503_is_counted_as_a_request_only(make_app, tmp_path):
    app = make_app(anonymous=True, data_dir=str(tmp_path), metrics=("127.0.0.1",))
    inside = {"REMOTE_ADDR": "127.0.0.1"}
    before = figures(app)
    for code in (429, 503, 429):
        app.get(f"/api/status/{code}", extra_environ=inside, status=code)
    after = figures(app)
    for name in ("refapi_rate_limited_total", "refapi_storage_errors_total"):
        assert value(after, name, mount="") == value(before, name, mount="")
    labels = {"mount": "", "route": "/api/status/{code}", "method": "GET"}
    requests = "refapi_requests_total"
    assert (
        value(after, requests, **labels, status="429")
        == value(before, requests, **labels, status="429") + 2
    )
    app.get("/healthz", status=200)  # unaffected


# Delays


def test_a_delay_answers_after_the_injected_sleep(anon, clock):
    started = clock()
    response = anon.put("/api/delay/1.5")
    assert response.json == {"seconds": 1.5}
    assert clock() - started == 1.5
    assert anon.delete("/api/delay/0").json == {"seconds": 0}
    assert anon.get("/api/delay/2.5e-1").json == {"seconds": 0.25}
    policy = response.headers["RateLimit-Policy"]
    assert policy == f'"default";q=100;w=10, "delay";q={DELAYS_A_MINUTE};w=60'


@pytest.mark.parametrize(
    "seconds", ["5.001", "6", "abc", "-1", "1..2", "1e1", "nan", "inf", "0x1", ".5"]
)
def test_a_delay_over_the_most_or_not_a_number_is_refused_not_clamped(
    anon, clock, seconds
):
    started = clock()
    response = anon.get(f"/api/delay/{seconds}", expect_errors=True)
    assert_error(response, 400, "VALIDATION_ERROR")
    assert response.json["details"]["errors"] == [
        {"field": "seconds", "message": "must be a number of seconds from 0 to 5"}
    ]
    assert clock() == started


def test_the_most_is_configured(make_app, tmp_path):
    app = make_app(anonymous=True, data_dir=str(tmp_path), lab_max_delay=0.5)
    app.get("/api/delay/0.5", status=200)
    assert_error(app.get("/api/delay/0.6", status=400), 400, "VALIDATION_ERROR")


def test_a_delay_beyond_the_hosts_share_of_slow_work_is_refused_at_once(
    config, store, clock, tmp_path
):
    inner = []

    def sleep(seconds: float) -> None:
        # While the first delay holds the host's share (two slots, one for slow
        # work: slots.py): a second request comes.
        inner.append(app.get("/api/delay/1", status="*"))
        clock.advance(seconds)

    configured = replace(config, data_dir=str(tmp_path), workers=2, threads=1)
    app = webtest.TestApp(create_app(configured, store=store, clock=clock, sleep=sleep))
    first = app.get("/api/delay/3")
    assert first.json == {"seconds": 3}
    [second] = inner
    assert_error(second, 429, "RATE_LIMITED")
    assert second.headers["Retry-After"] == "3"  # when the first one ends
    assert second.json["details"] == {"retry_after": 3}
    assert second.headers["Cache-Control"] == "no-store"
    # The slot was let go: the next delay is served.
    inner.clear()
    app.get("/api/delay/1", status=200)


def test_delays_pass_a_bucket_of_their_own_per_address(anon):
    for _ in range(DELAYS_A_MINUTE):
        anon.get("/api/delay/0", status=200)
    refused = anon.get("/api/delay/0", status=429)
    assert refused.json["code"] == "RATE_LIMITED"
    assert '"delay";r=0' in refused.headers["RateLimit"]
    anon.get("/api/echo", status=200)  # the default bucket still has tokens


# The switch


@pytest.mark.parametrize("path", ["/api/echo", "/api/status/200", "/api/delay/0"])
@pytest.mark.parametrize("method", ["GET", "POST", "OPTIONS"])
def test_refapi_lab_0_turns_the_lab_off(make_app, tmp_path, path, method):
    app = make_app(anonymous=True, data_dir=str(tmp_path), lab=False)
    response = app.request(
        path, method=method, headers={"Authorization": "Bearer bogus"},
        expect_errors=True,
    )  # fmt: skip
    assert_error(response, 404, "NOT_FOUND")


def test_the_lab_is_in_the_document_and_the_catalogue(anon):
    paths = anon.get("/openapi.json").json["paths"]
    for path in ("/api/echo", "/api/status/{code}", "/api/delay/{seconds}"):
        assert {"get", "post", "put", "patch", "delete"} <= set(paths[path])
    names = anon.get("/api/download_csv.php").text
    assert "echo_request (method=PATCH)" in names
