"""Content negotiation by ``Accept`` (RFC 9110 section 12.5.1) and API versions.

q-values rank the types and ``q=0`` rules one out, the vendor type included; media
types match case-insensitively and parameters other than the vendor type's
``version`` do not stop a match; a bodiless answer is not negotiated; endpoints
without a version ignore the vendor type's version and ``/healthz`` ignores Accept.
Each representation has its own ``ETag`` and every negotiated answer says
``Vary: Accept``.
"""

from __future__ import annotations

import pytest
import webtest

from refapi.errors import NotFound
from refapi.middleware import Errors
from refapi.router import Router, Services
from refapi.routes import Route
from refapi.web import json_response
from refapi.web.representations import Resource
from tests.helpers import assert_error, send_accepting, varies_on

VENDOR = "application/vnd.refapi+json"
VENDOR_V1 = f"{VENDOR};version=1"
JSON_TYPE = "application/json; charset=utf-8"
XML_TYPE = "application/xml; charset=utf-8"
CSV_TYPE = "text/csv; charset=utf-8"


@pytest.fixture
def article_app(app):
    app.post_json("/v1/articles", {"title": "A", "tags": ["x"]}, status=201)
    return app


def pay(app):
    headers = {"Idempotency-Key": "k-1"}
    body = {"amount": 10.5, "currency": "EUR"}
    return app.post_json("/v1/payments", body, headers=headers, status=201)


# --- q-values: q=0 is "not acceptable", for every type (item 7) -----------------


@pytest.mark.parametrize(
    ("accept", "content_type"),
    [
        pytest.param(f"application/json, {VENDOR};q=0", JSON_TYPE, id="vendor-q0"),
        pytest.param(f"*/*, {VENDOR_V1};q=0", JSON_TYPE, id="any-but-vendor-v1"),
        pytest.param(f"{VENDOR};version=2;q=0, application/json", JSON_TYPE,
                     id="refused-v2-is-no-request-for-v2"),
        pytest.param(f"{VENDOR};version=2;q=0, {VENDOR_V1}", VENDOR_V1,
                     id="v2-refused-v1-taken"),
        pytest.param(f"application/json;q=0, {VENDOR_V1};q=0.5", VENDOR_V1,
                     id="json-refused"),
        pytest.param("text/csv;q=0, */*", JSON_TYPE, id="csv-refused"),
        pytest.param("application/json;q=0.1, text/csv;q=0.9", CSV_TYPE,
                     id="higher-q-wins"),
    ],
)  # fmt: skip
def test_q_values_rank_and_q0_refuses(article_app, accept, content_type):
    response = article_app.get("/v1/articles/1", headers={"Accept": accept}, status=200)
    assert response.headers["Content-Type"] == content_type


@pytest.mark.parametrize(
    "accept",
    [
        f"{VENDOR};q=0",
        f"{VENDOR_V1};q=0",
        f"application/json;q=0, {VENDOR};q=0",
        "*/*;q=0",
        "application/*;q=0",
        f"{VENDOR};version=2",
        # An empty version is no version served, not the current one.
        f"{VENDOR};version=",
        f"{VENDOR}; version ;q=0.5",
        f'{VENDOR};version=""',
    ],
)
def test_only_refused_types_is_406(app, accept):
    response = app.get("/v1/todos/1", headers={"Accept": accept}, status=406)
    assert_error(response, 406, "NOT_ACCEPTABLE")


@pytest.mark.parametrize("accept", [f"{VENDOR};q=0", f"{VENDOR_V1};q=0"])
def test_a_refused_vendor_type_does_not_open_the_unprefixed_form(app, accept):
    response = app.get("/todos/1", headers={"Accept": accept}, status=404)
    assert_error(response, 404, "NOT_FOUND")


# --- /healthz ignores Accept; unversioned endpoints ignore the version (item 7) --


@pytest.mark.parametrize(
    "accept",
    [f"{VENDOR};version=2", VENDOR_V1, VENDOR, "text/html", "application/json;q=0",
     "APPLICATION/VND.REFAPI+JSON;VERSION=7", "*/*;q=0"],
)  # fmt: skip
@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_healthz_ignores_accept(app, method, accept):
    response = app.request(
        "/healthz", method=method, headers={"Accept": accept}, expect_errors=True
    )
    assert response.status_int == 200
    assert response.headers["Content-Type"] == JSON_TYPE
    assert "accept" not in varies_on(response)
    if method == "GET":
        assert response.json["status"] == "ok"


