"""What a request asks for: API version, representation (Accept), HEAD, OPTIONS.

Split from ``test_middleware.py`` to keep each file one sitting's reading.
"""

from __future__ import annotations

import pytest

from tests.helpers import assert_error, send_accepting

VENDOR = "application/vnd.refapi+json"
VENDOR_V1 = "application/vnd.refapi+json;version=1"
XML_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'
STAMP = "2026-11-18T11:06:40Z"  # FakeClock's start


@pytest.fixture
def article_app(app):
    app.post_json("/v1/articles", {"title": "A & B", "tags": ["x", "y"]}, status=201)
    return app


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/articles", 200),
        ("GET", "/articles/1", 200),
        ("POST", "/articles", 201),
        ("PATCH", "/articles/1", 200),
        ("GET", "/todos/1", 200),
        ("GET", "/items", 200),
        ("GET", "/v1/articles/1", 200),
    ],
)
@pytest.mark.parametrize("accept", [VENDOR_V1, VENDOR, f'{VENDOR}; version="1"'])
def test_vendor_type_serves_version_1(article_app, method, path, status, accept):
    response = send_accepting(article_app, method, path, accept)
    assert response.status_int == status
    assert response.headers["Content-Type"] == VENDOR_V1
    if status == 201:
        assert response.headers["Location"] == "/v1/articles/2"
    else:
        assert response.json == article_app.get("/v1" + path.removeprefix("/v1")).json


@pytest.mark.parametrize("path", ["/articles", "/articles/1", "/todos/1", "/items"])
@pytest.mark.parametrize("accept", ["application/json", "*/*", None])
def test_unprefixed_path_without_vendor_type_is_404(article_app, path, accept):
    headers = {"Accept": accept} if accept else {}
    response = article_app.get(path, headers=headers, status=404)
    assert_error(response, 404, "NOT_FOUND")


@pytest.mark.parametrize(
    "path", ["/v1/articles", "/articles", "/v1/todos/1", "/todos/1"]
)
@pytest.mark.parametrize("version", ["2", "0", "abc"])
def test_unknown_version_is_406(app, path, version):
    headers = {"Accept": f"{VENDOR};version={version}"}
    assert_error(app.get(path, headers=headers, status=406), 406, "NOT_ACCEPTABLE")


DEPRECATION, SUNSET = "@1811808000", "Wed, 01 Jun 2027 00:00:00 GMT"


@pytest.mark.parametrize(
    ("path", "accept", "status", "deprecated"),
    [
        pytest.param("/v1/todos/1", None, 200, True, id="v1-path"),
        pytest.param("/todos/1", VENDOR_V1, 200, True, id="vendor-type"),
        pytest.param("/healthz", None, 200, False, id="unversioned-health"),
        pytest.param("/healthz", VENDOR_V1, 200, False, id="health-vendor-type"),
        pytest.param("/healthz", f"{VENDOR};version=2", 200, False, id="health-v2"),
        pytest.param("/nope", VENDOR_V1, 404, False, id="no-route"),
    ],
)
def test_configured_deprecation_adds_headers(
    make_app, path, accept, status, deprecated
):
    app = make_app(deprecation=DEPRECATION, sunset=SUNSET)
    headers = {"Accept": accept} if accept else {}
    response = app.get(path, headers=headers, status=status)
    assert response.headers.get("Deprecation") == (DEPRECATION if deprecated else None)
    assert response.headers.get("Sunset") == (SUNSET if deprecated else None)


def test_no_deprecation_headers_unless_configured(app):
    response = app.get("/v1/todos/1", status=200)
    assert "Deprecation" not in response.headers
    assert "Sunset" not in response.headers


ARTICLE_XML = (
    "<article><id>1</id><title>A &amp; B</title><tags>x</tags><tags>y</tags>"
    f"<author>user:1</author><createdAt>{STAMP}</createdAt><updatedAt>{STAMP}</updatedAt></article>"
)
ARTICLE_CSV = f'1,A & B,"[""x"",""y""]",user:1,{STAMP},{STAMP}\r\n'
TODO_XML = (
    "<todo><userId>1</userId><id>1</id><title>review the cursor #1</title>"
    "<completed>false</completed></todo>"
)
ITEMS_XML = "".join(
    f"<item><id>{n}</id><name>item 000{n}</name>"
    f"<createdAt>2026-01-01T00:0{n}:00Z</createdAt></item>"
    for n in (1, 2)
)


