"""The demo endpoint: five actions on one path, picked by ``action``."""

from __future__ import annotations

import re
import threading

import pytest

from refapi.config import Config
from tests.helpers import assert_error

DEMO = "/api/demo.php"
ACTIONS = ["create", "delete", "detail", "list", "update"]


def create(app, text: str = "Remember the milk"):
    return app.post_json(f"{DEMO}?action=create", {"text": text}, status=201)


def test_create_answers_201_with_the_note_and_its_location(app):
    response = create(app)
    note = response.json
    assert note == {
        "id": 1,
        "text": "Remember the milk",
        "createdAt": note["createdAt"],
    }
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", note["createdAt"])
    assert response.headers["Location"] == f"{DEMO}?action=detail&id=1"
    assert app.get(response.headers["Location"], status=200).json == note


def test_detail_update_delete_walk_one_note(app):
    note = create(app).json
    updated = app.patch_json(
        f"{DEMO}?action=update&id={note['id']}", {"text": "Buy bread"}, status=200
    ).json
    assert updated == {**note, "text": "Buy bread"}
    assert app.get(f"{DEMO}?action=detail&id={note['id']}").json == updated
    response = app.delete(f"{DEMO}?action=delete&id={note['id']}", status=204)
    assert response.body == b""
    for method, action in (("get", "detail"), ("delete", "delete")):
        missing = getattr(app, method)(
            f"{DEMO}?action={action}&id={note['id']}", expect_errors=True
        )
        assert_error(missing, 404, "NOT_FOUND")
    missing = app.patch_json(
        f"{DEMO}?action=update&id={note['id']}", {"text": "x"}, expect_errors=True
    )
    assert_error(missing, 404, "NOT_FOUND")


def test_list_is_paginated_like_items_and_its_next_link_keeps_the_action(app):
    for n in range(5):
        create(app, f"note {n}")
    first = app.get(f"{DEMO}?action=list&limit=2", status=200)
    assert [n["text"] for n in first.json["data"]] == ["note 0", "note 1"]
    cursor = first.json["nextCursor"]
    assert first.headers["X-Next-Cursor"] == cursor
    link = re.fullmatch(r'<([^>]+)>; rel="next"', first.headers["Link"]).group(1)
    assert link == f"{DEMO}?action=list&cursor={cursor}&limit=2"
    second = app.get(link, status=200)
    assert [n["text"] for n in second.json["data"]] == ["note 2", "note 3"]
    last = app.get(f"{DEMO}?action=list&limit=2&cursor={second.json['nextCursor']}")
    assert [n["text"] for n in last.json["data"]] == ["note 4"]
    assert last.json["nextCursor"] is None and "Link" not in last.headers


def test_an_empty_list(app):
    assert app.get(f"{DEMO}?action=list").json == {"data": [], "nextCursor": None}


def test_a_cursor_of_another_collection_is_refused(app):
    items = app.get("/v1/items?limit=1").json["nextCursor"]
    response = app.get(f"{DEMO}?action=list&cursor={items}", expect_errors=True)
    assert_error(response, 400, "INVALID_CURSOR")


@pytest.mark.parametrize("limit", ["0", "101", "x", ""])
def test_a_bad_limit_is_a_validation_error(app, limit):
    response = app.get(f"{DEMO}?action=list&limit={limit}", expect_errors=True)
    assert_error(response, 400, "VALIDATION_ERROR")
    assert response.json["details"]["errors"][0]["field"] == "limit"


@pytest.mark.parametrize(
    "query",
    ["", "?action=", "?action=nope", "?action=LIST", "?action=list&action=detail"],
)
def test_a_missing_or_unknown_action_is_400_listing_the_actions(app, query):
    response = app.get(DEMO + query, expect_errors=True)
    assert_error(response, 400, "UNKNOWN_ACTION")
    assert response.json["details"] == {"allowed": ACTIONS}


@pytest.mark.parametrize(
    ("method", "action", "allow"),
    [
        ("POST", "list", "GET, HEAD, OPTIONS"),
        ("DELETE", "detail", "GET, HEAD, OPTIONS"),
        ("GET", "create", "OPTIONS, POST"),
        ("POST", "update", "OPTIONS, PATCH"),
        ("PATCH", "delete", "DELETE, OPTIONS"),
    ],
)
def test_a_known_action_with_another_method_is_405_with_its_allow(
    app, method, action, allow
):
    response = app.request(
        f"{DEMO}?action={action}&id=1", method=method, expect_errors=True
    )
    assert_error(response, 405, "METHOD_NOT_ALLOWED")
    assert response.headers["Allow"] == allow


