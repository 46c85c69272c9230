"""httpbin's redirects in the lab (lab/redirects.py; docs/lab.md, "Redirects"):
the chains of /lab/redirect/{n}, /lab/relative-redirect/{n} and
/lab/absolute-redirect/{n}, and /lab/redirect-to with the rules that keep it
from being an open redirect, in process."""

from __future__ import annotations

import urllib.parse

import pytest
import webtest

from refapi.lab.redirects import MAX_REDIRECTS, URL_MAX
from tests.helpers import assert_error


@pytest.fixture
def anon(make_app) -> webtest.TestApp:
    return make_app(anonymous=True, lab_redirect_hosts=("Example.org",))


def follow(app: webtest.TestApp, path: str, prefix: str = "") -> list[str]:
    """Every Location of the chain from ``path``, until an answer that is none."""
    seen = []
    environ = {"SCRIPT_NAME": prefix}
    answer = app.get(path, extra_environ=environ)
    while answer.status_int == 302:
        location = answer.headers["Location"]
        seen.append(location)
        # A URL of this host, or a path, under the mount point.
        path = urllib.parse.urlsplit(location).path.removeprefix(prefix)
        answer = app.get(path, extra_environ=environ)
    assert answer.status_int == 200 and "args" in answer.json  # /lab/get
    return seen


@pytest.mark.parametrize("prefix", ["", "/prod"])
def test_a_chain_of_n_ends_at_get_each_location_a_path(anon, prefix):
    assert follow(anon, "/lab/redirect/3", prefix) == [
        f"{prefix}/lab/relative-redirect/2",
        f"{prefix}/lab/relative-redirect/1",
        f"{prefix}/lab/get",
    ]


def test_an_absolute_chain_names_the_request_s_own_scheme_and_host(anon):
    assert follow(anon, "/lab/redirect/2?absolute=true", "/prod") == [
        "http://localhost/prod/lab/absolute-redirect/1",
        "http://localhost/prod/lab/get",
    ]
    answer = anon.get(
        "/lab/absolute-redirect/1",
        extra_environ={"wsgi.url_scheme": "https", "HTTP_HOST": "lab.test:8443"},
        status=302,
    )  # fmt: skip
    assert answer.headers["Location"] == "https://lab.test:8443/lab/get"
    assert answer.body == b""
    # An underscore, as a Compose service's name has: Werkzeug's get_host read
    # it as no host, and the Location was http:///lab/get.
    answer = anon.get(
        "/lab/absolute-redirect/1", extra_environ={"HTTP_HOST": "my_lab:8000"}
    )
    assert answer.headers["Location"] == "http://my_lab:8000/lab/get"
    answer = anon.get(
        "/lab/redirect-to?url=http://my_lab:8000/lab/get",
        extra_environ={"HTTP_HOST": "my_lab:8000"},
        status=302,
    )  # its own host, which it refused as a host not listed
    assert answer.headers["Location"] == "http://my_lab:8000/lab/get"


@pytest.mark.parametrize("n", ["0", str(MAX_REDIRECTS + 1), "x", "-1"])
def test_a_chain_outside_its_bounds_is_refused_or_absent(anon, n):
    answer = anon.get(f"/lab/redirect/{n}", expect_errors=True)
    if n.isdigit():
        assert_error(answer, 400, "VALIDATION_ERROR")
        # The bounds its document gives, not an id's (the router's check).
        assert answer.json["details"]["errors"] == [
            {"field": "n", "message": f"must be an integer from 1 to {MAX_REDIRECTS}"}
        ]
    else:
        assert answer.status_int in (400, 404)


def redirect_to(app, url: str, method: str = "GET", **query) -> webtest.TestResponse:
    query = urllib.parse.urlencode({"url": url, **query})
    return app.request(
        f"/lab/redirect-to?{query}", method=method, expect_errors=True,
        environ={"SCRIPT_NAME": "/prod"},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("url", "location"),
    [
        ("post", "/prod/lab/post"),  # relative: against this URL
        ("../v1/articles?limit=1", "/prod/v1/articles?limit=1"),
        ("/get?x=1", "/prod/lab/get?x=1"),  # a path: from the lab's root
        ("http://localhost/lab/get", "http://localhost/lab/get"),  # its own host
        ("https://LOCALHOST:9/x", "https://LOCALHOST:9/x"),  # any port, any case
        ("https://example.org/x?y=1", "https://example.org/x?y=1"),  # listed
        ("get?a[]=1", "/prod/lab/get?a[]=1"),  # brackets outside a host
        # Dot segments removed (RFC 3986 5.2.4): "../../../x" came out "x".
        ("../../../x", "/x"),
        ("/../../get", "/prod/lab/get"),  # a path: never above the lab's root
        # Dots encoded are dots to a browser: "/lab/%2e%2e/%2e%2e/ui/" reached /ui/.
        ("/%2e%2e/%2E%2e/ui/", "/prod/lab/ui/"),
        ("/.%2e/%2e./get", "/prod/lab/get"),
        ("/%2e/get", "/prod/lab/get"),
        ("%2e%2e/x", "/prod/x"),  # relative: as "../x" is
        # Text that is not ASCII, percent-encoded as UTF-8: it went out as raw
        # bytes (U+0085), or was a 500 (U+4E2D).
        ("/get\u4e2d", "/prod/lab/get%E4%B8%AD"),
        ("/get\x85x", "/prod/lab/get%C2%85x"),
        ("http://localhost/\u00e9", "http://localhost/%C3%A9"),
    ],
)
def test_redirect_to_a_url_it_allows(anon, url, location):
    answer = redirect_to(anon, url)
    assert answer.status_int == 302
    assert answer.headers["Location"] == location


