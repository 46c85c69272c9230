"""The lab's cookies and response headers (lab/cookies.py, lab/response_headers.py;
docs/lab.md, "Cookies" and "Response headers"), in process: every cookie kept to
the lab's path, the service's own never shown nor shadowed, and no header field
that frames the message or moves a browser."""

from __future__ import annotations

import json

import pytest
import webtest

from tests.helpers import assert_error


@pytest.fixture
def anon(make_app) -> webtest.TestApp:
    return make_app(anonymous=True)


def set_cookies(answer: webtest.TestResponse) -> list[str]:
    return [value for name, value in answer.headerlist if name == "Set-Cookie"]


def test_set_answers_302_to_the_list_with_each_cookie_on_the_lab_s_path(anon):
    answer = anon.get("/lab/cookies/set?flavour=oat&size=2", status=302)
    assert answer.headers["Location"] == "/lab/cookies"
    assert set_cookies(answer) == ["flavour=oat; Path=/lab/", "size=2; Path=/lab/"]
    assert answer.headers["Cache-Control"] == "no-store"
    assert "Domain" not in answer.text + str(answer.headerlist)


def test_cookies_are_kept_to_the_mount_point_s_lab(anon):
    answer = anon.get(
        "/lab/cookies/set?flavour=oat", extra_environ={"SCRIPT_NAME": "/v"}, status=302
    )
    assert answer.headers["Location"] == "/v/lab/cookies"
    assert set_cookies(answer) == ["flavour=oat; Path=/v/lab/"]


def test_the_list_shows_what_was_sent_but_the_service_s_own(anon):
    sent = "flavour=oat; refapi_session=s3cret; Refapi_other=x; __Host-a=b"
    answer = anon.get("/lab/cookies", headers={"Cookie": sent})
    assert answer.json == {"cookies": {"flavour": "oat", "__Host-a": "b"}}
    assert "s3cret" not in answer.text
    assert answer.headers["Cache-Control"] == "no-store"
    assert anon.get("/lab/cookies").json == {"cookies": {}}


def test_a_browser_keeps_the_cookie_and_sends_it_back_to_the_lab_only(anon):
    anon.get("/lab/cookies/set?flavour=oat", status=302).follow()
    assert anon.get("/lab/cookies").json == {"cookies": {"flavour": "oat"}}
    # WebTest's jar honours Path: the core's paths never see the lab's cookie.
    assert [(cookie.name, cookie.path) for cookie in anon.cookiejar] == [
        ("flavour", "/lab/")
    ]
    anon.get("/lab/cookies/delete?flavour", status=302)
    assert anon.get("/lab/cookies").json == {"cookies": {}}


def test_delete_expires_each_cookie_named(anon):
    answer = anon.get("/lab/cookies/delete?a&b=ignored", status=302)
    assert set_cookies(answer) == [
        "a=; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; Path=/lab/",
        "b=; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; Path=/lab/",
    ]


def test_attributes_in_the_query_apply_to_every_cookie(anon):
    answer = anon.get(
        "/lab/cookies/set?a=1&b=2&Max-Age=60&SameSite=Strict&HttpOnly&Path=/get",
        status=302,
    )
    assert set_cookies(answer) == [
        "a=1; Max-Age=60; SameSite=Strict; HttpOnly; Path=/lab/get",
        "b=2; Max-Age=60; SameSite=Strict; HttpOnly; Path=/lab/get",
    ]
    none = anon.get("/lab/cookies/set?a=1&SameSite=None&Secure=true", status=302)
    assert set_cookies(none) == ["a=1; SameSite=None; Secure; Path=/lab/"]
    # Written otherwise, a name is a cookie's: httpbin's clients set "path" so.
    lower = anon.get("/lab/cookies/set?path=x&HttpOnly=false", status=302)
    assert set_cookies(lower) == ["path=x; Path=/lab/"]


