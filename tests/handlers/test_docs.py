"""The interactive docs: the page at /docs and the files it loads, all from the app."""

from __future__ import annotations

import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; frame-ancestors 'none'"
)
# Every file the page loads, with its type and where it lives in the checkout.
FILES = {
    "swagger-ui.css": (
        "text/css; charset=utf-8",
        "ui/swagger/swagger-ui/swagger-ui.css",
    ),
    "docs.css": ("text/css; charset=utf-8", "ui/swagger/docs.css"),
    "swagger-ui-bundle.js": (
        "text/javascript; charset=utf-8",
        "ui/swagger/swagger-ui/swagger-ui-bundle.js",
    ),
    "favicon-32x32.png": ("image/png", "ui/swagger/swagger-ui/favicon-32x32.png"),
    "favicon-16x16.png": ("image/png", "ui/swagger/swagger-ui/favicon-16x16.png"),
    "initializer.js": ("text/javascript; charset=utf-8", "ui/swagger/initializer.js"),
}
ABSOLUTE_URL = re.compile(r"https?://", re.IGNORECASE)


class Page(HTMLParser):
    """What a browser would load from the page, and every script it holds."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.urls: list[str] = []  # every src and href
        self.loads: list[str] = []  # what a browser loads: not an <a>'s href
        self.links: list[tuple[str, str | None]] = []  # <a>: (href, aria-current)
        self.scripts: list[dict[str, str | None]] = []
        self.handlers: list[str] = []  # on* attributes: inline script too
        self.openapi: str | None = None
        self._in_script = False
        self.inline_code = ""
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        found = dict(attrs)
        self.handlers += [name for name in found if name.startswith("on")]
        urls = [v for k, v in attrs if k in ("src", "href") and v is not None]
        self.urls += urls
        if tag == "a":  # followed if clicked, not loaded
            self.links += [(url, found.get("aria-current")) for url in urls]
        else:
            self.loads += urls
        if tag == "script":
            self.scripts.append(found)
            self._in_script = True
        if "data-openapi-url" in found:
            self.openapi = found["data-openapi-url"]

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.inline_code += data.strip()


def test_the_page_is_html_under_the_policy(app):
    response = app.get("/docs")
    assert response.status_int == 200
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert response.headers["Content-Security-Policy"] == CSP
    assert response.headers["Cache-Control"] == "no-cache"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["ETag"].startswith('"')
    page = Page(response.text)
    assert page.openapi == "/openapi.json"
    assert sorted(page.loads) == sorted(f"/docs/{name}" for name in FILES)


@pytest.mark.parametrize(
    "accept",
    ["application/json", "application/xml", "text/csv", "image/png", "nothing/known"],
)
def test_the_page_is_html_whatever_accept_says(app, accept):
    response = app.get("/docs", headers={"Accept": accept})
    assert response.status_int == 200
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"


def test_the_page_runs_no_inline_script_and_names_no_other_origin(app):
    text = app.get("/docs").text
    page = Page(text)
    assert [script.get("src") for script in page.scripts] == [
        "/docs/swagger-ui-bundle.js",
        "/docs/initializer.js",
    ]
    assert page.inline_code == "" and page.handlers == []
    assert "javascript:" not in text.lower()
    assert not ABSOLUTE_URL.search(text)
    assert all(url.startswith("/") and not url.startswith("//") for url in page.urls)
    assert not ABSOLUTE_URL.search(app.get("/docs/initializer.js").text)


@pytest.mark.parametrize("name", FILES)
def test_each_file_is_the_packaged_one_with_its_type(app, name):
    content_type, path = FILES[name]
    response = app.get(f"/docs/{name}")
    assert response.status_int == 200
    assert response.headers["Content-Type"] == content_type
    assert response.headers["Cache-Control"] == "public, max-age=86400"
    assert response.headers["Content-Security-Policy"] == CSP
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.body == (ROOT / path).read_bytes()


def test_the_swagger_ui_files_ship_with_their_version_and_licence():
    folder = ROOT / "ui" / "swagger" / "swagger-ui"
    package = json.loads((folder / "package.json").read_text())
    assert package["name"] == "swagger-ui-dist" and package["license"] == "Apache-2.0"
    assert "Apache License" in (folder / "LICENSE").read_text()


@pytest.mark.parametrize(
    "environ, docs, openapi",
    [
        ({"SCRIPT_NAME": "/prod"}, "/prod/docs", "/prod/openapi.json"),
        ({"SCRIPT_NAME": "/prod/"}, "/prod/docs", "/prod/openapi.json"),
        ({"SCRIPT_NAME": "/a b"}, "/a%20b/docs", "/a%20b/openapi.json"),
    ],
    ids=["prefix", "trailing-slash", "percent-encoded"],
)
def test_the_page_names_its_files_and_document_under_the_mount_point(
    app, environ, docs, openapi
):
    page = Page(app.get("/docs", extra_environ=environ).text)
    assert page.openapi == openapi
    assert sorted(page.loads) == sorted(f"{docs}/{name}" for name in FILES)
    served = app.get("/docs/initializer.js", extra_environ=environ)
    assert served.body == (ROOT / "ui" / "swagger" / "initializer.js").read_bytes()


def test_the_mount_point_is_written_into_the_page_as_html(app):
    # & and ' may stand in a URL path as they are; in HTML they are escaped.
    text = app.get("/docs", extra_environ={"SCRIPT_NAME": "/a&b'c<"}).text
    assert 'href="/a&amp;b&#x27;c%3C/docs/swagger-ui.css"' in text
    assert Page(text).openapi == "/a&b'c%3C/openapi.json"


@pytest.mark.parametrize(
    "path",
    [
        "/docs/..",
        "/docs/.",
        "/docs/../openapi.json",
        "/docs/%2e%2e%2fpyproject.toml",
        "/docs/..%2f..%2fpyproject.toml",
        "/docs/swagger-ui%2fLICENSE",
        "/docs/swagger-ui/LICENSE",
        "/docs//etc/passwd",
        "/docs/%2fetc%2fpasswd",
        "/docs/LICENSE",
        "/docs/package.json",
        "/docs/index.html",
        "/docs/swagger-ui.css.map",
        "/docs/handlers",
        "/docs/SWAGGER-UI.CSS",
        "/docs/swagger-ui.css%00.png",
        "/docs.html",
    ],
)
def test_anything_else_under_docs_is_a_404_error_object(app, path):
    response = app.get(path, status=404)
    assert response.headers["Content-Type"] == "application/json; charset=utf-8"
    assert response.json == {
        "code": "NOT_FOUND",
        "message": "The requested resource was not found.",
        "details": {},
    }


@pytest.mark.parametrize("path", ["/docs", "/docs/swagger-ui-bundle.js"])
def test_a_current_copy_is_not_sent_again(app, path):
    first = app.get(path)
    etag = first.headers["ETag"]
    again = app.get(path, headers={"If-None-Match": etag}, status=304)
    assert again.body == b"" and again.headers["ETag"] == etag
    changed = app.get(path, headers={"If-None-Match": '"other"'})
    assert changed.status_int == 200 and changed.body == first.body


@pytest.mark.parametrize("path", ["/docs", "/docs/swagger-ui.css"])
def test_head_has_the_headers_of_get_and_no_body(app, path):
    get, head = app.get(path), app.head(path)
    assert head.status_int == 200 and head.body == b""
    for name in ("Content-Type", "Content-Length", "ETag", "Content-Security-Policy"):
        assert head.headers[name] == get.headers[name]


def test_the_docs_answer_only_reads(app):
    response = app.post("/docs/swagger-ui.css", status=405)
    assert response.headers["Allow"] == "GET, HEAD, OPTIONS"
    assert response.json["code"] == "METHOD_NOT_ALLOWED"


def test_the_docs_are_not_in_the_catalogue(app):
    assert "/docs" not in app.get("/api/download_csv.php").text


def test_a_files_tag_is_computed_once_not_per_request(app, monkeypatch):
    """The 1.7 MB bundle is hashed for its ETag at most once a process: four
    requests (two revalidations) pass over its bytes at most once between them."""
    from refapi.web import conditional

    hashed = []

    class Counting:
        def __init__(self, first: bytes = b"", digest=None, **options) -> None:
            self.digest = digest or hashlib.blake2b(first, **options)

        def copy(self) -> Counting:
            return Counting(digest=self.digest.copy())

        def update(self, data: bytes) -> None:
            hashed.append(len(data))
            self.digest.update(data)

        def hexdigest(self) -> str:
            return self.digest.hexdigest()

    monkeypatch.setattr(conditional, "hashlib", SimpleNamespace(blake2b=Counting))
    monkeypatch.setattr(conditional, "_SEEDED", {})  # each type's hash made anew
    path = "/docs/swagger-ui-bundle.js"
    size = len(app.get(path).body)
    assert size > 1_000_000
    etag = app.get(path).headers["ETag"]
    for _ in range(2):
        app.get(path, headers={"If-None-Match": etag}, status=304)
    # Once (the bytes, after a copy of the type's hash), or not at all where an
    # earlier test in this worker process had the tag made.
    assert hashed in ([], [size])


def test_the_page_offers_the_apis_document_and_the_labs(app):
    # docs/api.md, "Interactive docs": one page, a link to each document.
    api = Page(app.get("/docs", extra_environ={"SCRIPT_NAME": "/prod"}).text)
    assert api.openapi == "/prod/openapi.json"
    assert api.links == [("/prod/docs", "page"), ("/prod/docs?document=lab", None)]
    lab = Page(app.get("/docs?document=lab").text)
    assert lab.openapi == "/lab/openapi.json"
    assert lab.links == [("/docs", None), ("/docs?document=lab", "page")]
    app.get("/lab/openapi.json", status=200)  # what the page draws is there


def test_a_document_not_offered_is_404(app, make_app):
    refused = app.get("/docs?document=other", status=404)
    assert refused.json["code"] == "NOT_FOUND"
    without_lab = make_app(anonymous=True, lab=False)
    page = Page(without_lab.get("/docs").text)
    assert page.openapi == "/openapi.json" and page.links == []
    without_lab.get("/docs?document=lab", status=404)
