"""Versioning (middleware/versioning.py): the vendor type serves version 1 on the
unprefixed paths, an unknown version is 406, and a configured deprecation marks
the answers; alone and in another order."""

from __future__ import annotations

import pytest

from refapi.middleware import (
    RequestId,
    Versioning,
)
from tests.helpers import assert_error, send_accepting
from tests.middleware.alone import (
    bare,
    client,
)

VENDOR = "application/vnd.refapi+json"
VENDOR_V1 = "application/vnd.refapi+json;version=1"


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
@pytest.mark.parametrize("version", ["2", "0", "abc", ""])  # "": an empty one
def test_unknown_version_is_406(app, path, version):
    headers = {"Accept": f"{VENDOR};version={version}"}
    assert_error(app.get(path, headers=headers, status=406), 406, "NOT_ACCEPTABLE")


@pytest.mark.parametrize("path", ["/articles", "/articles/1", "/todos/1", "/items"])
def test_an_unprefixed_404_says_it_varies_by_accept(article_app, path):
    # Another Accept (the vendor type) would have found it: RFC 9110 section 12.5.5.
    response = article_app.get(path, status=404)
    assert "Accept" in response.headers.getall("Vary")


@pytest.mark.parametrize("path", ["/v1/articles", "/articles", "/v1/todos/1"])
def test_an_unknown_version_406_says_it_varies_by_accept(app, path):
    response = app.get(path, headers={"Accept": f"{VENDOR};version=2"}, status=406)
    assert response.headers.getall("Vary") == ["Accept"]


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


# -- alone, and in another order than app.py's (tests/middleware/alone.py) ----------


V1 = "application/vnd.refapi+json;version=1"


def test_versioning_alone_routes_the_vendor_type_and_marks_the_lifecycle():
    app = client(
        Versioning(
            bare,
            prefixes=frozenset({"/articles"}),
            deprecation="@1767225600",
            sunset="Fri, 01 Jan 2027 00:00:00 GMT",
        )
    )
    routed = app.get("/articles/1", headers={"Accept": V1})
    assert routed.json["PATH_INFO"] == "/v1/articles/1"
    assert routed.headers["Deprecation"] == "@1767225600"
    assert routed.headers["Sunset"] == "Fri, 01 Jan 2027 00:00:00 GMT"
    as_sent = app.get("/articles/1")  # no vendor type: left as it is
    assert as_sent.json["PATH_INFO"] == "/articles/1"
    assert "Deprecation" not in as_sent.headers
    unversioned = app.get("/healthz", headers={"Accept": V1})
    assert unversioned.json["PATH_INFO"] == "/healthz"
    assert "Deprecation" not in unversioned.headers


def test_versioning_outside_request_id_adds_to_the_same_answer():
    app = client(Versioning(RequestId(bare), prefixes=frozenset(), deprecation="@1"))
    answer = app.get("/v1/todos/1", headers={"X-Request-Id": "r2"})
    assert answer.headers["Deprecation"] == "@1"
    assert answer.headers["X-Request-Id"] == "r2"
