"""The front page, GET /: HTML for a browser, JSON links for a client, under the
mount point and showing no setting; and the 308s from /ui and /docs/."""

from __future__ import annotations

import pytest

from refapi import routes
from refapi.handlers.front import collections
from tests.handlers.test_docs import Page
from tests.handlers.test_ui import CSP
from tests.helpers import assert_error, operations_inline

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
PROD = {"SCRIPT_NAME": "/prod"}
LINKS = {
    "docs": "/prod/docs",
    "ui": "/prod/ui/",
    "openapi": "/prod/openapi.json",
    "health": "/prod/healthz",
    "guides": "/prod/guides/",
    "lab": "/prod/lab/anything",
    "explore": "/prod/ui/#/explore",
    "articles": "/prod/v1/articles",
    "items": "/prod/v1/items",
}


def test_the_collections_are_the_v1_reads_without_an_id():
    # Derived from the table: a new collection row is linked without a second list.
    assert collections(routes.ROUTES) == (
        ("articles", "/v1/articles"),
        ("items", "/v1/items"),
    )


@pytest.mark.parametrize("accept", ["application/json", "*/*", ""], ids=repr)
def test_a_client_gets_json_links_under_the_mount_point(anon, accept):
    answer = anon.get("/", headers={"Accept": accept}, extra_environ=PROD)
    assert answer.headers["Content-Type"] == "application/json; charset=utf-8"
    assert answer.headers["Vary"] == "Accept"
    assert answer.headers["ETag"].startswith('"')
    assert answer.json == {"links": LINKS}


@pytest.mark.parametrize("accept", [BROWSER, "text/html"])
def test_a_browser_gets_the_page_linking_the_same_places(anon, accept):
    answer = anon.get("/", headers={"Accept": accept}, extra_environ=PROD)
    assert answer.headers["Content-Type"] == "text/html; charset=utf-8"
    assert answer.headers["Vary"] == "Accept"
    assert answer.headers["Content-Security-Policy"] == CSP  # the web UI's
    page = Page(answer.text)
    assert page.scripts == [] and page.handlers == [] and "style=" not in answer.text
    assert set(LINKS.values()) <= set(page.urls)
    assert all(url.startswith(("/prod/", "data:")) for url in page.urls), page.urls
    for landmark in ('<html lang="en">', "<title>refapi</title>", "<h1>", "<main>",
                     "<nav "):  # fmt: skip
        assert landmark in answer.text


def test_with_the_lab_off_neither_the_lab_nor_explore_is_linked(make_app):
    app = make_app(anonymous=True, lab=False)
    links = app.get("/", extra_environ=PROD).json["links"]
    assert links == {k: v for k, v in LINKS.items() if k not in ("lab", "explore")}
    page = app.get("/", headers={"Accept": "text/html"}, extra_environ=PROD).text
    assert "/prod/api/echo" not in page and "#/explore" not in page


@pytest.mark.parametrize(
    "accept", ["application/xml", "text/csv", "text/plain", "text/html;q=0, */*;q=0"]
)
def test_anything_else_is_406_with_vary(anon, accept):
    refused = anon.get("/", headers={"Accept": accept}, status=406)
    assert_error(refused, 406, "NOT_ACCEPTABLE")
    assert refused.headers["Vary"] == "Accept"
    assert refused.json["details"] == {"available": ["application/json", "text/html"]}


def test_head_has_the_headers_of_get_and_no_body(anon):
    for accept in ("application/json", "text/html"):
        got = anon.get("/", headers={"Accept": accept})
        head = anon.head("/", headers={"Accept": accept})
        assert head.status_int == 200 and head.body == b""
        for name in ("Content-Type", "Content-Length", "ETag", "Vary"):
            assert head.headers[name] == got.headers[name]


def test_no_setting_shows(make_app, tmp_path):
    secrets = {
        "admin_email": "root-of-all@example.org",
        "data_dir": str(tmp_path / "very-private-data"),
        "proxy_allowed_hosts": ("internal.example",),
        "metrics": ("10.9.8.0/24",),
    }
    app = make_app(anonymous=True, **secrets)
    shown = [
        app.get("/", headers={"Accept": accept}).text
        for accept in ("application/json", "text/html")
    ]
    database_url = app.app.config.database_url
    for text in shown:
        for value in (database_url, *map(str, secrets.values()), "10.9.8.0",
                      "internal.example", "very-private-data"):  # fmt: skip
            assert value not in text


def test_the_front_page_is_in_the_document_not_the_catalogue(anon):
    document = operations_inline(anon.get("/openapi.json").json)
    operation = document["paths"]["/"]["get"]
    assert operation["security"] == []
    ok = operation["responses"]["200"]
    assert sorted(ok["content"]) == ["application/json", "text/html"]
    assert ok["headers"]["Vary"] == {"$ref": "#/components/headers/Vary"}
    assert "406" in operation["responses"]
    catalogue = anon.get("/api/download_csv.php").text
    assert "get_front_page" not in catalogue


@pytest.mark.parametrize(
    ("path", "query", "location"),
    [
        ("/ui", "", "/prod/ui/"),
        ("/ui", "x=1&y", "/prod/ui/?x=1&y"),
        ("/docs/", "", "/prod/docs"),
        ("/docs/", "a=%2F b", "/prod/docs?a=%2F%20b"),
    ],
)
def test_ui_and_docs_slash_are_308_from_the_mount_point(anon, path, query, location):
    hostile = {"Host": "evil.example", "X-Forwarded-Host": "evil.example"}
    url = f"{path}?{query}" if query else path
    for send in (anon.get, anon.head):
        moved = send(url, headers=hostile, extra_environ=PROD, status=308)
        assert moved.headers["Location"] == location
        assert moved.body == b""


def test_a_redirect_never_names_another_host(anon):
    # A mount point of "//evil.example" would make a scheme-relative URL.
    moved = anon.get("/ui", extra_environ={"SCRIPT_NAME": "//evil.example"}, status=308)
    assert moved.headers["Location"] == "/evil.example/ui/"


@pytest.mark.parametrize("path", ["/ui", "/docs/"])
def test_the_redirects_answer_only_reads(anon, path):
    refused = anon.post(path, status=405)
    assert_error(refused, 405, "METHOD_NOT_ALLOWED")
    assert refused.headers["Allow"] == "GET, HEAD, OPTIONS"
    assert anon.options(path, status=204).headers["Allow"] == "GET, HEAD, OPTIONS"


def test_a_mount_point_without_its_slash_is_the_front_page(anon):
    # PATH_INFO is empty for /prod itself: the router reads it as /.
    answer = anon.get("/prod", extra_environ={"SCRIPT_NAME": "/prod", "PATH_INFO": ""})
    assert answer.json == {"links": LINKS}