NOTE = Resource("note", "notes", ("id", "text"))


def get_note(request, id):
    if id != "1":
        raise NotFound()
    return json_response({"id": 1, "text": "=hi"})


@pytest.fixture
def unversioned(config, store, clock):
    """A router serving one endpoint without a version, as the demo's will be."""
    route = Route("GET", "/api/notes/{id}", get_note, resource=NOTE)
    router = Router(Services.made(config, store, clock, lambda now: "x"), (route,))
    return webtest.TestApp(Errors(router))


@pytest.mark.parametrize(
    ("accept", "content_type"),
    [
        pytest.param(f"{VENDOR};version=2", JSON_TYPE, id="unknown-version"),
        pytest.param(VENDOR_V1, JSON_TYPE, id="version-1"),
        pytest.param(VENDOR, JSON_TYPE, id="no-version"),
        pytest.param(f"{VENDOR};version=9, text/csv;q=0.5", JSON_TYPE,
                     id="vendor-preferred-to-csv"),
        pytest.param("application/xml", XML_TYPE, id="xml"),
        pytest.param(f"{VENDOR};q=0, text/csv;q=0.1", CSV_TYPE, id="vendor-refused"),
    ],
)  # fmt: skip
def test_an_unversioned_endpoint_reads_the_vendor_type_as_json(
    unversioned, accept, content_type
):
    response = unversioned.get("/api/notes/1", headers={"Accept": accept})
    assert response.status_int == 200
    assert response.headers["Content-Type"] == content_type
    assert "accept" in varies_on(response)


def test_an_unversioned_endpoint_still_refuses_what_it_cannot_serve(unversioned):
    response = unversioned.get(
        "/api/notes/1", headers={"Accept": f"text/html, {VENDOR};q=0"}, status=406
    )
    assert response.json["code"] == "NOT_ACCEPTABLE"


# --- parameters and case (item 25) ---------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "accept", "status", "content_type"),
    [
        ("GET", "/v1/todos/1", "application/json; charset=utf-8", 200, JSON_TYPE),
        ("GET", "/v1/todos/1", "application/json;charset=UTF-8;q=0.9", 200, JSON_TYPE),
        ("GET", "/v1/todos/1", "APPLICATION/JSON", 200, JSON_TYPE),
        ("GET", "/v1/todos/1", "APPLICATION/VND.REFAPI+JSON;VERSION=1", 200, VENDOR_V1),
        ("GET", "/v1/todos/1", "Application/Vnd.Refapi+Json; Version=1", 200,
         VENDOR_V1),
        ("GET", "/v1/todos/1", f'{VENDOR}; charset=utf-8; version="1"', 200, VENDOR_V1),
        ("GET", "/todos/1", "APPLICATION/VND.REFAPI+JSON;VERSION=1", 200, VENDOR_V1),
        ("GET", "/v1/todos/1", "text/csv; header=present", 200, CSV_TYPE),
        ("GET", "/v1/todos/1", "Application/XML; charset=utf-8", 200, XML_TYPE),
        ("GET", "/v1/items", "application/json; charset=utf-8", 200, JSON_TYPE),
        ("GET", "/healthz", "application/json; charset=utf-8", 200, JSON_TYPE),
        ("POST", "/v1/articles", "application/json; charset=utf-8", 201, JSON_TYPE),
        ("PATCH", "/v1/articles/1", "application/json; charset=utf-8", 200, JSON_TYPE),
        ("POST", "/articles", "APPLICATION/VND.REFAPI+JSON;VERSION=1", 201, VENDOR_V1),
        ("DELETE", "/v1/articles/1", "text/html", 204, None),
        ("DELETE", "/v1/articles/1", "application/json; charset=utf-8", 204, None),
        ("DELETE", "/articles/1", f"{VENDOR_V1}, text/html", 204, None),
    ],
)  # fmt: skip
def test_parameters_and_case_do_not_stop_a_match(
    article_app, method, path, accept, status, content_type
):
    response = send_accepting(article_app, method, path, accept)
    assert response.status_int == status
    assert response.headers.get("Content-Type") == content_type


def test_an_unknown_version_on_a_bodiless_answer_is_still_406(article_app):
    response = article_app.delete(
        "/v1/articles/1", headers={"Accept": f"{VENDOR};version=2"}, status=406
    )
    assert_error(response, 406, "NOT_ACCEPTABLE")
    article_app.get("/v1/articles/1", status=200)


# --- one ETag per representation, Vary: Accept (item 27) -----------------------