def test_over_https_a_cookie_is_secure_unless_asked_otherwise(anon):
    https = {"wsgi.url_scheme": "https"}
    answer = anon.get("/lab/cookies/set?a=1", extra_environ=https, status=302)
    assert set_cookies(answer) == ["a=1; Secure; Path=/lab/"]
    plain = anon.get("/lab/cookies/set?a=1&Secure=false", extra_environ=https)
    assert set_cookies(plain) == ["a=1; Path=/lab/"]


def test_a_quoted_value_is_set_as_sent(anon):
    answer = anon.get('/lab/cookies/set?foo="bar:baz"', status=302)
    assert set_cookies(answer) == ['foo="bar:baz"; Path=/lab/']


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("refapi_session=x", "refapi_session"),
        ("REFAPI_SESSION=x", "REFAPI_SESSION"),
        ("__Host-id=x", "__Host-id"),
        ("__secure-id=x", "__secure-id"),
        ("a=1&Path=lab", "Path"),
        ("a=1&Path=/a b", "Path"),
        ("a=1&Max-Age=86401", "Max-Age"),
        ("a=1&Max-Age=-1", "Max-Age"),
        ("a=1&Max-Age=060", "Max-Age"),
        ("a=1&Max-Age=soon", "Max-Age"),
        ("a=1&SameSite=strict", "SameSite"),
        ("a=1&Secure=maybe", "Secure"),
        ("a=two words", "a"),
        ("a=semi;colon", "a"),
        ("a=" + "x" * 193, "a"),
        ("x" * 65 + "=1", "x" * 65),
        ("&".join(f"c{i}=1" for i in range(11)), "cookies"),
        ("&".join(f"c{i}=1" for i in range(9)) + "&Max-Age=1&HttpOnly", "cookies"),
        ("na%20me=1", "na me"),
        ("=1", ""),
    ],
)
def test_a_cookie_against_the_rules_is_400_on_its_field(anon, query, field):
    answer = anon.get(f"/lab/cookies/set?{query}", status=400)
    assert_error(answer, 400, "VALIDATION_ERROR")
    assert answer.json["details"]["errors"][0]["field"] == field
    assert "Set-Cookie" not in answer.headers


def test_delete_is_held_to_the_names_rules_too(anon):
    answer = anon.get("/lab/cookies/delete?refapi_session", status=400)
    assert answer.json["details"]["errors"][0]["field"] == "refapi_session"
    many = "&".join(f"c{i}" for i in range(11))
    anon.get(f"/lab/cookies/delete?{many}", status=400)


def test_response_headers_sends_each_field_and_shows_them(anon):
    answer = anon.get("/lab/response-headers?X-Lesson=one&X-Lesson=two&Link=</a>")
    assert answer.headers.getall("X-Lesson") == ["one", "two"]
    assert answer.headers["Link"] == "</a>"
    assert answer.json == {
        "Content-Type": "application/json",
        "X-Lesson": ["one", "two"],
        "Link": "</a>",
    }
    posted = anon.post("/lab/response-headers?Location=/lab/get", "any body")
    assert posted.headers["Location"] == "/lab/get"


@pytest.mark.parametrize(
    ("asked", "served"),
    [
        ("text/plain; charset=utf-8", "text/plain; charset=utf-8"),
        ("application/octet-stream", "application/octet-stream"),
        ("application/json", "application/json"),
    ],
)
def test_a_content_type_of_the_three_is_served(anon, asked, served):
    answer = anon.get("/lab/response-headers", {"Content-Type": asked})
    assert answer.headers.getall("Content-Type") == [served]
    assert json.loads(answer.body)["Content-Type"] == served


