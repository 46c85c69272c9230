"""Articles: create, read with ETags, merge-patch, delete, and keyset pages."""

from __future__ import annotations

import re

import pytest

from tests.conftest import bearer
from tests.helpers import assert_error, refused_bodies

JSON = "application/json"
JSON_TYPE = "application/json; charset=utf-8"
CREATED = "2026-11-18T11:06:40Z"  # FakeClock's start, 1_795_000_000
START = 1_795_000_000.0  # the same instant, as the store takes it
LATER = "2026-11-18T11:07:40Z"  # one minute on
ADMIN_AUTHOR = {"type": "user", "id": 1}  # the ``app`` fixture's first admin


def create(app, title="Hello", tags=None):
    body = {"title": title} if tags is None else {"title": title, "tags": tags}
    return app.post_json("/v1/articles", body, status=201).json


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"title": "Hello"}, id="tags-default-empty"),
        pytest.param({"title": "Hello", "tags": ["a", "b"]}, id="with-tags"),
        pytest.param({"title": "T" * 200, "tags": ["t" * 50]}, id="longest-title-tag"),
        pytest.param(
            {"title": "x", "tags": [f"t{i}" for i in range(20)]}, id="20-tags"
        ),
    ],
)
def test_create_answers_201_with_location_and_the_article(app, body):
    response = app.post_json("/v1/articles", body, status=201)
    assert response.headers["Location"] == "/v1/articles/1"
    assert response.headers["Content-Type"] == JSON_TYPE
    expected = {"id": 1, "tags": [], **body, "author": ADMIN_AUTHOR,
                "createdAt": CREATED, "updatedAt": CREATED}  # fmt: skip
    assert response.json == expected
    assert app.get("/v1/articles/1").json == expected


def test_create_under_a_path_prefix_emits_prefixed_urls(app):
    for n in range(3):
        create(app, f"a{n}")
    response = app.post_json(
        "/v1/articles",
        {"title": "x"},
        status=201,
        extra_environ={"SCRIPT_NAME": "/prod"},
    )
    assert response.headers["Location"] == "/prod/v1/articles/4"
    page = app.get("/v1/articles?limit=2", extra_environ={"SCRIPT_NAME": "/prod"})
    cursor = page.json["nextCursor"]
    assert (
        page.headers["Link"]
        == f'</prod/v1/articles?cursor={cursor}&limit=2>; rel="next"'
    )


def test_ids_are_assigned_in_order(app):
    assert [create(app, str(n))["id"] for n in range(3)] == [1, 2, 3]


def test_get_answers_the_article_with_a_strong_etag(app):
    created = create(app, tags=["a"])
    response = app.get("/v1/articles/1", status=200)
    assert response.json == created
    assert response.headers["Content-Type"] == JSON_TYPE
    assert re.fullmatch(r'"[^"]+"', response.headers["ETag"])


@pytest.mark.parametrize(
    ("if_none_match", "status"),
    [
        pytest.param(lambda tag: tag, 304, id="same-tag"),
        pytest.param(lambda tag: "*", 304, id="star"),
        pytest.param(lambda tag: "W/" + tag, 304, id="weak-form-of-tag"),
        pytest.param(lambda tag: f'"other", {tag}', 304, id="tag-in-list"),
        pytest.param(lambda tag: '"other"', 200, id="other-tag"),
    ],
)
def test_if_none_match(app, if_none_match, status):
    create(app)
    etag = app.get("/v1/articles/1").headers["ETag"]
    headers = {"If-None-Match": if_none_match(etag)}
    response = app.get("/v1/articles/1", headers=headers, status=status)
    assert response.headers["ETag"] == etag
    if status == 304:
        assert response.body == b""
    else:
        assert response.json["id"] == 1