@pytest.mark.parametrize(
    ("path", "accept", "content_type", "body"),
    [
        pytest.param("/v1/articles/1", "application/xml", "application/xml",
                     XML_HEAD + ARTICLE_XML, id="article-xml"),
        pytest.param("/v1/articles", "application/xml", "application/xml",
                     f"{XML_HEAD}<articles>{ARTICLE_XML}</articles>",
                     id="articles-xml"),
        pytest.param("/v1/articles/1", "text/csv", "text/csv",
                     "id,title,tags,author,createdAt,updatedAt\r\n" + ARTICLE_CSV,
                     id="article-csv"),
        pytest.param("/v1/articles", "text/csv", "text/csv",
                     "id,title,tags,author,createdAt,updatedAt\r\n" + ARTICLE_CSV,
                     id="articles-csv"),
        pytest.param("/v1/todos/1", "application/xml", "application/xml",
                     XML_HEAD + TODO_XML, id="todo-xml"),
        pytest.param("/v1/todos/1", "text/csv", "text/csv",
                     "userId,id,title,completed\r\n1,1,review the cursor #1,false\r\n",
                     id="todo-csv"),
        pytest.param("/v1/items?limit=2", "application/xml", "application/xml",
                     f"{XML_HEAD}<items>{ITEMS_XML}</items>", id="items-xml"),
        pytest.param("/v1/items?limit=2", "text/csv", "text/csv",
                     "id,name,createdAt\r\n1,item 0001,2026-01-01T00:01:00Z\r\n"
                     "2,item 0002,2026-01-01T00:02:00Z\r\n", id="items-csv"),
        pytest.param("/v1/todos/1", "text/html, application/xml;q=0.5",
                     "application/xml", XML_HEAD + TODO_XML, id="q-values"),
    ],
)  # fmt: skip
def test_xml_and_csv_representations(article_app, path, accept, content_type, body):
    response = article_app.get(path, headers={"Accept": accept}, status=200)
    assert response.headers["Content-Type"] == f"{content_type}; charset=utf-8"
    assert response.body.decode("utf-8") == body
    assert "accept" in ",".join(response.headers.getall("Vary")).lower()
    assert response.headers["ETag"] != article_app.get(path).headers["ETag"]


def test_a_listed_collection_keeps_its_cursor_headers_in_xml(app):
    response = app.get("/v1/items?limit=2", headers={"Accept": "application/xml"})
    assert (
        response.headers["X-Next-Cursor"]
        == app.get("/v1/items?limit=2").json["nextCursor"]
    )
    assert 'rel="next"' in response.headers["Link"]


@pytest.mark.parametrize(
    ("method", "path", "accept"),
    [
        ("GET", "/v1/articles", "text/html"),
        ("GET", "/v1/articles/1", "text/html"),
        ("GET", "/v1/todos/1", "image/png"),
        ("GET", "/v1/items", "text/plain"),
        ("POST", "/v1/articles", "application/xml"),
        ("PATCH", "/v1/articles/1", "text/csv"),
    ],
)
def test_unservable_accept_is_406_in_json(article_app, method, path, accept):
    before = article_app.get("/v1/articles").json
    response = article_app.request(
        path,
        method=method,
        headers={"Accept": accept},
        body=b'{"title": "T"}' if method != "GET" else b"",
        content_type="application/json" if method != "GET" else None,
        expect_errors=True,
    )
    assert_error(response, 406, "NOT_ACCEPTABLE")
    assert article_app.get("/v1/articles").json == before


@pytest.mark.parametrize(
    ("path", "accept", "status", "code"),
    [
        ("/nope", "application/xml", 404, "NOT_FOUND"),
        ("/v1/articles/9", "text/csv", 404, "NOT_FOUND"),
        ("/v1/items?limit=0", "text/csv", 400, "VALIDATION_ERROR"),
        ("/v1/items?cursor=x", "application/xml", 400, "INVALID_CURSOR"),
    ],
)
def test_errors_are_always_json(app, path, accept, status, code):
    response = app.get(path, headers={"Accept": accept}, status=status)
    assert_error(response, status, code)


@pytest.mark.parametrize(
    "path", ["/v1/articles", "/v1/articles/1", "/v1/todos/1", "/v1/items", "/healthz"]
)
def test_head_has_the_get_headers_and_no_body(article_app, path):
    get = article_app.get(path, status=200)
    head = article_app.head(path, status=200)
    assert head.body == b""
    assert head.headers["Content-Type"] == get.headers["Content-Type"]
    assert head.headers["Content-Length"] == str(len(get.body))
    assert head.headers.get("ETag") == get.headers.get("ETag")


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        ("/v1/articles", {"GET", "HEAD", "POST", "OPTIONS"}),
        ("/v1/articles/1", {"GET", "HEAD", "PATCH", "DELETE", "OPTIONS"}),
        ("/v1/todos/1", {"GET", "HEAD", "OPTIONS"}),
        ("/v1/items", {"GET", "HEAD", "OPTIONS"}),
        ("/healthz", {"GET", "HEAD", "OPTIONS"}),
    ],
)
def test_plain_options_is_204_with_allow(app, path, allowed):
    response = app.options(path, status=204)
    assert response.body == b""
    assert set(response.headers["Allow"].split(", ")) == allowed


def test_options_on_an_unknown_path_is_404(app):
    assert_error(app.options("/nope", status=404), 404, "NOT_FOUND")