@pytest.mark.parametrize("path", ["/v1/articles/1", "/v1/todos/1", "/v1/items"])
def test_json_and_the_vendor_type_have_different_etags(article_app, path):
    plain = article_app.get(path, status=200)
    vendor = article_app.get(path, headers={"Accept": VENDOR_V1}, status=200)
    assert plain.body == vendor.body
    assert plain.headers["Content-Type"] != vendor.headers["Content-Type"]
    assert plain.headers["ETag"] != vendor.headers["ETag"]


def test_a_payment_has_an_etag_per_representation_and_varies(app):
    location = pay(app).headers["Location"]
    tags = set()
    for accept in ("application/json", VENDOR_V1, "application/xml", "text/csv"):
        response = app.get(location, headers={"Accept": accept}, status=200)
        assert "accept" in varies_on(response)
        tags.add(response.headers["ETag"])
    assert len(tags) == 4


@pytest.mark.parametrize(
    ("got_with", "sent_with", "status"),
    [
        pytest.param(VENDOR_V1, VENDOR_V1, 304, id="vendor-tag-vendor-request"),
        pytest.param("application/json", "application/json", 304, id="json-json"),
        pytest.param("application/json", VENDOR_V1, 200, id="json-tag-vendor-request"),
        pytest.param(VENDOR_V1, "application/json", 200, id="vendor-tag-json-request"),
        pytest.param("text/csv", "text/csv", 304, id="csv-csv"),
    ],
)
def test_if_none_match_names_one_representation(
    article_app, got_with, sent_with, status
):
    tag = article_app.get("/v1/articles/1", headers={"Accept": got_with}).headers[
        "ETag"
    ]
    response = article_app.get(
        "/v1/articles/1",
        headers={"Accept": sent_with, "If-None-Match": tag},
        status=status,
    )
    if status == 304:
        assert response.headers["ETag"] == tag
        assert "accept" in varies_on(response)


@pytest.mark.parametrize("got_with", ["application/json", VENDOR_V1])
@pytest.mark.parametrize(
    ("path", "accept"),
    [("/v1/articles/1", "application/json"), ("/articles/1", VENDOR_V1)],
    ids=["json-write", "vendor-write"],
)
def test_if_match_accepts_the_tag_of_either_json_type(
    article_app, got_with, path, accept
):
    tag = article_app.get("/v1/articles/1", headers={"Accept": got_with}).headers[
        "ETag"
    ]
    headers = {"Accept": accept, "If-Match": tag}
    article_app.patch_json(path, {"title": "B"}, headers=headers, status=200)
    stale = {"Accept": accept, "If-Match": tag}
    response = article_app.patch_json(path, {"title": "C"}, headers=stale, status=412)
    assert_error(response, 412, "PRECONDITION_FAILED")
    fresh = article_app.get(path, headers={"Accept": accept}).headers["ETag"]
    assert response.json["details"]["etag"] == fresh
    article_app.delete(path, headers={"Accept": accept, "If-Match": fresh}, status=204)


def test_if_match_is_a_strong_comparison(article_app):
    tag = article_app.get("/v1/articles/1").headers["ETag"]
    headers = {"If-Match": f"W/{tag}"}
    article_app.patch_json(
        "/v1/articles/1", {"title": "B"}, headers=headers, status=412
    )


@pytest.mark.parametrize(
    ("method", "path", "accept", "status"),
    [
        ("GET", "/v1/articles/1", None, 200),
        ("GET", "/articles/1", VENDOR_V1, 200),
        ("GET", "/v1/items", "text/csv", 200),
        ("POST", "/v1/articles", None, 201),
        ("POST", "/articles", VENDOR_V1, 201),
        ("PATCH", "/v1/articles/1", None, 200),
    ],
)
def test_every_negotiated_answer_varies_on_accept(
    article_app, method, path, accept, status
):
    body = b'{"title": "T"}' if method in ("POST", "PATCH") else b""
    response = article_app.request(
        path,
        method=method,
        headers={"Accept": accept} if accept else {},
        body=body,
        content_type="application/json" if body else None,
    )
    assert response.status_int == status
    assert "accept" in varies_on(response)
    assert response.headers.getall("Vary").count("Accept") == 1


def test_an_unserved_version_is_quoted_cut_short(app):
    accept = "application/vnd.refapi+json;version=" + "9" * 3000
    refused = app.get("/v1/todos/1", headers={"Accept": accept}, status=406)
    assert len(refused.json["message"]) < 150
