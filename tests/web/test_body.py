"""Bad request bodies: each gets its specified error, and nothing is stored.

Every write below is refused; the test then checks that the article list is exactly
what it was. Query and path parameters are in ``tests/test_router_params.py``.
"""

from __future__ import annotations

import gzip
import json

import pytest

from refapi import routes, schemas
from refapi.config import MAX_JSON_DEPTH, Config
from refapi.errors import ValidationError
from refapi.web.body import parse_json
from tests.helpers import JSON_TYPE, assert_error

JSON, MERGE = "application/json", "application/merge-patch+json"
VENDOR_TYPE = "application/vnd.refapi+json"
TARGETS = [("POST", "/v1/articles"), ("PATCH", "/v1/articles/1")]
TARGET_IDS = ["post", "patch"]
ARTICLE_LIMIT = next(r.body_limit for r in routes.ROUTES if r.name == "create_article")


def seed(app):
    app.post_json("/v1/articles", {"title": "Original", "tags": ["keep"]}, status=201)
    return app


@pytest.fixture
def seeded(app):
    return seed(app)


@pytest.fixture
def small(make_app):
    """An app whose body limit is 100 bytes."""
    return seed(make_app(max_body_bytes=100))


def stored(app):
    return app.get("/v1/articles", params={"limit": "100"}).json["data"]


def send(app, method, path, body, content_type=JSON):
    return app.request(
        path, method=method, body=body, content_type=content_type, expect_errors=True
    )


def check_refusal(app, response, before, status, code, fields=None):
    assert_error(response, status, code)
    if fields is not None:
        errors = response.json["details"]["errors"]
        assert all(set(e) == {"field", "message"} and e["message"] for e in errors)
        assert sorted(e["field"] for e in errors) == sorted(fields)
    assert stored(app) == before


def body(value) -> bytes:
    return json.dumps(value).encode()


INVALID = ("INVALID_JSON", None)


def invalid(*fields):
    return ("VALIDATION_ERROR", list(fields))


BODY_CASES = [
    pytest.param(b"", *INVALID, id="empty-body"),
    pytest.param(b"[]", *invalid(""), id="array"),
    pytest.param(b'[{"title": "x"}]', *invalid(""), id="array-of-object"),
    pytest.param(b'"hello"', *invalid(""), id="string"),
    pytest.param(b"42", *invalid(""), id="number"),
    pytest.param(b"null", *invalid(""), id="null"),
    pytest.param(body({"title": 5}), *invalid("/title"), id="title-number"),
    pytest.param(body({"title": ["x"]}), *invalid("/title"), id="title-array"),
    pytest.param(body({"title": "ok", "tags": "a"}), *invalid("/tags"), id="tags-str"),
    pytest.param(body({"title": "ok", "tags": [1, "a", True]}),
                 *invalid("/tags/0", "/tags/2"), id="tag-types"),
    pytest.param(body({"title": "x" * 10_000}), *invalid("/title"), id="title-10000"),
    pytest.param(body({"title": "x" * 201}), *invalid("/title"), id="title-201"),
    pytest.param(body({"title": "🦄" * 201}), *invalid("/title"), id="title-201-emoji"),
    pytest.param(body({"title": ""}), *invalid("/title"), id="title-empty"),
    pytest.param(body({"title": "ok", "tags": ["a", "b", "a"]}), *invalid("/tags"),
                 id="duplicate-tags"),
    pytest.param(body({"title": "ok", "tags": [str(n) for n in range(21)]}),
                 *invalid("/tags"), id="21-tags"),
    pytest.param(body({"title": "ok", "tags": ["", "t" * 51]}),
                 *invalid("/tags/0", "/tags/1"), id="tag-lengths"),
    pytest.param(body({"title": "ok", "author": "me"}), *invalid("/author"),
                 id="unknown-field"),
    pytest.param(body({"title": "ok", "id": 7, "createdAt": "2020-01-01T00:00:00Z"}),
                 *invalid("/createdAt", "/id"), id="server-fields"),
    pytest.param(body({"title": "", "tags": ["ok", 3, "ok"], "extra": 1}),
                 *invalid("/extra", "/tags", "/tags/1", "/title"),
                 id="every-failing-field"),
    pytest.param(b'{"title": "x"', *INVALID, id="truncated"),
    pytest.param(b"{'title': 'x'}", *INVALID, id="single-quotes"),
    pytest.param(b'{"title": "x",}', *INVALID, id="trailing-comma"),
    pytest.param(b"title=x", *INVALID, id="form-encoded"),
    pytest.param(b'{"title": NaN}', *INVALID, id="nan"),
    pytest.param(b'{"title": "x", "tags": [Infinity]}', *INVALID, id="infinity"),
    pytest.param(b'{"title": -Infinity}', *INVALID, id="minus-infinity"),
    pytest.param(b'{"title": "\\ud800"}', *INVALID, id="lone-high-surrogate"),
    pytest.param(b'{"title": "a\\udc00b"}', *INVALID, id="lone-low-surrogate"),
    pytest.param(b'{"title": "a\\u0000b"}', *invalid("/title"), id="nul-in-a-title"),
    pytest.param(b'{"title": "ok", "tags": ["x", "\\\\\\u0000"]}',
                 *invalid("/tags/1"), id="nul-after-an-escaped-backslash"),
    pytest.param(b'{"title": "caf\xe9"}', *INVALID, id="latin-1-byte"),
    pytest.param(b'{"title": "\xed\xa0\x80"}', *INVALID, id="utf-8-surrogate"),
    pytest.param(b'{"title": "\xc0\xaf"}', *INVALID, id="overlong-utf-8"),
]  # fmt: skip


