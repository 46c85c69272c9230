"""Items: 1,000 seeded records walked by signed keyset cursors."""

from __future__ import annotations

import re

import pytest
import webtest

from refapi import create_app
from refapi.config import Config
from tests.conftest import TEST_AUTH, as_admin
from tests.helpers import assert_error

JSON_TYPE = "application/json; charset=utf-8"


def item(n: int) -> dict:
    hours, minutes = divmod(n, 60)
    stamp = f"2026-01-{1 + hours // 24:02d}T{hours % 24:02d}:{minutes:02d}:00Z"
    return {"id": n, "name": f"item {n:04d}", "createdAt": stamp}


def next_link(response) -> str:
    return re.fullmatch(r'<([^>]+)>; rel="next"', response.headers["Link"]).group(1)


@pytest.mark.parametrize(
    ("query", "size"),
    [
        pytest.param("", 20, id="default-20"),
        pytest.param("?limit=1", 1, id="limit-1"),
        pytest.param("?limit=7", 7, id="limit-7"),
        pytest.param("?limit=100", 100, id="limit-100-max"),
    ],
)
def test_first_page(app, query, size):
    response = app.get("/v1/items" + query, status=200)
    assert response.headers["Content-Type"] == JSON_TYPE
    assert response.json["data"] == [item(n) for n in range(1, size + 1)]
    cursor = response.json["nextCursor"]
    assert re.fullmatch(r"[A-Za-z0-9_.-]+", cursor)
    assert response.headers["X-Next-Cursor"] == cursor
    assert next_link(response) == f"/v1/items?cursor={cursor}&limit={size}"


def test_walk_with_limit_7_visits_every_item_once_in_order(make_app):
    app = make_app(rate_limit_capacity=1000)  # 143 pages in one burst
    seen, pages, cursor = [], 0, None
    while True:
        params = {"limit": "7"} if cursor is None else {"limit": "7", "cursor": cursor}
        page = app.get("/v1/items", params=params, status=200).json
        seen += [record["id"] for record in page["data"]]
        pages += 1
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert seen == list(range(1, 1001))
    assert pages == 143  # 142 full pages and one of 6


def test_following_link_headers_reaches_the_last_page(app):
    url, pages = "/v1/items?limit=100", []
    while url:
        response = app.get(url, status=200)
        pages.append(response)
        url = next_link(response) if "Link" in response.headers else None
    last = pages[-1]
    assert len(pages) == 10
    assert last.json == {
        "data": [item(n) for n in range(901, 1001)],
        "nextCursor": None,
    }
    assert "X-Next-Cursor" not in last.headers
    assert [p.json["data"][0]["id"] for p in pages] == list(range(1, 1001, 100))


def test_item_fields(app):
    assert app.get("/v1/items?limit=2").json["data"] == [
        {"id": 1, "name": "item 0001", "createdAt": "2026-01-01T00:01:00Z"},
        {"id": 2, "name": "item 0002", "createdAt": "2026-01-01T00:02:00Z"},
    ]


def test_a_cursor_survives_a_restart(database_url, clock):
    # No configured key: the one generated on the first start, kept with the data,
    # signs for the next start too (a fixed key would hide its loss).
    config = Config(**TEST_AUTH, database_url=database_url)
    first = create_app(config, clock=clock)
    try:
        cursor = webtest.TestApp(first).get("/v1/items?limit=5").json["nextCursor"]
    finally:
        first.close()
    restarted = create_app(config, clock=clock)
    try:
        page = webtest.TestApp(restarted).get(
            "/v1/items", params={"cursor": cursor, "limit": "5"}, expect_errors=True
        )
        assert page.status_int == 200, page.json
        assert [record["id"] for record in page.json["data"]] == [6, 7, 8, 9, 10]
    finally:
        restarted.close()


def test_the_configured_secret_key_signs_cursors(database_urls, clock):
    # docs/configuration.md: REFAPI_SECRET_KEY signs cursors and sessions, so two
    # instances configured with one key accept each other's cursors.
    apps, stores = [], []
    for name in ("prod", "dev"):
        url = database_urls(name)
        config = Config(**TEST_AUTH, database_url=url, secret_key=b"shared")
        stores.append(config.open_store())
        apps.append(webtest.TestApp(create_app(config, store=stores[-1], clock=clock)))
    try:
        cursor = apps[0].get("/v1/items?limit=5").json["nextCursor"]
        page = apps[1].get("/v1/items", params={"cursor": cursor}, expect_errors=True)
        assert page.status_int == 200, page.json
        assert page.json["data"][0] == item(6)
    finally:
        for store in stores:
            store.close()


@pytest.mark.parametrize(
    "secret_key", [None, b"configured"], ids=["stored-key", "configured-key"]
)
def test_a_cursor_from_before_a_reset_is_invalid(database_url, clock, secret_key):
    # After a reset the ids start again: an old cursor would land on other records.
    config = Config(**TEST_AUTH, database_url=database_url, secret_key=secret_key)
    service = create_app(config, clock=clock)
    try:
        app = as_admin(webtest.TestApp(service))
        for title in ("a", "b", "c"):
            app.post_json("/v1/articles", {"title": title}, status=201)
        old = {
            path: app.get(path, params={"limit": "1"}).json["nextCursor"]
            for path in ("/v1/articles", "/v1/items")
        }
        other = config.open_store()  # as `make reset` does, on its own store
        other.reset()
        other.close()
        for title in ("x", "y", "z"):
            app.post_json("/v1/articles", {"title": title}, status=201)
        for path, cursor in old.items():
            refused = app.get(path, params={"cursor": cursor}, status=400)
            assert_error(refused, 400, "INVALID_CURSOR")
            assert "reset" in refused.json["message"]
        fresh = app.get("/v1/articles", params={"limit": "1"}).json["nextCursor"]
        page = app.get("/v1/articles", params={"cursor": fresh, "limit": "1"})
        assert [article["title"] for article in page.json["data"]] == ["y"]
    finally:
        service.close()
