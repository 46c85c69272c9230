"""POST /lab/explain: a request run through the service as the caller, and the
exchange annotated (docs/explain.md)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from jsonschema import Draft202012Validator

from refapi import schemas
from refapi.lab import EXPLAIN_PER_MINUTE, annotations, explain
from tests.conftest import ADMIN, skip_or_fail
from tests.helpers import assert_error, gunicorn_settings

JSON_TYPE = {"Content-Type": "application/json"}


def explained(app, method="GET", path="/v1/todos/1", headers=(), body=None, **kw):
    form = {"method": method, "path": path, "headers": [list(h) for h in headers]}
    if body is not None:
        form["body"] = body
    return app.post_json("/lab/explain", form, expect_errors=True, **kw)


def field(pairs, name):
    return next((value for key, value in pairs if key == name), None)


def annotation(answer, part, name):
    return next(
        a for a in answer.json["annotations"] if a["part"] == part and a["name"] == name
    )


def test_the_row_that_answered_is_found_by_its_template_in_either_form(anon):
    """The router's headers are named by the row the router matched, read from the
    inner request's route template: the prefix-less vendor form included."""
    vendor = [("Accept", "application/vnd.refapi+json;version=1")]
    for path, headers in (("/v1/items?limit=2", []), ("/items?limit=2", vendor)):
        answer = explained(anon, path=path, headers=headers)
        assert answer.json["response"]["status"] == 200, answer.json
        for name in ("ETag", "Link", "X-Next-Cursor"):
            assert annotation(answer, "response", name)["setBy"] == "router"


def test_a_conditional_get_is_explained_etag_then_304(anon):
    first = explained(anon)
    assert first.status_int == 200
    assert first.headers["Cache-Control"] == "no-store"
    response = first.json["response"]
    assert response["status"] == 200
    etag = field(response["headers"], "ETag")
    assert response["body"].startswith('{"userId":1,"id":1')
    assert annotation(first, "response", "ETag") == {
        "part": "response", "name": "ETag",
        "meaning": "An entity tag: a validator of this representation.",
        "spec": "RFC 9110 section 8.8.3", "setBy": "router",
        "docs": "docs/api.md#conditional-requests",
        "guide": "/guides/api.md#conditional-requests",
    }  # fmt: skip
    again = explained(anon, headers=[("If-None-Match", etag)])
    assert again.json["response"]["status"] == 304
    assert again.json["response"]["body"] == ""
    assert annotation(again, "status", "304") == {
        "part": "status", "name": "304",
        "meaning": "Not Modified: the client's copy is current.",
        "spec": "RFC 9110 section 15.4.5", "setBy": "router",
        "docs": "docs/api.md#conditional-requests",
        "guide": "/guides/api.md#conditional-requests",
    }  # fmt: skip
    assert annotation(again, "request", "If-None-Match")["spec"] == (
        "RFC 9110 section 13.1.2"
    )


def test_each_docs_section_is_a_link_to_the_served_guide_under_the_mount(anon):
    """What a reader follows: the section of the guide the service serves
    (docs/explain.md, "Annotations"), a path under the mount point."""
    answer = explained(anon, extra_environ={"SCRIPT_NAME": "/prod"})
    cited = [a for a in answer.json["annotations"] if "docs" in a]
    assert len(cited) >= 4
    for found in cited:
        page, _, section = found["guide"].partition("#")
        assert found["guide"] == "/prod/guides/" + found["docs"].removeprefix("docs/")
        served = anon.get(
            page.removeprefix("/prod"), extra_environ={"SCRIPT_NAME": "/prod"}
        )
        assert f'id="{section}"' in served.text, found
    assert all("guide" not in a for a in answer.json["annotations"] if "docs" not in a)


def test_the_answer_says_what_each_setter_is_once_in_stack_order(anon):
    answer = explained(anon, headers=[("Origin", "https://elsewhere.example")])
    named = {a["setBy"] for a in answer.json["annotations"] if "setBy" in a}
    setters = answer.json["setters"]
    assert [s["name"] for s in setters] == [
        n for n in annotations.SETTERS if n in named
    ]
    assert [s["name"] for s in setters] == [
        "server", "RequestId", "Cors", "RateLimit", "router", "handler"
    ]  # fmt: skip
    router = next(s for s in setters if s["name"] == "router")
    meaning, docs = annotations.SETTERS["router"]
    assert router == {
        "name": "router", "meaning": meaning, "docs": docs,
        "guide": "/guides/" + docs.removeprefix("docs/"),
    }  # fmt: skip
    # The answer's document says so (schemas/explain.json, in /openapi.json).
    Draft202012Validator(schemas.document("explain")).validate(answer.json)