@pytest.mark.parametrize(
    "asked",
    ["text/html", "text/html; charset=utf-8", "image/svg+xml", "text/plain",
     "text/plain; charset=utf-7", "application/json; charset=utf-8; x=1",
     "TEXT/PLAIN; charset=utf-8", "text/plain;charset=utf-8",
     "application/xhtml+xml", "text/xml"],
)  # fmt: skip
def test_markup_or_another_content_type_is_400(anon, asked):
    answer = anon.get(
        "/lab/response-headers",
        {"Content-Type": asked, "X": "<script>alert(1)</script>"},
        status=400,
    )
    assert_error(answer, 400, "VALIDATION_ERROR")
    assert answer.json["details"]["errors"][0]["field"] == "Content-Type"
    assert answer.content_type == "application/json"


@pytest.mark.parametrize(
    "name",
    ["Connection", "Transfer-Encoding", "Content-Length", "Content-Encoding",
     "Keep-Alive", "Upgrade", "Trailer", "TE", "Refresh", "Clear-Site-Data",
     "Strict-Transport-Security", "Content-Security-Policy",
     "Access-Control-Allow-Origin", "access-control-allow-credentials",
     "X-Request-Id", "RateLimit", "RateLimit-Policy", "X-Content-Type-Options",
     "Date", "Server", "ETag", "etag", "content-type", "set-cookie",
     # What a browser keeps for the origin past the answer.
     "NEL", "Report-To", "Reporting-Endpoints", "Alt-Svc", "Accept-CH",
     "Critical-CH", "Service-Worker-Allowed", "Origin-Trial", "Speculation-Rules",
     "Set-Login", "nel"],
)  # fmt: skip
def test_fields_that_frame_the_message_or_move_a_browser_are_400(anon, name):
    answer = anon.get("/lab/response-headers", {name: "0"}, status=400)
    assert answer.json["details"]["errors"][0]["field"] == name


@pytest.mark.parametrize(
    "query",
    ["X-A=one%0d%0aSet-Cookie:%20refapi_session=x", "X-A=%00", "X-A=caf%C3%A9",
     "X%20A=1", "X:A=1"],
)  # fmt: skip
def test_nothing_can_split_or_smuggle_a_header(anon, query):
    answer = anon.get(f"/lab/response-headers?{query}", status=400)
    assert_error(answer, 400, "VALIDATION_ERROR")
    assert "Set-Cookie" not in answer.headers


def test_a_set_cookie_follows_the_cookie_rules(anon):
    expired = "foo=deleted; expires=Thu, 01-Jan-1970 00:00:01 GMT"
    answer = anon.get("/lab/response-headers", {"Set-Cookie": expired})
    assert set_cookies(answer) == [
        "foo=deleted; Expires=Thu, 01-Jan-1970 00:00:01 GMT; Path=/lab/"
    ]
    # Kept longer than a day by its Expires: a day, by Max-Age, read first.
    later = "a=1; Secure; expires=Fri, 01 Jan 2100 00:00:00 GMT; path=/get"
    kept = anon.get("/lab/response-headers", {"Set-Cookie": later})
    assert set_cookies(kept) == [
        "a=1; Secure; Expires=Fri, 01 Jan 2100 00:00:00 GMT; Path=/lab/get; "
        "Max-Age=86400"
    ]
    for refused in ("refapi_session=x", "a=1; Domain=example.com", "a=1; Path=x",
                    "a=1; Max-Age=99999", "no-equals", "a=1; Partitioned",
                    "a=1;\tSecure"):  # fmt: skip
        bad = anon.get("/lab/response-headers", {"Set-Cookie": refused}, status=400)
        assert bad.json["details"]["errors"][0]["field"] == "Set-Cookie"


def test_response_headers_sets_at_most_ten_cookies(anon):
    # As /lab/cookies/set: 60 were all set.
    ten = "&".join(f"Set-Cookie=c{n}%3Dv" for n in range(10))
    assert len(set_cookies(anon.get(f"/lab/response-headers?{ten}"))) == 10
    bad = anon.get(f"/lab/response-headers?{ten}&Set-Cookie=c10%3Dv", status=400)
    assert bad.json["details"]["errors"][0] == {
        "field": "Set-Cookie",
        "message": "must be at most 10 cookies a request",
    }