@pytest.mark.parametrize("status", [300, 301, 302, 303, 307, 308])
@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH", "DELETE"])
def test_redirect_to_answers_the_status_asked_for_any_method(anon, status, method):
    answer = redirect_to(anon, "get", method, status_code=status)
    assert answer.status_int == status
    assert answer.headers["Location"] == "/prod/lab/get"


@pytest.mark.parametrize("status", ["200", "304", "305", "306", "309", "3xx", ""])
def test_redirect_to_refuses_a_status_that_is_no_redirect(anon, status):
    answer = redirect_to(anon, "get", status_code=status)
    assert_error(answer, 400, "VALIDATION_ERROR")
    assert answer.json["details"]["errors"][0]["field"] == "status_code"


# The four open-redirect forms (go-httpbin #174, #266; httpbun #33), and what else
# a browser reads as another host than the text shows: refused by their shape.
MISSHAPEN = {
    "scheme-relative": "//evil.example/",
    "backslashed": "/\\evil.example/",
    "backslash first": "\\\\evil.example",
    "double-encoded": "%252F%252Fevil.example",
    "double-encoded backslash": "/%255Cevil.example",
    # Encoded once, but another host decoded again.
    "encoded slashes": "%2F%2Fevil.example",
    "encoded backslash": "/%5Cevil.example",
    "control character": "/\t/evil.example",
    "javascript": "javascript:alert(1)",
    "data": "data:text/html,<script>alert(1)</script>",
    "another scheme": "ftp://localhost/",
    "too long": "a" * (URL_MAX + 1),
    # No URL a parser reads: an open bracket in the host (found by schemathesis:
    # a 500), a bracket after a host.
    "open bracket": "http://[\u0117oJ\u0111+",
    "bracket after a host": "http://localhost[x/",
    # A percent sign that begins no escape: a Location no URL parser reads alike.
    "a stray percent sign": "%zz",
    "a percent sign at the end": "/a%",
    "a stray percent sign in the host": "http://local%zzhost/",
    "an escape in the host": "http://local%68ost/",
    # A port past 65535 (urllib reads none).
    "a port out of range": "http://localhost:99999/",
}
# Well formed, naming a host off the list: refused as the proxy refuses one.
ELSEWHERE = {
    "another host": "https://evil.example/",
    "userinfo": "http://localhost@evil.example/",
    "no host": "http:///evil.example",
    "a listed host's lookalike": "https://example.org.evil.example/",
    # Shaped as the pattern allows, but no host urllib can read (was a 500).
    "brackets around no IPv6 address": "http://[f]/",
    "a host that NFKC reads otherwise": "http://localhost\uff03.evil.example/",
}


@pytest.mark.parametrize("url", MISSHAPEN.values(), ids=MISSHAPEN)
def test_redirect_to_refuses_a_url_a_browser_would_read_otherwise(anon, url):
    answer = redirect_to(anon, url)
    assert_error(answer, 400, "VALIDATION_ERROR")
    assert answer.json["details"]["errors"][0]["field"] == "url"
    assert "Location" not in answer.headers


@pytest.mark.parametrize("url", ELSEWHERE.values(), ids=ELSEWHERE)
def test_redirect_to_refuses_a_host_it_does_not_list(anon, url):
    answer = redirect_to(anon, url, "POST")
    assert_error(answer, 403, "HOST_NOT_ALLOWED")
    assert "Location" not in answer.headers


def test_redirect_to_needs_a_url(anon):
    answer = anon.get("/lab/redirect-to", expect_errors=True)
    assert_error(answer, 400, "VALIDATION_ERROR")
    assert answer.json["details"]["errors"] == [
        {"field": "url", "message": "is required"}
    ]


def test_no_other_host_is_allowed_unless_configured(make_app):
    app = make_app(anonymous=True)  # REFAPI_LAB_REDIRECT_HOSTS empty
    answer = redirect_to(app, "https://example.org/")
    assert_error(answer, 403, "HOST_NOT_ALLOWED")


def test_absolute_is_true_or_false(anon):
    assert (
        anon.get("/lab/redirect/1?absolute=false", status=302).headers["Location"]
        == "/lab/get"
    )
    answer = anon.get("/lab/redirect/1?absolute=yes", expect_errors=True)
    assert_error(answer, 400, "VALIDATION_ERROR")
    assert answer.json["details"]["errors"][0]["field"] == "absolute"