def test_a_lab_path_is_explained_through_the_lab_s_own_stack(anon):
    """The explainer runs the request through the whole front door: a path of
    the lab meets the lab's layers (no credential read, its bucket, its CORS)."""
    sent = [("Origin", "https://elsewhere.example"), ("Authorization", "Bearer x")]
    answer = explained(anon, path="/lab/anything?x=1", headers=sent)
    response = answer.json["response"]
    assert response["status"] == 200  # the token is shown, never checked
    assert json.loads(response["body"])["credentials"] == ["bearer"]
    assert field(response["headers"], "Access-Control-Expose-Headers") == "*"
    assert field(response["headers"], "RateLimit").startswith('"lab";r=')
    for name in ("Access-Control-Allow-Origin", "Access-Control-Expose-Headers"):
        assert annotation(answer, "response", name)["setBy"] == "Cors"
    assert annotation(answer, "response", "RateLimit")["setBy"] == "RateLimit"
    assert [s["name"] for s in answer.json["setters"]] == [
        "server", "RequestId", "Cors", "RateLimit", "router", "handler"
    ]  # fmt: skip


def test_the_lab_s_own_headers_cite_the_lab_s_guide(anon):
    """A cookie the lab sets is the lab's (docs/lab.md, "Cookies"), not the
    session's; its redirect's Location, the lab's "Redirects"."""
    answer = explained(anon, path="/lab/cookies/set?flavour=oat")
    assert answer.json["response"]["status"] == 302
    cookie = annotation(answer, "response", "Set-Cookie")
    assert cookie["docs"] == "docs/lab.md#cookies"
    assert annotation(answer, "response", "Location")["docs"] == "docs/lab.md#redirects"
    challenged = explained(anon, path="/lab/basic-auth/a/b")
    challenge = annotation(challenged, "response", "WWW-Authenticate")
    assert challenge["docs"] == "docs/lab.md#authentication"
    # The core's own stay the core's.
    core = explained(anon, path="/v1/todos/1")
    assert "lab.md" not in str(core.json["annotations"])


def test_an_old_lab_path_is_explained_as_its_308(anon):
    answer = explained(anon, path="/api/echo?x=1")
    response = answer.json["response"]
    assert response["status"] == 308
    assert field(response["headers"], "Location") == "/lab/anything?x=1"
    assert field(response["headers"], "Deprecation") == "@1795910400"
    assert field(response["headers"], "Sunset") == "Sun, 31 May 2027 00:00:00 GMT"
    for name in ("Location", "Deprecation", "Sunset"):
        assert annotation(answer, "response", name)["setBy"] == "handler"


def test_the_server_adds_date_server_and_connection_and_says_so(anon):
    answer = explained(anon)
    names = [name for name, _ in answer.json["response"]["headers"]]
    assert names[:3] == ["Server", "Date", "Connection"]
    for name in names[:3]:
        assert annotation(answer, "response", name)["setBy"] == "server"
    assert annotation(answer, "response", "X-Request-Id")["setBy"] == "RequestId"
    assert annotation(answer, "response", "RateLimit")["docs"] == (
        "docs/rate-limits.md#the-ratelimit-fields"
    )


def test_set_cookie_values_are_redacted_and_the_body_is_shown(anon):
    body = json.dumps(ADMIN)
    answer = explained(
        anon, "POST", "/api/login", [("Content-Type", "application/json")], body
    )
    request, response = answer.json["request"], answer.json["response"]
    assert request["body"] == body
    assert field(request["headers"], "Content-Length") == str(len(body))
    assert response["status"] == 200
    assert field(response["headers"], "Set-Cookie") == "[redacted]"
    assert (
        annotation(answer, "response", "Set-Cookie")["spec"] == "RFC 6265 section 4.1"
    )


@pytest.mark.parametrize(
    "name",
    ["Host", "cookie", "X-Forwarded-For", "X-Forwarded-Proto", "Forwarded", "Via",
     "Content-Length", "Transfer-Encoding"],
)  # fmt: skip
def test_a_field_the_form_may_not_set_is_400_naming_it(anon, name):
    answer = explained(anon, headers=[("Accept", "*/*"), (name, "x")])
    assert_error(answer, 400, "VALIDATION_ERROR")
    assert [e["field"] for e in answer.json["details"]["errors"]] == ["/headers/1/0"]