@pytest.mark.parametrize(("method", "path"), TARGETS, ids=TARGET_IDS)
@pytest.mark.parametrize(("raw", "code", "fields"), BODY_CASES)
def test_bad_body_is_400_and_stores_nothing(seeded, method, path, raw, code, fields):
    before = stored(seeded)
    response = send(seeded, method, path, raw)
    check_refusal(seeded, response, before, 400, code, fields)


@pytest.mark.parametrize(
    ("method", "raw", "fields"),
    [
        pytest.param("POST", b"{}", ["/title"], id="post-missing-title"),
        pytest.param("POST", body({"tags": ["a"]}), ["/title"], id="post-only-tags"),
        pytest.param("PATCH", body({"title": None}), ["/title"], id="patch-null-title"),
        pytest.param("PATCH", body({"title": None, "tags": 5}), ["/tags", "/title"],
                     id="patch-null-title-and-bad-tags"),
    ],
)  # fmt: skip
def test_method_specific_validation(seeded, method, raw, fields):
    before = stored(seeded)
    path = "/v1/articles" if method == "POST" else "/v1/articles/1"
    response = send(seeded, method, path, raw)
    check_refusal(seeded, response, before, 400, "VALIDATION_ERROR", fields)


@pytest.mark.parametrize(("method", "path"), TARGETS, ids=TARGET_IDS)
@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        None,
        "application/x-www-form-urlencoded",
        "application/json; charset=latin-1",
        "application/jsonx",
        "application/vnd.refapi+json; version=2",
        "application/vnd.refapi+json; version=abc",
    ],
    ids=["text-plain", "none", "form", "latin-1", "lookalike", "version-2",
         "version-abc"],
)  # fmt: skip
def test_wrong_content_type_is_415(seeded, method, path, content_type):
    before = stored(seeded)
    response = send(seeded, method, path, body({"title": "New"}), content_type)
    check_refusal(seeded, response, before, 415, "UNSUPPORTED_MEDIA_TYPE")


def test_merge_patch_type_is_only_for_patch(seeded):
    before = stored(seeded)
    response = send(seeded, "POST", "/v1/articles", body({"title": "N"}), MERGE)
    check_refusal(seeded, response, before, 415, "UNSUPPORTED_MEDIA_TYPE")


@pytest.mark.parametrize(
    "content_type", ["application/json; charset=UTF-8", "Application/JSON"]
)
def test_json_content_type_variants_are_accepted(seeded, content_type):
    response = send(seeded, "POST", "/v1/articles", body({"title": "N"}), content_type)
    assert response.status_int == 201
    assert response.json["title"] == "N"


def sized(n: int) -> bytes:
    """A valid create body of exactly ``n`` bytes."""
    return b'{"title":"' + b"x" * (n - 12) + b'"}'