@pytest.mark.parametrize(
    ("if_match", "status"),
    [
        pytest.param(lambda tag: tag, 200, id="same-tag"),
        pytest.param(lambda tag: "*", 200, id="star"),
        pytest.param(lambda tag: f'"other", {tag}', 200, id="tag-in-list"),
        pytest.param(lambda tag: "W/" + tag, 412, id="weak-form-of-tag"),
        pytest.param(lambda tag: '"other"', 412, id="other-tag"),
        pytest.param(lambda tag: "", 412, id="empty-list"),
    ],
)
@pytest.mark.parametrize("path", ["/v1/articles/1", "/v1/articles?limit=1"])
def test_a_read_honours_if_match(app, if_match, status, path):
    # RFC 9110 section 13.1.1: an If-Match that names no current tag (strong
    # comparison) is 412 on any method; the error gives the tag (docs/api.md).
    create(app)
    etag = app.get(path).headers["ETag"]
    for method in ("GET", "HEAD"):
        answer = app.request(
            path, method=method, headers={"If-Match": if_match(etag)}, status=status
        )
        if status == 412 and method == "GET":
            assert_error(answer, 412, "PRECONDITION_FAILED")
            assert answer.json["details"]["etag"] == etag


def test_if_match_is_asked_before_if_none_match(app):
    create(app)
    etag = app.get("/v1/articles/1").headers["ETag"]
    both = {"If-Match": '"other"', "If-None-Match": etag}
    app.get("/v1/articles/1", headers=both, status=412)


def test_the_labs_echo_reads_if_match_as_data(anon):
    # The lab answers as httpbin does: a field to show, not a condition.
    answer = anon.get("/lab/get", headers={"If-Match": '"other"'}, status=200)
    assert answer.json["headers"]["If-Match"] == '"other"'


def test_etag_changes_when_the_article_changes(app):
    create(app)
    etag = app.get("/v1/articles/1").headers["ETag"]
    app.patch_json("/v1/articles/1", {"title": "Changed"})
    response = app.get("/v1/articles/1", headers={"If-None-Match": etag}, status=200)
    assert response.headers["ETag"] != etag
    assert response.json["title"] == "Changed"


MERGE = "application/merge-patch+json"


@pytest.mark.parametrize(
    ("patch", "content_type", "changes"),
    [
        pytest.param({"title": "New"}, JSON, {"title": "New"}, id="title"),
        pytest.param({"tags": ["z"]}, JSON, {"tags": ["z"]}, id="tags-replaced"),
        pytest.param({"tags": None}, JSON, {"tags": []}, id="tags-null-empties"),
        pytest.param(
            {"title": "N", "tags": []}, JSON, {"title": "N", "tags": []}, id="both"
        ),
        pytest.param({"title": "M"}, MERGE, {"title": "M"}, id="merge-patch-type"),
        pytest.param({}, JSON, {}, id="empty-patch-unchanged"),
    ],
)
def test_patch_merges(app, clock, patch, content_type, changes):
    created = create(app, tags=["a", "b"])
    clock.advance(60)
    response = app.patch_json(
        "/v1/articles/1", patch, headers={"Content-Type": content_type}, status=200
    )
    expected = {**created, **changes, "updatedAt": LATER if changes else CREATED}
    assert response.json == expected
    assert response.headers["Content-Type"] == JSON_TYPE
    assert app.get("/v1/articles/1").json == expected


def test_patch_title_null_is_400_and_changes_nothing(app):
    created = create(app)
    response = app.patch_json("/v1/articles/1", {"title": None}, status=400)
    assert_error(response, 400, "VALIDATION_ERROR")
    assert [e["field"] for e in response.json["details"]["errors"]] == ["/title"]
    assert app.get("/v1/articles/1").json == created


@pytest.mark.parametrize(
    ("if_match", "status"),
    [
        pytest.param(lambda tag: tag, 200, id="current-tag"),
        pytest.param(lambda tag: "*", 200, id="star"),
        pytest.param(lambda tag: f'"stale", {tag}', 200, id="tag-in-list"),
        pytest.param(lambda tag: '"stale"', 412, id="other-tag"),
        pytest.param(lambda tag: "W/" + tag, 412, id="weak-never-matches"),
    ],
)
def test_patch_honours_if_match(app, clock, if_match, status):
    created = create(app)
    etag = app.get("/v1/articles/1").headers["ETag"]
    clock.advance(60)
    response = app.patch_json(
        "/v1/articles/1",
        {"title": "New"},
        headers={"If-Match": if_match(etag)},
        status=status,
    )
    if status == 412:
        assert_error(response, 412, "PRECONDITION_FAILED")
        assert app.get("/v1/articles/1").json == created
    else:
        assert response.json == {**created, "title": "New", "updatedAt": LATER}