@pytest.mark.parametrize(
    "path",
    ["/lab/explain", "/lab/%65xplain?x=1", "/lab/delay/1", "/lab/delay",
     "/lab/delay/", "/api/explain", "/api/%65xplain?x=1", "/api/delay/1",
     "/api/delay", "/lab/drip", "/lab/drip?duration=0&delay=0", "/lab/%64rip",
     "/lab/sse", "/lab/sse?count=1&delay=0"],
)  # fmt: skip
def test_the_explainer_and_the_lab_s_slow_work_cannot_be_explained(anon, path):
    answer = explained(anon, path=path)
    assert_error(answer, 400, "VALIDATION_ERROR")
    assert answer.json["details"]["errors"][0]["field"] == "/path"


@pytest.mark.parametrize(
    ("form", "pointer"),
    [
        ({"path": "/v1/items"}, "/method"),
        ({"method": "get", "path": "/v1/items"}, "/method"),
        ({"method": "GET", "path": "http://example.com/"}, "/path"),
        ({"method": "GET", "path": "//example.com/"}, "/path"),
        ({"method": "GET", "path": "/a b"}, "/path"),
        ({"method": "GET", "path": "/", "headers": [["A_B", "1"]]}, "/headers/0/0"),
        ({"method": "GET", "path": "/", "headers": [["A", "1\r\nB: 2"]]},
         "/headers/0/1"),
        ({"method": "GET", "path": "/", "headers": [["A"]]}, "/headers/0"),
        ({"method": "GET", "path": "/", "body": "x" * 1537}, "/body"),
        ({"method": "GET", "path": "/", "headers": [["A", "1"]] * 17}, "/headers"),
        ({"method": "GET", "path": "/", "headers": [["A", "é" * 129]]},
         "/headers/0/1"),
    ],
    ids=["no-method", "lower-case", "absolute", "two-slashes", "space", "underscore",
         "line-break", "half-pair", "long-body", "17-fields", "long-value"],
)  # fmt: skip
def test_a_malformed_form_is_400_validation_error(anon, form, pointer):
    answer = anon.post_json("/lab/explain", form, expect_errors=True)
    assert_error(answer, 400, "VALIDATION_ERROR")
    assert pointer in [e["field"] for e in answer.json["details"]["errors"]]


def escaped(value) -> str:
    """``value`` as JSON, every character of every string an escape (``\\u0061``;
    two for an astral one): the longest way to write it."""
    if isinstance(value, list):
        return "[" + ", ".join(escaped(item) for item in value) + "]"
    if isinstance(value, dict):
        members = (f"{escaped(k)}: {escaped(v)}" for k, v in value.items())
        return "{" + ", ".join(members) + "}"
    units = value.encode("utf-16-be").hex()
    return (
        '"' + "".join(f"\\u{units[i : i + 4]}" for i in range(0, len(units), 4)) + '"'
    )


def test_the_largest_form_fits_in_64_kib_and_is_taken(anon):
    """docs/explain.md, "Limits": every form the schema takes, however written."""
    bounds = schemas.document("explain-form")["properties"]
    pair = bounds["headers"]["items"]
    name, value = pair["prefixItems"][0]["maxLength"], pair["items"]["maxLength"]
    largest = escaped({
        "method": "M" * bounds["method"]["maxLength"],
        "path": "/" + "p" * (bounds["path"]["maxLength"] - 1),
        "headers": [["N" * name, "é" * value]] * bounds["headers"]["maxItems"],
        "body": "🦄" * bounds["body"]["maxLength"],
    }).encode()  # fmt: skip
    assert len(largest) <= 64 * 1024
    taken = anon.post("/lab/explain", largest, headers=JSON_TYPE)
    assert taken.json["response"]["status"] == 414  # its request line is too long


def test_a_form_over_64_kib_is_413_before_it_is_read_or_parsed(anon):
    """Refused from its Content-Length (tests/web/test_body_limits.py: unread)."""
    # Not JSON at all: parsed, it would be 400 INVALID_JSON.
    over = anon.post(
        "/lab/explain", b"[" * (64 * 1024 + 1), headers=JSON_TYPE, expect_errors=True
    )
    assert_error(over, 413, "PAYLOAD_TOO_LARGE")
    assert over.json["details"] == {"limit": 64 * 1024}