@pytest.mark.parametrize(
    ("method", "path", "raw", "content_type", "status", "code"),
    [
        pytest.param("POST", "/v1/articles", sized(101), JSON, 413, "PAYLOAD_TOO_LARGE",
                     id="post-over-limit"),
        pytest.param("PATCH", "/v1/articles/1", sized(101), JSON, 413,
                     "PAYLOAD_TOO_LARGE", id="patch-over-limit"),
        pytest.param("POST", "/v1/articles", sized(101), "text/plain", 413,
                     "PAYLOAD_TOO_LARGE", id="413-before-415"),
        pytest.param("POST", "/v1/articles", b"{" * 101, JSON, 413,
                     "PAYLOAD_TOO_LARGE", id="413-before-400"),
        pytest.param("POST", "/v1/articles", b"{" * 10, "text/plain", 415,
                     "UNSUPPORTED_MEDIA_TYPE", id="415-before-400"),
        pytest.param("POST", "/v1/articles", b"{}", None, 415,
                     "UNSUPPORTED_MEDIA_TYPE", id="415-before-validation"),
        pytest.param("POST", "/v1/articles/1", sized(101), JSON, 405,
                     "METHOD_NOT_ALLOWED", id="405-before-413"),
        pytest.param("POST", "/nope", sized(101), "text/plain", 404, "NOT_FOUND",
                     id="404-before-413"),
    ],
)  # fmt: skip
def test_order_of_checks(small, method, path, raw, content_type, status, code):
    before = stored(small)
    response = send(small, method, path, raw, content_type)
    check_refusal(small, response, before, status, code)


def test_body_of_exactly_the_limit_is_accepted(small):
    response = send(small, "POST", "/v1/articles", sized(100))
    assert response.status_int == 201
    assert response.json["title"] == "x" * 88


UNICODE_TITLES = [
    pytest.param("🦄 unicorns 👩‍👩‍👧‍👦 🇺🇦", id="emoji-zwj-flags"),
    pytest.param("مرحبا بالعالم", id="rtl-arabic"),
    pytest.param("שלום \u202eevil\u202c done", id="rtl-override"),
    pytest.param("Cafe\u0301", id="combining-nfd"),
    pytest.param("Caf\u00e9", id="precomposed-nfc"),
    pytest.param("Z\u0324\u0354\u0367\u0311a\u0308\u0356\u032d", id="stacked-marks"),
    pytest.param("漢字かなカナ한국어", id="cjk"),
    pytest.param("𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𠀋", id="astral-plane"),
    pytest.param("🦄" * 200, id="200-emoji"),
]


@pytest.mark.parametrize("encoding", ["escaped", "utf-8"])
@pytest.mark.parametrize("title", UNICODE_TITLES)
def test_unicode_is_stored_and_returned_exactly(app, title, encoding):
    article = {"title": title, "tags": [title[:50]]}
    raw = json.dumps(article, ensure_ascii=encoding == "escaped").encode()
    created = send(app, "POST", "/v1/articles", raw)
    assert created.status_int == 201
    assert created.headers["Content-Type"] == JSON_TYPE
    assert created.json["title"] == title
    assert created.json["tags"] == [title[:50]]
    assert app.get("/v1/articles/1").json == created.json
    assert stored(app) == [created.json]


def test_chunked_body_over_the_limit_is_413(make_app):
    app = make_app(max_body_bytes=100)
    response = app.post(
        "/v1/articles",
        b'{"title": "' + b"x" * 200 + b'"}',
        headers={"Content-Type": "application/json"},
        extra_environ={"CONTENT_LENGTH": "", "wsgi.input_terminated": True},
        expect_errors=True,
    )
    assert response.status_int == 413
    assert response.json["code"] == "PAYLOAD_TOO_LARGE"


def test_chunked_body_within_the_limit_is_read(app):
    response = app.post(
        "/v1/articles",
        b'{"title": "chunked"}',
        headers={"Content-Type": "application/json"},
        extra_environ={"CONTENT_LENGTH": "", "wsgi.input_terminated": True},
    )
    assert response.status_int == 201
    assert response.json["title"] == "chunked"


def with_tags(item: bytes, count: int) -> bytes:
    """A create body whose ``tags`` holds ``count`` copies of the JSON ``item``."""
    return b'{"title": "t", "tags": [' + b",".join([item] * count) + b"]}"