def test_a_method_no_action_answers_is_405_before_the_action_is_read(app):
    response = app.request(f"{DEMO}?action=nope", method="PUT", expect_errors=True)
    assert_error(response, 405, "METHOD_NOT_ALLOWED")
    assert response.headers["Allow"] == "DELETE, GET, HEAD, OPTIONS, PATCH, POST"


@pytest.mark.parametrize("query", ["", "?action=update", "?action=create&id=1"])
def test_options_names_every_method_of_the_path_whatever_the_action(app, query):
    # As the OpenAPI document lists them: it has one operation per method of the
    # path and cannot tell actions apart. A wrong method's 405 names the action's.
    response = app.options(DEMO + query, status=204)
    assert response.headers["Allow"] == "DELETE, GET, HEAD, OPTIONS, PATCH, POST"


@pytest.mark.parametrize(
    ("method", "action"), [("GET", "detail"), ("PATCH", "update"), ("DELETE", "delete")]
)
def test_a_missing_id_is_a_validation_error(app, method, action):
    response = app.request(
        f"{DEMO}?action={action}",
        method=method,
        body=b'{"text": "x"}',
        content_type="application/json",
        expect_errors=True,
    )
    assert_error(response, 400, "VALIDATION_ERROR")
    assert response.json["details"]["errors"] == [
        {"field": "id", "message": "is required"}
    ]


@pytest.mark.parametrize("bad_id", ["0", "-1", "abc", "1.5", "9" * 30, ""])
def test_a_bad_id_is_a_validation_error(app, bad_id):
    response = app.get(f"{DEMO}?action=detail&id={bad_id}", expect_errors=True)
    assert_error(response, 400, "VALIDATION_ERROR")
    assert response.json["details"]["errors"][0]["field"] == "id"


def test_leading_zeros_name_the_same_note(app):
    create(app)
    assert app.get(f"{DEMO}?action=detail&id=0001").json["id"] == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "/text"),
        ({"text": ""}, "/text"),
        ({"text": "x" * 1001}, "/text"),
        ({"text": 5}, "/text"),
        ({"text": "ok", "extra": 1}, "/extra"),
    ],
)
def test_the_body_is_validated_on_create_and_update(app, body, field):
    create(app)
    for method, action in (("post", "create"), ("patch", "update&id=1")):
        response = getattr(app, f"{method}_json")(
            f"{DEMO}?action={action}", body, expect_errors=True
        )
        assert_error(response, 400, "VALIDATION_ERROR")
        assert response.json["details"]["errors"][0]["field"] == field
    assert app.get(f"{DEMO}?action=detail&id=1").json["text"] == "Remember the milk"


def test_a_body_that_is_not_json_is_415_and_broken_json_400(app):
    response = app.post(
        f"{DEMO}?action=create", "text=x", content_type="text/plain", status=415
    )
    assert response.json["code"] == "UNSUPPORTED_MEDIA_TYPE"
    response = app.post(
        f"{DEMO}?action=create", "{", content_type="application/json", status=400
    )
    assert response.json["code"] == "INVALID_JSON"


def test_text_of_1000_characters_is_kept_whole(app):
    text = "é" * 999 + "!"
    assert create(app, text).json["text"] == text


@pytest.mark.parametrize(
    ("accept", "content_type", "body"),
    [
        (
            "application/xml",
            "application/xml; charset=utf-8",
            "<notes><note><id>1</id><text>a &lt;b&gt;</text>",
        ),
        ("text/csv", "text/csv; charset=utf-8", "id,text,createdAt\r\n1,a <b>,"),
    ],
)
def test_list_and_detail_offer_xml_and_csv(app, accept, content_type, body):
    create(app, "a <b>")
    listed = app.get(f"{DEMO}?action=list", headers={"Accept": accept})
    assert listed.headers["Content-Type"] == content_type
    assert body in listed.text
    single = app.get(f"{DEMO}?action=detail&id=1", headers={"Accept": accept})
    assert single.headers["Content-Type"] == content_type


def test_the_vendor_type_is_read_as_json_here(app):
    create(app)
    vendor = "application/vnd.refapi+json;version=7"
    response = app.get(f"{DEMO}?action=detail&id=1", headers={"Accept": vendor})
    assert response.headers["Content-Type"] == "application/json; charset=utf-8"