def test_a_form_nested_deeper_than_a_form_goes_is_400_before_it_is_decoded(anon):
    """A form nests 3 deep at most (an object, its headers, a pair): a fourth
    level is refused by its brackets, before the broken rest is decoded."""
    broken = b'{"method": "GET", "path": "/", "headers": [[["A", not JSON'
    refused = anon.post("/lab/explain", broken, headers=JSON_TYPE, expect_errors=True)
    assert_error(refused, 400, "INVALID_JSON")
    assert refused.json["details"] == {"maxDepth": 3}
    deep = {"method": "GET", "path": "/", "headers": [[["A", "1"]]]}
    nested = anon.post_json("/lab/explain", deep, expect_errors=True)
    assert nested.json["details"] == {"maxDepth": 3}
    assert explained(anon, headers=[("Accept", "*/*")]).status_int == 200


def test_it_grants_nothing_the_caller_lacks(app):
    # The caller's own Bearer token is not passed on: the form names credentials.
    answer = explained(app, path="/api/users")
    assert answer.json["response"]["status"] == 401
    assert annotation(answer, "status", "401") == {
        "part": "status", "name": "401",
        "meaning": "Unauthorized: valid credentials are needed.",
        "spec": "RFC 9110 section 15.5.2", "setBy": "router",
        "docs": "docs/authentication.md#credentials",
        "guide": "/guides/authentication.md#credentials",
    }  # fmt: skip
    token = app.extra_environ["HTTP_AUTHORIZATION"]
    with_token = explained(app, path="/api/users", headers=[("Authorization", token)])
    assert with_token.json["response"]["status"] == 200


def test_the_session_cookie_counts_only_after_the_csrf_and_origin_checks(anon):
    login = anon.post_json("/api/login", ADMIN)
    csrf = login.json["csrfToken"]
    without = explained(anon, path="/api/session")
    assert without.json["response"]["status"] == 401
    assert field(without.json["request"]["headers"], "Cookie") is None
    foreign = {"X-CSRF-Token": csrf, "Origin": "https://evil.example"}
    from_elsewhere = anon.post_json(
        "/lab/explain", {"method": "GET", "path": "/api/session"}, headers=foreign
    )
    assert from_elsewhere.json["response"]["status"] == 401
    own = anon.post_json(
        "/lab/explain", {"method": "GET", "path": "/api/session"},
        headers={"X-CSRF-Token": csrf},
    )  # fmt: skip
    assert own.json["response"]["status"] == 200
    assert field(own.json["request"]["headers"], "Cookie") == "[redacted]"


def test_the_inner_request_keeps_the_callers_host_scheme_and_mount(anon):
    environ = {"SCRIPT_NAME": "/prod", "HTTP_HOST": "api.example", "wsgi.url_scheme":
               "https"}  # fmt: skip
    answer = explained(anon, path="/v1/items?limit=1", extra_environ=environ)
    assert field(answer.json["request"]["headers"], "Host") == "api.example"
    link = field(answer.json["response"]["headers"], "Link")
    assert link.startswith("</prod/v1/items?cursor=")


def test_the_inner_request_passes_the_callers_buckets_the_outer_one_the_lab_s(
    make_app,
):
    app = make_app(anonymous=True, rate_limit_capacity=2)
    first = explained(app)
    # The outer request passed the lab's buckets (its own and "explain"), the
    # inner one the core's default bucket, which only it takes from.
    assert first.headers["RateLimit-Policy"] == (
        f'"lab";q=1000;w=60, "explain";q={EXPLAIN_PER_MINUTE};w=60'
    )
    assert first.headers["RateLimit"] == '"lab";r=999;t=0, "explain";r=29;t=0'
    assert field(first.json["response"]["headers"], "RateLimit") == (
        '"default";r=1;t=0'
    )
    assert explained(app).json["response"]["status"] == 200  # its last token
    second = explained(app)
    assert second.status_int == 200
    assert second.headers["RateLimit"] == '"lab";r=997;t=0, "explain";r=27;t=0'
    response = second.json["response"]
    assert response["status"] == 429
    assert field(response["headers"], "Retry-After") == "1"
    assert annotation(second, "status", "429")["setBy"] == "RateLimit"
    assert annotation(second, "status", "429")["docs"] == (
        "docs/rate-limits.md#429-too-many-requests"
    )
    assert annotation(second, "response", "Retry-After")["setBy"] == "RateLimit"


