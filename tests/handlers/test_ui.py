"""The web UI's serving: the page at /ui/ and its two files, all from the app, under
a strict policy. What the page does in a browser is in tests/browser/."""

from __future__ import annotations

import re

import pytest

from tests.handlers.test_docs import ABSOLUTE_URL, ROOT, Page

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
FILES = {
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}
# The page's own icon, so the browser asks the server for no /favicon.ico.
ICON = "data:,"


def loaded(text: str) -> list[str]:
    """What the page loads: its src and href values, less links to its own screens."""
    return [url for url in Page(text).urls if not url.startswith("#/")]


def data_api(text: str) -> str:
    (found,) = re.findall(r'<body data-api="([^"]*)" data-lab="[^"]*">', text)
    return found


def test_the_page_is_html_under_the_policy(anon):
    response = anon.get("/ui/")
    assert response.status_int == 200
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert response.headers["Content-Security-Policy"] == CSP
    assert response.headers["Cache-Control"] == "no-cache"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["ETag"].startswith('"')
    assert "Set-Cookie" not in response.headers
    assert loaded(response.text) == ["/ui/style.css", ICON, "/ui/app.js"]
    assert data_api(response.text) == "/api"


@pytest.mark.parametrize("accept", ["application/json", "text/csv", "nothing/known"])
def test_the_page_is_html_whatever_accept_says(anon, accept):
    response = anon.get("/ui/", headers={"Accept": accept})
    assert response.status_int == 200
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"


def test_the_page_is_public_and_ignores_a_stale_session_cookie(anon):
    # An ended session must not lock anyone out of the page that logs in again.
    response = anon.get("/ui/", headers={"Cookie": "refapi_session=ended"})
    assert response.status_int == 200
    assert "Set-Cookie" not in response.headers


def test_the_page_runs_no_inline_script_or_style_and_names_no_other_origin(anon):
    text = anon.get("/ui/").text
    page = Page(text)
    assert page.scripts == [{"type": "module", "src": "/ui/app.js"}]
    assert page.inline_code == "" and page.handlers == []
    assert "<style" not in text and " style=" not in text
    assert "javascript:" not in text.lower()
    assert not ABSOLUTE_URL.search(text)
    for name in FILES:
        assert not ABSOLUTE_URL.search(anon.get(f"/ui/{name}").text), name


def test_the_script_keeps_no_credential_and_writes_no_html(anon):
    script = anon.get("/ui/app.js").text
    # The session cookie is HttpOnly and the CSRF token lives in memory: nothing
    # is stored where another script could read it, and the Bearer token the
    # login answers is never kept.
    for needle in ("localStorage", "sessionStorage", "document.cookie", ".token"):
        assert needle not in script, needle
    # Text from the API goes in as text, never parsed as markup or code.
    for needle in ("innerHTML", "outerHTML", "insertAdjacentHTML", "eval("):
        assert needle not in script, needle


@pytest.mark.parametrize("name", FILES)
def test_each_file_is_the_packaged_one_with_its_type(anon, name):
    response = anon.get(f"/ui/{name}")
    assert response.status_int == 200
    assert response.headers["Content-Type"] == FILES[name]
    assert response.headers["Cache-Control"] == "no-cache"
    assert response.headers["Content-Security-Policy"] == CSP
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.body == (ROOT / "ui" / name).read_bytes()


@pytest.mark.parametrize(
    "environ, ui, api",
    [
        ({"SCRIPT_NAME": "/prod"}, "/prod/ui", "/prod/api"),
        ({"SCRIPT_NAME": "/prod/"}, "/prod/ui", "/prod/api"),
        ({"SCRIPT_NAME": "/a b"}, "/a%20b/ui", "/a%20b/api"),
    ],
    ids=["prefix", "trailing-slash", "percent-encoded"],
)
def test_the_page_names_its_files_and_the_api_under_the_mount_point(
    anon, environ, ui, api
):
    text = anon.get("/ui/", extra_environ=environ).text
    assert loaded(text) == [f"{ui}/style.css", ICON, f"{ui}/app.js"]
    assert data_api(text) == api
    served = anon.get("/ui/app.js", extra_environ=environ)
    assert served.body == (ROOT / "ui" / "app.js").read_bytes()


def test_the_mount_point_is_written_into_the_page_as_html(anon):
    text = anon.get("/ui/", extra_environ={"SCRIPT_NAME": "/a&b'c<"}).text
    assert 'href="/a&amp;b&#x27;c%3C/ui/style.css"' in text
    assert (
        '<body data-api="/a&amp;b&#x27;c%3C/api" data-lab="/a&amp;b&#x27;c%3C/lab">'
        in text
    )


@pytest.mark.parametrize(
    "path",
    [
        "/ui//",
        "/ui/..",
        "/ui/.",
        "/ui/../openapi.json",
        "/ui/%2e%2e%2fpyproject.toml",
        "/ui/..%2f..%2fpyproject.toml",
        "/ui//etc/passwd",
        "/ui/%2fetc%2fpasswd",
        "/ui/index.html",
        "/ui/APP.JS",
        "/ui/app.js%00.css",
        "/ui/app.js/",
        "/ui/__init__.py",
        "/ui.html",
        "/ui/docs/initializer.js",
    ],
)
def test_anything_else_under_ui_is_a_404_error_object(anon, path):
    response = anon.get(path, status=404)
    assert response.headers["Content-Type"] == "application/json; charset=utf-8"
    assert response.json == {
        "code": "NOT_FOUND",
        "message": "The requested resource was not found.",
        "details": {},
    }


@pytest.mark.parametrize("path", ["/ui/", "/ui/app.js"])
def test_a_current_copy_is_not_sent_again(anon, path):
    first = anon.get(path)
    etag = first.headers["ETag"]
    again = anon.get(path, headers={"If-None-Match": etag}, status=304)
    assert again.body == b"" and again.headers["ETag"] == etag


@pytest.mark.parametrize("path", ["/ui/", "/ui/style.css"])
def test_head_has_the_headers_of_get_and_no_body(anon, path):
    get, head = anon.get(path), anon.head(path)
    assert head.status_int == 200 and head.body == b""
    for name in ("Content-Type", "Content-Length", "ETag", "Content-Security-Policy"):
        assert head.headers[name] == get.headers[name]


@pytest.mark.parametrize("path", ["/ui/", "/ui/app.js"])
def test_the_ui_answers_only_reads(anon, path):
    response = anon.post(path, status=405)
    assert response.headers["Allow"] == "GET, HEAD, OPTIONS"
    assert response.json["code"] == "METHOD_NOT_ALLOWED"


def test_the_ui_is_not_an_api_operation(app):
    assert "/ui" not in app.get("/api/download_csv.php").text
    assert not [path for path in app.get("/openapi.json").json["paths"] if "ui" in path]