def test_detail_has_an_etag_and_answers_304(app):
    create(app)
    first = app.get(f"{DEMO}?action=detail&id=1")
    again = app.get(
        f"{DEMO}?action=detail&id=1",
        headers={"If-None-Match": first.headers["ETag"]},
        status=304,
    )
    assert again.body == b""


def test_head_of_list_has_the_headers_of_get_and_no_body(app):
    create(app)
    get = app.get(f"{DEMO}?action=list")
    head = app.head(f"{DEMO}?action=list", status=200)
    assert head.body == b""
    assert head.headers["Content-Length"] == get.headers["Content-Length"]


def test_notes_are_kept_apart_from_articles(app):
    create(app)
    app.post_json("/v1/articles", {"title": "A"}, status=201)
    assert app.get("/v1/articles/1").json["title"] == "A"
    assert app.get(f"{DEMO}?action=detail&id=1").json["text"] == "Remember the milk"


def test_under_a_mount_point_location_and_link_carry_it(app):
    create(app)
    create(app)
    environ = {"SCRIPT_NAME": "/dev"}
    made = app.post_json(
        f"{DEMO}?action=create", {"text": "x"}, extra_environ=environ, status=201
    )
    assert made.headers["Location"] == f"/dev{DEMO}?action=detail&id=3"
    page = app.get(f"{DEMO}?action=list&limit=1", extra_environ=environ)
    assert page.headers["Link"].startswith(f"</dev{DEMO}?action=list&cursor=")


def test_reset_empties_the_notes_and_restarts_their_ids(app, store):
    create(app)
    store.reset()
    assert app.get(f"{DEMO}?action=list").json["data"] == []
    assert create(app).json["id"] == 1


def ids(app) -> list[int]:
    return [n["id"] for n in app.get(f"{DEMO}?action=list").json["data"]]


def test_a_create_beyond_the_cap_removes_the_oldest_note(make_app):
    anon = make_app(anonymous=True, demo_max_notes=3)  # the demo is public
    for n in range(1, 6):
        create(anon, f"note {n}")
    assert ids(anon) == [3, 4, 5]
    for gone in (1, 2):
        missing = anon.get(f"{DEMO}?action=detail&id={gone}", expect_errors=True)
        assert_error(missing, 404, "NOT_FOUND")
    assert anon.get(f"{DEMO}?action=detail&id=3").json["text"] == "note 3"


def test_the_cap_counts_notes_not_ids(make_app):
    # A note deleted by hand leaves room: nothing else goes until the count is over.
    anon = make_app(anonymous=True, demo_max_notes=3)
    for n in range(3):
        create(anon, f"note {n}")
    anon.delete(f"{DEMO}?action=delete&id=2", status=204)
    create(anon)
    assert ids(anon) == [1, 3, 4]
    create(anon)
    assert ids(anon) == [3, 4, 5]


def test_a_lower_cap_after_a_restart_trims_at_the_next_create(make_app):
    before = make_app(anonymous=True, demo_max_notes=5)
    for n in range(5):
        create(before, f"note {n}")
    after = make_app(anonymous=True, demo_max_notes=2)
    create(after)
    assert ids(after) == [5, 6]


def test_concurrent_creates_never_leave_more_than_the_cap(store):
    # Several threads, each with its own SQLite connection, as workers would be.
    cap, threads, each = 3, 6, 5
    counts: list[int] = []

    def writer(n: int) -> None:
        for k in range(each):
            store.create_note(f"{n}.{k}", 1_795_000_000.0, keep=cap)
            counts.append(len(store.list_notes(0, 100)))

    workers = [threading.Thread(target=writer, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    assert len(counts) == threads * each
    assert max(counts) <= cap
    assert [n["id"] for n in store.list_notes(0, 100)] == [28, 29, 30]


def test_the_environment_sets_the_cap():
    assert Config.from_env({}).demo_max_notes == 1000
    assert Config.from_env({"REFAPI_DEMO_MAX_NOTES": "3"}).demo_max_notes == 3
    for refused in ("0", "-5", "ten"):
        with pytest.raises(ValueError, match="REFAPI_DEMO_MAX_NOTES|demo_max_notes"):
            Config.from_env({"REFAPI_DEMO_MAX_NOTES": refused})