def test_the_explain_bucket_refuses_the_31st_explanation_a_minute(make_app):
    app = make_app(anonymous=True, rate_limit_capacity=1000)
    assert EXPLAIN_PER_MINUTE == 30
    for _ in range(30):
        assert explained(app, path="/healthz").status_int == 200
    refused = explained(app, path="/healthz")
    assert_error(refused, 429, "RATE_LIMITED")
    assert '"explain";r=0' in refused.headers["RateLimit"]
    # A bucket of the lab's, per address: another address explains on.
    other = {"REMOTE_ADDR": "192.0.2.9"}
    assert explained(app, path="/healthz", extra_environ=other).status_int == 200


def test_gunicorns_limits_apply_as_gunicorn_answers(anon):
    long = explained(anon, path="/v1/items?x=" + "a" * 4080)  # 4105 bytes a line
    assert long.json["response"]["status"] == 414
    assert annotation(long, "status", "414")["setBy"] == "server"
    # The form's fields are within gunicorn's field limits, the caller's Host
    # need not be: a server other than gunicorn may pass a longer one.
    long_host = explained(anon, extra_environ={"HTTP_HOST": "h" * 8190})
    response = long_host.json["response"]
    assert response["status"] == 431
    assert field(response["headers"], "Connection") == "close"
    assert '"code":"REQUEST_HEADER_FIELDS_TOO_LARGE"' in response["body"]


def test_an_expectation_a_server_cannot_meet_is_417_as_both_servers_answer(anon):
    refused = explained(anon, "POST", "/lab/anything", [["Expect", "200-ok"]], "{}")
    response = refused.json["response"]
    assert response["status"] == 417
    assert '"code":"EXPECTATION_FAILED"' in response["body"]
    assert annotation(refused, "status", "417")["setBy"] == "server"
    passed = explained(
        anon, "POST", "/lab/anything", [["Expect", "100-Continue"]], "{}"
    )
    assert passed.json["response"]["status"] == 200


def test_the_forms_fields_are_within_gunicorns_field_limits():
    """So the explainer answers 431 only for what the caller's own request
    brings (its Host, its session cookie), never for the form's fields."""
    headers = schemas.document("explain-form")["properties"]["headers"]
    name = headers["items"]["prefixItems"][0]["maxLength"]
    value = headers["items"]["items"]["maxLength"]
    # Host, Content-Length and Cookie join the form's.
    assert headers["maxItems"] + 3 <= explain.LIMIT_REQUEST_FIELDS
    assert len(f"{'N' * name}: {'é' * value}\r\n".encode("latin-1")) <= (
        explain.LIMIT_REQUEST_FIELD_SIZE
    )


def test_the_limits_are_gunicorns_as_configured():
    configured = gunicorn_settings()
    assert (
        configured["limit_request_line"],
        configured["limit_request_fields"],
        configured["limit_request_field_size"],
    ) == (
        explain.LIMIT_REQUEST_LINE,
        explain.LIMIT_REQUEST_FIELDS,
        explain.LIMIT_REQUEST_FIELD_SIZE,
    )


@pytest.fixture
def httplint():
    """httplint, which the ``notes`` extra brings (``make tools`` installs it): a
    checkout without it skips the tests of its notes, saying so (docs/explain.md,
    "Notes"); CI, which has it, fails instead."""
    try:
        import httplint
    except ImportError:
        skip_or_fail("httplint missing: install the notes extra (make tools)")
    return httplint


def test_a_long_body_is_cut_at_16_kib_and_the_answer_says_so(anon, httplint):
    whole = len(anon.get("/docs/swagger-ui-bundle.js").body)  # 1.7 MB
    answer = explained(anon, path="/docs/swagger-ui-bundle.js")
    response = answer.json["response"]
    assert response["status"] == 200
    assert response["bodyTruncated"] is True
    assert response["bodyBytes"] == whole
    assert 16 * 1024 - 3 <= len(response["body"].encode()) <= 16 * 1024
    said = [note for note in answer.json["notes"] if note["subject"] == "body"]
    assert said == [
        {
            "category": "General", "level": "info", "subject": "body",
            "summary": f"The body is cut at 16,384 of its {whole:,} bytes: these "
            "notes read only what is shown, so its Content-Length is not checked.",
        }
    ]  # fmt: skip
    short = explained(anon).json["response"]  # a body under the cut is whole
    assert short["bodyTruncated"] is False
    assert short["bodyBytes"] == len(short["body"].encode())


