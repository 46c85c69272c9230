"""Bad query and path parameters: cursors, page sizes and ids.

Split from ``tests/web/test_body.py`` (request bodies) to keep each file one sitting's
reading. Writes refused here must leave the article list exactly as it was.
"""

from __future__ import annotations

import string

import pytest

from tests.helpers import assert_error

BASE64URL = string.ascii_uppercase + string.ascii_lowercase + string.digits + "-_"
COLLECTIONS = ["/v1/items", "/v1/articles"]


@pytest.fixture
def seeded(app):
    for n in range(3):
        app.post_json("/v1/articles", {"title": f"article {n}"}, status=201)
    return app


def stored(app):
    return app.get("/v1/articles", params={"limit": "100"}).json["data"]


def check_error(response, status, code, field=None):
    assert_error(response, status, code)
    if field is not None:
        errors = response.json["details"]["errors"]
        assert [e["field"] for e in errors] == [field]
        assert errors[0]["message"]


def flip(text: str, index: int) -> str:
    """Replace one character with another base64url character."""
    new = "B" if text[index] == "A" else "A"
    return text[:index] + new + text[index + 1 :]


def bump_last(text: str) -> str:
    """Change only the unused low bits of the final base64 character."""
    return text[:-1] + BASE64URL[BASE64URL.index(text[-1]) + 1]


@pytest.mark.parametrize("path", COLLECTIONS)
@pytest.mark.parametrize(
    "cursor",
    ["", "abc", "a.b.c", "!!!.???", "....", "é.é", "aXRlbXM6NQ", "aXRlbXM6NQ.",
     "0" * 500],
    ids=["empty", "word", "three-parts", "punctuation", "dots", "non-ascii",
         "unsigned", "empty-signature", "long"],
)  # fmt: skip
def test_garbage_cursor_is_400_invalid_cursor(seeded, path, cursor):
    response = seeded.get(path, params={"cursor": cursor}, expect_errors=True)
    check_error(response, 400, "INVALID_CURSOR")


@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param(lambda c: flip(c, 2), id="payload-char"),
        pytest.param(lambda c: flip(c, len(c) - 5), id="signature-char"),
        pytest.param(lambda c: c[:-1], id="signature-truncated"),
        pytest.param(lambda c: c + "A", id="signature-extended"),
        pytest.param(lambda c: c[len(c) // 2 :] + c[: len(c) // 2], id="swapped"),
        pytest.param(bump_last, id="signature-trailing-bits"),
    ],
)
@pytest.mark.parametrize("path", COLLECTIONS)
def test_tampered_cursor_is_400_invalid_cursor(seeded, path, tamper):
    cursor = seeded.get(path, params={"limit": "1"}).json["nextCursor"]
    tampered = tamper(cursor)
    assert tampered != cursor
    response = seeded.get(path, params={"cursor": tampered}, expect_errors=True)
    check_error(response, 400, "INVALID_CURSOR")


@pytest.mark.parametrize(
    ("source", "target"),
    [("/v1/items", "/v1/articles"), ("/v1/articles", "/v1/items")],
    ids=["items-cursor-on-articles", "articles-cursor-on-items"],
)
def test_cursor_of_another_collection_is_400_invalid_cursor(seeded, source, target):
    cursor = seeded.get(source, params={"limit": "1"}).json["nextCursor"]
    response = seeded.get(target, params={"cursor": cursor}, expect_errors=True)
    check_error(response, 400, "INVALID_CURSOR")


@pytest.mark.parametrize("path", COLLECTIONS)
@pytest.mark.parametrize(
    "limit",
    # Digits alone: 20.0 is an integer in a body, not in a query (docs/api.md).
    ["0", "101", "-1", "abc", "", "1.5", "1e2", " 5", "99999999999", "٣", "20.0"],
)
def test_bad_limit_is_400_validation_error(seeded, path, limit):
    response = seeded.get(path, params={"limit": limit}, expect_errors=True)
    check_error(response, 400, "VALIDATION_ERROR", field="limit")


BAD_IDS = [
    "0", "-1", "abc", "99999999999999999999999", "9223372036854775808", "1.5",
    "+1", "%D9%A1", "1e3", "9" * 5000, "1.0",
]  # fmt: skip
ID_ROUTES = [
    ("GET", "/v1/articles/{}"),
    ("PATCH", "/v1/articles/{}"),
    ("DELETE", "/v1/articles/{}"),
    ("GET", "/v1/todos/{}"),
]


def call(app, method, template, article_id):
    return app.request(
        template.format(article_id),
        method=method,
        body=b'{"title": "New"}' if method == "PATCH" else b"",
        content_type="application/json" if method == "PATCH" else None,
        expect_errors=True,
    )


@pytest.mark.parametrize(("method", "template"), ID_ROUTES)
@pytest.mark.parametrize("bad_id", BAD_IDS)
def test_malformed_id_is_400_validation_error(seeded, method, template, bad_id):
    before = stored(seeded)
    response = call(seeded, method, template, bad_id)
    check_error(response, 400, "VALIDATION_ERROR", field="id")
    assert stored(seeded) == before


@pytest.mark.parametrize(("method", "template"), ID_ROUTES)
@pytest.mark.parametrize("unknown_id", ["201", "9223372036854775807"])
def test_unknown_id_is_404(seeded, method, template, unknown_id):
    before = stored(seeded)
    response = call(seeded, method, template, unknown_id)
    check_error(response, 404, "NOT_FOUND")
    assert stored(seeded) == before


@pytest.mark.parametrize(
    "query",
    [
        "limit=1&limit=abc",
        "limit=abc&limit=1",
        "limit=1&limit=1",
        "cursor=a&cursor=b",
    ],
)
def test_a_query_parameter_given_twice_is_400(app, query):
    response = app.get(f"/v1/items?{query}", expect_errors=True)
    assert_error(response, 400, "VALIDATION_ERROR")
    field = query.split("=")[0]
    assert response.json["details"]["errors"] == [
        {"field": field, "message": "must be given at most once"}
    ]


def test_a_route_query_argument_given_twice_is_400(app):
    response = app.get("/api/demo.php?action=detail&id=1&id=2", expect_errors=True)
    assert_error(response, 400, "VALIDATION_ERROR")
    assert response.json["details"]["errors"][0]["field"] == "id"


@pytest.mark.parametrize(("limit", "size"), [("01", 1), ("0000002", 2)])
def test_limit_takes_leading_zeros_as_path_ids_do(app, limit, size):
    assert len(app.get(f"/v1/items?limit={limit}").json["data"]) == size