MEMBERS = b",".join(b'"k%d": 1' % n for n in range(60_000))

# Each is under the default REFAPI_MAX_BODY_BYTES (1 MiB) and over the articles'
# own limit, and each is one value over its bound (or of the wrong type): refused
# unread by the route, and, read all the same, one error that is not looked into
# (not its duplicates, nor its items, nor in jsonschema's messages, which would repr
# it whole): validation stays bounded whatever the limit lets through.
OVER_BOUND = [
    pytest.param(with_tags(b'"a"', 262_000), "/tags", "must have at most 20 items",
                 id="262000-duplicate-tags"),
    pytest.param(with_tags(b'""', 262_000), "/tags", "must have at most 20 items",
                 id="262000-empty-tags"),
    pytest.param(with_tags(b"1", 500_000), "/tags", "must have at most 20 items",
                 id="500000-number-tags"),
    pytest.param(with_tags(b"[]", 300_000), "/tags", "must have at most 20 items",
                 id="300000-array-tags"),
    pytest.param(body({"title": "x" * 1_000_000}), "/title",
                 "must be at most 200 characters long", id="1-mb-title"),
    pytest.param(b'{"title": "t", ' + MEMBERS + b"}", "",
                 "must have at most 20 members", id="60000-unknown-members"),
    pytest.param(b'{"title": [' + b",".join([b"1.5"] * 200_000) + b"]}", "/title",
                 "must be a string", id="200000-numbers-as-title"),
    pytest.param(b"[" + b",".join([b"[[[[]]]]"] * 100_000) + b"]", "",
                 "must be an object", id="100000-arrays-as-body"),
]  # fmt: skip


@pytest.mark.parametrize(("method", "path"), TARGETS, ids=TARGET_IDS)
@pytest.mark.parametrize(("raw", "field", "message"), OVER_BOUND)
def test_a_huge_body_is_413_and_a_huge_value_one_error(
    seeded, method, path, raw, field, message
):
    before = stored(seeded)
    response = send(seeded, method, path, raw)
    check_refusal(seeded, response, before, 413, "PAYLOAD_TOO_LARGE")
    assert response.json["details"] == {"limit": ARTICLE_LIMIT}
    schema = schemas.load("article-create" if method == "POST" else "article-patch")
    with pytest.raises(ValidationError) as refused:
        schemas.validate(parse_json(raw, MAX_JSON_DEPTH), schema)
    assert refused.value.details == {"errors": [{"field": field, "message": message}]}


def test_every_value_within_its_bound_is_still_looked_into(seeded):
    before = stored(seeded)
    raw = body({"title": "t" * 201, "tags": ["x" * 51] * 20, "a": [1] * 1000})
    response = send(seeded, "POST", "/v1/articles", raw)
    fields = ["/a", "/tags", "/title", *(f"/tags/{n}" for n in range(20))]
    check_refusal(seeded, response, before, 400, "VALIDATION_ERROR", fields)


def nested(levels: int, opener: bytes = b"[", closer: bytes = b"]") -> bytes:
    """JSON ``levels`` deep around a string holding an escape."""
    return opener * levels + b'"caf\\u00e9"' + closer * levels


@pytest.mark.parametrize(("method", "path"), TARGETS, ids=TARGET_IDS)
@pytest.mark.parametrize(
    "raw",
    [nested(33), nested(330), nested(8_000),
     nested(330, b'{"a": ', b"}"), b'{"title": "t", "tags": ' + nested(40) + b"}",
     b"[" * 16_000, b"[" * 40 + b"}" * 40],
    ids=["33-arrays", "330-arrays", "8000-arrays", "330-objects", "deep-member",
         "unclosed-16000", "mismatched-40"],
)  # fmt: skip
def test_json_nested_past_the_limit_is_400_with_max_depth(seeded, method, path, raw):
    before = stored(seeded)
    response = send(seeded, method, path, raw)
    check_refusal(seeded, response, before, 400, "INVALID_JSON")
    assert response.json["details"]["maxDepth"] == 32


def test_json_at_the_depth_limit_is_parsed(seeded):
    before = stored(seeded)
    response = send(seeded, "POST", "/v1/articles", nested(32))
    check_refusal(seeded, response, before, 400, "VALIDATION_ERROR", [""])