def test_the_notes_lint_only_the_body_shown(anon, httplint):
    """httplint reads what is shown: fed the whole body it would find the
    Content-Length correct, fed the part shown as if whole it would find it
    wrong; the part shown, told it is not whole, says neither."""
    notes = explained(anon, path="/docs/swagger-ui-bundle.js").json["notes"]
    assert not [note for note in notes if note["subject"] == "field-content-length"]
    assert any(note["category"] == "Caching" for note in notes)
    # A body under the cut is linted whole, its Content-Length with it.
    whole = explained(anon, path="/docs/initializer.js").json["notes"]
    assert "The Content-Length header is correct." in [n["summary"] for n in whole]


def test_httplints_notes_are_text_about_the_response(anon, httplint):
    notes = explained(anon).json["notes"]
    assert {"category", "level", "subject", "summary"} == set(notes[0])
    assert any(note["category"] == "Caching" for note in notes)


def test_without_httplint_one_note_says_how_to_add_it(anon, monkeypatch):
    # docs/explain.md, "Notes": httplint is the ``notes`` extra, not a dependency.
    monkeypatch.setitem(sys.modules, "httplint", None)  # import fails, as if absent
    answer = explained(anon)
    assert answer.json["notes"] == [annotations.NO_HTTPLINT]
    assert answer.json["annotations"]  # the rest of the explanation is there


def test_with_the_lab_off_the_explainer_is_404(make_app):
    app = make_app(anonymous=True, lab=False)
    assert_error(explained(app), 404, "NOT_FOUND")


def test_the_rest_of_the_service_never_loads_httplint(config, tmp_path):
    # docs/explain.md, "Notes": with the lab on, the rest costs what it did.
    script = (
        "import sys, webtest; from refapi import create_app; "
        "from refapi.config import Config; "
        f"app = webtest.TestApp(create_app(Config(database_url={config.database_url!r},"
        " secret_key=b'x'))); app.get('/v1/todos/1'); "
        "print('httplint' in sys.modules)"
    )
    ran = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path
    )
    assert ran.stdout.splitlines()[-1] == "False", ran.stderr


def test_the_document_says_what_a_field_name_may_be(anon):
    """The form's schema names the field-name rule, so a request the OpenAPI
    document calls valid is never refused for its names (schemathesis found one)."""
    pair = schemas.document("explain-form")["properties"]["headers"]["items"]
    assert pair["prefixItems"][0]["pattern"] == "^[!#$%&'*+.^`|~0-9A-Za-z-]+$"
    assert explained(anon, headers=[("X-Id.1~", "a value")]).status_int == 200
    refused = explained(anon, headers=[("X_Id", "v"), ("Ä", "v"), ("", "v")])
    rule = "must be a field name of up to 64 characters, without an underscore"
    assert refused.json["details"]["errors"] == [
        {"field": f"/headers/{n}/0", "message": rule} for n in range(3)
    ]


def test_the_request_explained_passes_through_a_hosts_wrapping_of_the_door(anon):
    # app.py: the explainer runs the request through ``wsgi_app`` as it is when the
    # request comes, so a host's wrapper sees it as a request from the network.
    app = anon.app
    seen: list[str] = []
    inner = app.wsgi_app

    def wrapper(environ, start_response):
        seen.append(environ["PATH_INFO"])
        return inner(environ, start_response)

    app.wsgi_app = wrapper
    assert explained(anon).json["response"]["status"] == 200
    assert seen == ["/lab/explain", "/v1/todos/1"]


def test_the_request_as_the_form_wrote_it_gets_the_echo_s_notes(anon):
    """requestNotes judge the form's fields and body, not what the explainer adds
    (Host, the framing), and Accept against the type the answer came in."""
    wrong = explained(
        anon, "POST", "/lab/anything", headers=[["If-Match", "v1"]], body="{}"
    )
    said = [(note["subject"], note["level"]) for note in wrong.json["requestNotes"]]
    assert said == [("Content-Type", "warning"), ("If-Match", "bad")]
    right = explained(
        anon, "POST", "/lab/anything", body="{}",
        headers=[["If-Match", '"v1"'], ["Content-Type", "application/json"]],
    )  # fmt: skip
    assert right.json["requestNotes"] == []
    # A GET with no body: the Content-Length the explainer writes earns nothing.
    assert explained(anon).json["requestNotes"] == []
    csv = explained(anon, path="/v1/articles", headers=[["Accept", "text/csv"]])
    assert csv.json["requestNotes"] == []  # answered in the type it allows
    html = explained(anon, path="/v1/articles", headers=[["Accept", "text/html"]])
    assert [note["subject"] for note in html.json["requestNotes"]] == ["Accept"]