@pytest.mark.parametrize("content_type", [JSON, "application/merge-patch+json"])
def test_a_patch_answers_the_new_etag_so_the_next_if_match_needs_no_get(
    app, content_type
):
    create(app)
    first = app.patch(
        "/v1/articles/1", '{"title": "New"}', headers={"Content-Type": content_type}
    )
    assert first.headers["ETag"] == app.get("/v1/articles/1").headers["ETag"]
    second = app.patch_json(
        "/v1/articles/1",
        {"title": "Newer"},
        headers={"If-Match": first.headers["ETag"]},
    )
    assert second.json["title"] == "Newer"
    assert second.headers["ETag"] != first.headers["ETag"]


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        pytest.param(lambda tag: {"If-None-Match": "*"}, 412, id="star-exists"),
        pytest.param(lambda tag: {"If-None-Match": tag}, 412, id="current-tag"),
        pytest.param(lambda tag: {"If-None-Match": "W/" + tag}, 412, id="weak-matches"),
        pytest.param(lambda tag: {"If-None-Match": '"stale"'}, 200, id="other-tag"),
        pytest.param(lambda tag: {"If-Match": tag, "If-None-Match": "*"}, 412,
                     id="if-match-holds-then-star"),
        pytest.param(lambda tag: {"If-Match": '"stale"', "If-None-Match": '"x"'},
                     412, id="if-match-first"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("method", ["PATCH", "DELETE"])
def test_writes_honour_if_none_match(app, headers, status, method):
    """RFC 9110, 13.1.2: on a write, a matching If-None-Match (weak comparison; "*"
    for any current representation) is 412, after If-Match (13.2.2)."""
    created = create(app)
    etag = app.get("/v1/articles/1").headers["ETag"]
    response = app.request(
        "/v1/articles/1",
        method=method,
        body=b'{"title": "New"}',
        headers={"Content-Type": "application/json", **headers(etag)},
        status=status if method == "PATCH" or status == 412 else 204,
    )
    if status == 412:
        assert_error(response, 412, "PRECONDITION_FAILED")
        assert response.json["details"] == {"etag": etag}
        assert app.get("/v1/articles/1").json == created


def test_delete_answers_204_then_404(app):
    create(app)
    response = app.delete("/v1/articles/1", status=204)
    assert response.body == b""
    assert "Content-Type" not in response.headers
    assert_error(app.delete("/v1/articles/1", status=404), 404, "NOT_FOUND")
    assert_error(app.get("/v1/articles/1", status=404), 404, "NOT_FOUND")


def test_delete_with_stale_if_match_is_412_and_keeps_the_article(app):
    created = create(app)
    response = app.delete("/v1/articles/1", headers={"If-Match": '"stale"'}, status=412)
    assert_error(response, 412, "PRECONDITION_FAILED")
    assert app.get("/v1/articles/1").json == created


@pytest.mark.parametrize("method", ["GET", "PATCH", "DELETE"])
def test_unknown_article_is_404(app, method):
    create(app)
    response = app.request(
        "/v1/articles/2",
        method=method,
        body=b'{"title": "x"}' if method == "PATCH" else b"",
        content_type="application/json" if method == "PATCH" else None,
        expect_errors=True,
    )
    assert_error(response, 404, "NOT_FOUND")


@pytest.mark.parametrize(
    ("count", "query", "sizes"),
    [
        pytest.param(0, "", [0], id="empty-collection"),
        pytest.param(1, "", [1], id="one"),
        pytest.param(25, "", [20, 5], id="default-limit-20"),
        pytest.param(6, "?limit=3", [3, 3], id="exact-multiple-no-empty-page"),
        pytest.param(5, "?limit=2", [2, 2, 1], id="limit-2"),
    ],
)
def test_list_paginates_like_items(app, count, query, sizes):
    for n in range(count):
        create(app, f"article {n}")
    url, seen, page_sizes = "/v1/articles" + query, [], []
    while url:
        page = app.get(url, status=200)
        assert page.headers["Content-Type"] == JSON_TYPE
        assert set(page.json) == {"data", "nextCursor"}
        seen += [a["id"] for a in page.json["data"]]
        page_sizes.append(len(page.json["data"]))
        cursor = page.json["nextCursor"]
        if cursor is None:
            assert "X-Next-Cursor" not in page.headers
            assert "Link" not in page.headers
            url = None
        else:
            assert page.headers["X-Next-Cursor"] == cursor
            match = re.fullmatch(r'<([^>]+)>; rel="next"', page.headers["Link"])
            url = match.group(1)
            assert url.startswith(f"/v1/articles?cursor={cursor}&limit=")
    assert page_sizes == sizes
    assert seen == list(range(1, count + 1))


def test_writes_during_a_walk_neither_repeat_nor_skip(app):
    for n in range(5):
        create(app, f"article {n}")
    first = app.get("/v1/articles?limit=2").json
    app.delete("/v1/articles/3")
    create(app, "late")
    cursor = first["nextCursor"]
    rest = app.get("/v1/articles", params={"cursor": cursor, "limit": "10"}).json
    assert [a["id"] for a in first["data"] + rest["data"]] == [1, 2, 4, 5, 6]
    assert rest["nextCursor"] is None


# -- the tag filter ----------------------------------------------------------------


def ids(response) -> list[int]:
    return [a["id"] for a in response.json["data"]]


def next_link(response) -> str:
    return re.fullmatch(r'<([^>]+)>; rel="next"', response.headers["Link"]).group(1)


def test_tag_filter_lists_only_the_articles_carrying_the_tag(app):
    create(app, "one", ["a", "b"])
    create(app, "two", ["b"])
    create(app, "three", ["A"])  # exact: case matters
    create(app, "four", ["a"])
    page = app.get("/v1/articles", params={"tag": "a"}, status=200)
    assert page.json == {
        "data": [app.get(f"/v1/articles/{n}").json for n in (1, 4)],
        "nextCursor": None,
    }
    assert ids(app.get("/v1/articles?tag=b")) == [1, 2]
    assert ids(app.get("/v1/articles")) == [1, 2, 3, 4]


def test_a_tag_without_articles_is_an_empty_page(app):
    create(app, "one", ["a"])
    page = app.get("/v1/articles?tag=nothing", status=200)
    assert page.json == {"data": [], "nextCursor": None}
    assert "Link" not in page.headers


def test_a_tagged_walk_follows_creates_patches_and_deletes(app):
    for n in range(1, 7):
        create(app, f"article {n}", ["x"] if n % 2 else ["y"])  # x: 1, 3, 5
    first = app.get("/v1/articles?tag=x&limit=2")
    assert ids(first) == [1, 3]
    app.delete("/v1/articles/5")
    app.patch_json("/v1/articles/6", {"tags": ["y", "x"]})  # joins the filter
    app.patch_json("/v1/articles/3", {"tags": None})  # leaves it (already seen)
    create(app, "late", ["x"])  # id 7
    create(app, "other", ["y"])  # id 8
    create(app, "later", ["x"])  # id 9
    second = app.get(next_link(first))
    assert ids(second) == [6, 7]
    last = app.get(next_link(second))
    assert ids(last) == [9] and last.json["nextCursor"] is None
    assert ids(app.get("/v1/articles?tag=x")) == [1, 6, 7, 9]
    assert ids(app.get("/v1/articles?tag=y")) == [2, 4, 6, 8]


def test_the_next_link_carries_the_tag_percent_encoded(app):
    tag = "C++ & café/100%"
    for n in range(3):
        create(app, f"article {n}", [tag])
    page = app.get("/v1/articles", params={"tag": tag, "limit": "2"})
    cursor = page.json["nextCursor"]
    assert re.fullmatch(r"[A-Za-z0-9_-]+", cursor)
    assert next_link(page) == (
        f"/v1/articles?cursor={cursor}&limit=2&tag=C%2B%2B%20%26%20caf%C3%A9%2F100%25"
    )
    assert ids(app.get(next_link(page))) == [3]


@pytest.mark.parametrize(
    ("issued_for", "reused_with"),
    [
        pytest.param({"tag": "a"}, {"tag": "b"}, id="a-then-b"),
        pytest.param({"tag": "a"}, {}, id="a-then-none"),
        pytest.param({}, {"tag": "a"}, id="none-then-a"),
        pytest.param({"tag": "a"}, {"tag": "A"}, id="case-differs"),
    ],
)
def test_a_cursor_is_refused_under_another_filter(app, issued_for, reused_with):
    for n in range(3):
        create(app, f"article {n}", ["a", "b", "A"])
    cursor = app.get("/v1/articles", params={**issued_for, "limit": "1"}).json[
        "nextCursor"
    ]
    again = app.get("/v1/articles", params={**issued_for, "cursor": cursor})
    assert ids(again) == [2, 3]
    response = app.get(
        "/v1/articles", params={**reused_with, "cursor": cursor}, expect_errors=True
    )
    assert_error(response, 400, "INVALID_CURSOR")


@pytest.mark.parametrize(
    "query",
    [
        pytest.param("tag=", id="empty"),
        pytest.param("tag=" + "t" * 51, id="51-characters"),
        pytest.param("tag=a&tag=b", id="repeated"),
        pytest.param("tag=a&tag=a", id="repeated-same"),
    ],
)
def test_a_bad_tag_is_a_validation_error(app, query):
    response = app.get(f"/v1/articles?{query}", expect_errors=True)
    assert_error(response, 400, "VALIDATION_ERROR")
    assert [e["field"] for e in response.json["details"]["errors"]] == ["tag"]


def test_a_tag_of_50_characters_is_accepted(app):
    create(app, "long", ["é" * 50])
    assert ids(app.get("/v1/articles", params={"tag": "é" * 50})) == [1]


# -- who may change an article (object-level authorization) ----------------------

ANA = {"email": "ana@example.com", "password": "ana-password"}
BEN = {"email": "ben@example.com", "password": "ben-password"}


@pytest.fixture
def callers(app, anon) -> dict[str, dict[str, str]]:
    """The environs of Ana (user 2), Ben (user 3), OAuth client 3 and the admin."""
    environs = {"admin": app.extra_environ}
    for name, person in (("ana", ANA), ("ben", BEN)):
        anon.post_json("/api/users", person, status=201)
        environs[name] = bearer(anon, person["email"], person["password"])
    for n in range(3):  # clients 1, 2 and 3
        client = app.post_json("/api/oauth-clients", {"name": f"c{n}"}).json
    form = {"grant_type": "client_credentials", "client_id": client["clientId"],
            "client_secret": client["clientSecret"]}  # fmt: skip
    token = anon.post("/oauth/token", form).json["access_token"]
    environs["client 3"] = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    return environs


def write(app, method: str, environ: dict[str, str], status: int, headers=None):
    """PATCH (a new title) or DELETE article 1 as the caller of ``environ``."""
    if method == "PATCH":
        return app.patch_json(
            "/v1/articles/1", {"title": "Changed"},
            extra_environ=environ, headers=headers, status=status,
        )  # fmt: skip
    return app.delete(
        "/v1/articles/1", extra_environ=environ, headers=headers, status=status
    )


@pytest.mark.parametrize(
    ("author", "writer", "status"),
    [
        pytest.param("ana", "ana", 200, id="the-author"),
        pytest.param("ana", "ben", 403, id="another-user"),
        pytest.param("ben", "client 3", 403, id="client-3-is-not-user-3"),
        pytest.param("client 3", "ben", 403, id="user-3-is-not-client-3"),
        pytest.param("client 3", "client 3", 200, id="the-author-client"),
        pytest.param("ana", "admin", 200, id="an-admin"),
    ],
)
@pytest.mark.parametrize("method", ["PATCH", "DELETE"])
def test_only_the_author_or_an_admin_changes_an_article(
    anon, callers, author, writer, status, method
):
    created = anon.post_json(
        "/v1/articles", {"title": "Mine"}, extra_environ=callers[author], status=201
    ).json
    kind, number = ("client", 3) if author == "client 3" else ("user", None)
    assert created["author"]["type"] == kind
    assert number is None or created["author"]["id"] == number
    response = write(anon, method, callers[writer], status if status == 403 else "*")
    if status == 403:
        assert_error(response, 403, "FORBIDDEN")
        assert anon.get("/v1/articles/1").json == created  # nothing changed
    else:
        assert response.status_int == (200 if method == "PATCH" else 204)


@pytest.mark.parametrize(
    ("content_type", "body"), refused_bodies(b'{"title": ""}', 16 * 1024)
)
def test_a_stranger_gets_403_before_the_body_is_read(anon, callers, content_type, body):
    # Authorization before the body (docs/api.md, "The order of checks"): a
    # stranger is told they may not, not to mend a body that could never pass.
    anon.post_json("/v1/articles", {"title": "Mine"}, extra_environ=callers["ana"])
    refused = anon.patch(
        "/v1/articles/1", body, extra_environ=callers["ben"], status=403,
        headers={"Content-Type": content_type},
    )  # fmt: skip
    assert_error(refused, 403, "FORBIDDEN")
    # The author with the same body meets the body's own refusal.
    mended = anon.patch(
        "/v1/articles/1", body, extra_environ=callers["ana"], status="4*",
        headers={"Content-Type": content_type},
    )  # fmt: skip
    assert mended.status_int in (400, 413, 415)
    # An article that is not there: its 404 is the endpoint's rule, after the body.
    missing = anon.patch(
        "/v1/articles/9", body, extra_environ=callers["ben"], status="4*",
        headers={"Content-Type": content_type},
    )  # fmt: skip
    assert missing.status_int == mended.status_int


def test_a_stranger_gets_403_before_if_match_is_looked_at(anon, callers):
    anon.post_json("/v1/articles", {"title": "Mine"}, extra_environ=callers["ana"])
    etag = anon.get("/v1/articles/1").headers["ETag"]
    for method in ("PATCH", "DELETE"):
        # A right tag and a wrong one get the same answer: the tags stay unprobed.
        for tag in (etag, '"stale"'):
            write(anon, method, callers["ben"], 403, headers={"If-Match": tag})
    # 404 first: a missing article is missing to everyone.
    missing = anon.delete("/v1/articles/2", extra_environ=callers["ben"], status=404)
    assert_error(missing, 404, "NOT_FOUND")
    # The author with a stale tag: 412.
    write(anon, "PATCH", callers["ana"], 412, headers={"If-Match": '"stale"'})


def test_an_article_without_an_author_is_the_admins_alone(store, anon, callers):
    # As every article stored before authors were kept (migration 008).
    old = store.create_article("From before", [], START)
    assert old["author"] is None
    assert anon.get("/v1/articles/1").json["author"] is None
    for who in ("ana", "client 3"):
        for method in ("PATCH", "DELETE"):
            write(anon, method, callers[who], 403)
    assert anon.get("/v1/articles/1").json == old
    write(anon, "PATCH", callers["admin"], 200)
    write(anon, "DELETE", callers["admin"], 204)


def test_the_author_comes_from_the_credential_never_the_body(anon, callers):
    forged = {"title": "x", "author": {"type": "user", "id": 1}}
    response = anon.post_json(
        "/v1/articles", forged, extra_environ=callers["ana"], status=400
    )
    assert_error(response, 400, "VALIDATION_ERROR")
    assert [e["field"] for e in response.json["details"]["errors"]] == ["/author"]
    anon.post_json("/v1/articles", {"title": "x"}, extra_environ=callers["ana"])
    patch = anon.patch_json("/v1/articles/1", {"author": None},
                            extra_environ=callers["ana"], status=400)  # fmt: skip
    assert_error(patch, 400, "VALIDATION_ERROR")


@pytest.mark.parametrize(
    ("accept", "body"),
    [
        pytest.param(
            "application/xml",
            '<?xml version="1.0" encoding="UTF-8"?>\n<articles>'
            "<article><id>1</id><title>By Ana</title><author>user:2</author>"
            f"<createdAt>{CREATED}</createdAt><updatedAt>{CREATED}</updatedAt>"
            "</article><article><id>2</id><title>By the client</title>"
            f"<author>client:3</author><createdAt>{CREATED}</createdAt>"
            f"<updatedAt>{CREATED}</updatedAt></article><article><id>3</id>"
            f"<title>From before</title><author/><createdAt>{CREATED}</createdAt>"
            f"<updatedAt>{CREATED}</updatedAt></article></articles>",
            id="xml",
        ),
        pytest.param(
            "text/csv",
            "id,title,tags,author,createdAt,updatedAt\r\n"
            f"1,By Ana,[],user:2,{CREATED},{CREATED}\r\n"
            f"2,By the client,[],client:3,{CREATED},{CREATED}\r\n"
            f"3,From before,[],,{CREATED},{CREATED}\r\n",
            id="csv",
        ),
    ],
)
def test_xml_and_csv_write_the_author_as_type_and_id(
    store, anon, callers, accept, body
):
    anon.post_json("/v1/articles", {"title": "By Ana"}, extra_environ=callers["ana"])
    anon.post_json("/v1/articles", {"title": "By the client"},
                   extra_environ=callers["client 3"])  # fmt: skip
    store.create_article("From before", [], START)
    assert anon.get("/v1/articles", headers={"Accept": accept}).text == body