def test_brackets_inside_strings_do_not_count(app):
    title = '[{"\\' * 40
    response = send(app, "POST", "/v1/articles", body({"title": title[:200]}))
    assert response.status_int == 201
    assert response.json["title"] == title[:200]


def test_the_depth_limit_is_configured(make_app):
    assert Config.from_env({"REFAPI_JSON_MAX_DEPTH": "3"}).json_max_depth == 3
    app = make_app(json_max_depth=3)
    created = send(app, "POST", "/v1/articles", b'{"title": "t", "tags": []}')
    assert created.status_int == 201
    response = send(app, "POST", "/v1/articles", b'{"title": [[["t"]]]}')
    assert_error(response, 400, "INVALID_JSON")
    assert response.json["details"]["maxDepth"] == 3


@pytest.mark.parametrize(
    "content_type",
    ['application/json; xcharset=latin-1', 'application/json; foo="charset=latin-1"',
     'application/json; charset="utf-8"', "application/json;CHARSET=utf-8"],
    ids=["unknown-parameter", "charset-inside-a-quoted-value", "quoted", "upper-case"],
)  # fmt: skip
def test_content_type_parameters_are_parsed_not_searched(app, content_type):
    response = send(app, "POST", "/v1/articles", body({"title": "N"}), content_type)
    assert response.status_int == 201


@pytest.mark.parametrize(
    "content_type",
    ['application/json; charset="latin-1"', "application/json; charset=utf-16"],
    ids=["quoted-latin-1", "utf-16"],
)
def test_a_charset_other_than_utf_8_is_415(seeded, content_type):
    before = stored(seeded)
    response = send(seeded, "POST", "/v1/articles", body({"title": "N"}), content_type)
    check_refusal(seeded, response, before, 415, "UNSUPPORTED_MEDIA_TYPE")


@pytest.mark.parametrize("coding", ["gzip", "deflate, gzip", "br"])
def test_a_body_in_a_content_coding_is_415(seeded, coding):
    """RFC 9110, 15.5.16: refused as a coding not supported, not read as bad JSON."""
    before = stored(seeded)
    raw = gzip.compress(body({"title": "N"}))
    response = seeded.request(
        "/v1/articles", method="POST", body=raw, content_type=JSON,
        headers={"Content-Encoding": coding}, expect_errors=True,
    )  # fmt: skip
    check_refusal(seeded, response, before, 415, "UNSUPPORTED_MEDIA_TYPE")
    assert "content coding" in response.json["message"]


def test_identity_is_no_content_coding(seeded):
    seeded.request(
        "/v1/articles", method="POST", body=body({"title": "N"}), content_type=JSON,
        headers={"Content-Encoding": "identity"}, status=201,
    )  # fmt: skip


def test_the_deepest_configurable_limit_is_measured(make_app):
    app = make_app(json_max_depth=MAX_JSON_DEPTH)
    assert_error(
        send(app, "POST", "/v1/articles", nested(100)), 400, "VALIDATION_ERROR"
    )
    response = send(app, "POST", "/v1/articles", nested(101))
    assert_error(response, 400, "INVALID_JSON")
    assert response.json["details"]["maxDepth"] == 100


@pytest.mark.parametrize("depth", [0, MAX_JSON_DEPTH + 1])
def test_a_depth_limit_out_of_range_is_refused_at_start(depth):
    with pytest.raises(ValueError, match="REFAPI_JSON_MAX_DEPTH"):
        Config(json_max_depth=depth)


def test_an_escaped_backslash_before_u0000_is_text_not_nul(seeded):
    """``\\\\u0000`` in a body is a backslash and the letters u0000: stored as sent."""
    response = send(seeded, "POST", "/v1/articles", b'{"title": "a\\\\u0000"}')
    assert response.status_int == 201
    assert response.json["title"] == "a\\u0000"


def test_a_body_in_the_vendor_type_of_the_served_version_is_read(seeded):
    for content_type in ("application/vnd.refapi+json; version=1", VENDOR_TYPE):
        response = send(
            seeded, "POST", "/v1/articles", body({"title": "N"}), content_type
        )
        assert response.status_int == 201, response.body
