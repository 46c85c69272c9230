"""The gateway example under gunicorn: /prod and /dev in every worker of one server.

Each worker builds both instances at boot; both databases are made then, and each
instance's secret key is kept in its own database, so every worker signs /dev's
cursors alike and none of them is good at /prod. In process: tests/test_mount.py.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e


def test_gunicorn_serves_prod_and_dev_from_one_process(gunicorn, pool, tmp_path):
    prod_db, dev_db = tmp_path / "prod.db", tmp_path / "dev.db"
    server = gunicorn(
        workers=2,
        db_path=prod_db,
        env={
            "PROD_DATABASE_URL": f"sqlite:///{prod_db}",
            "DEV_DATABASE_URL": f"sqlite:///{dev_db}",
        },
        app="examples.gateway:create_gateway()",
        health="/prod/healthz",
    )
    assert prod_db.exists() and dev_db.exists()  # made at start, before any request
    assert pool.request("GET", server.url("/dev/healthz")).status == 200

    created = pool.request(
        "POST", server.url("/prod/v1/articles"), json={"title": "in prod"}
    )
    assert created.status == 201
    location = created.headers["Location"]
    assert location == f"/prod/v1/articles/{created.json()['id']}"
    assert pool.request("GET", server.url(location)).json() == created.json()
    assert pool.request("GET", server.url("/dev/v1/articles")).json()["data"] == []
    dev_created = pool.request(
        "POST", server.url("/dev/v1/articles"), json={"title": "in dev"}
    )
    assert dev_created.headers["Location"].startswith("/dev/v1/articles/")

    page = pool.request("GET", server.url("/dev/v1/items?limit=2"))
    cursor = page.headers["X-Next-Cursor"]
    next_url = f"/dev/v1/items?cursor={cursor}&limit=2"
    assert page.headers["Link"] == f'<{next_url}>; rel="next"'
    # New connections, so any worker may answer: each reads /dev's key from dev.db.
    for _ in range(4):
        again = pool.request(
            "GET", server.url(next_url), headers={"Connection": "close"}
        )
        assert again.status == 200
        assert [item["id"] for item in again.json()["data"]] == [3, 4]
    refused = pool.request("GET", server.url(f"/prod/v1/items?cursor={cursor}"))
    assert refused.status == 400 and refused.json()["code"] == "INVALID_CURSOR"

    unmapped = pool.request("GET", server.url("/staging/v1/items"))
    assert unmapped.status == 404
    assert unmapped.json()["code"] == "NOT_FOUND"
    assert unmapped.headers["X-Request-Id"]
    assert unmapped.headers["X-Content-Type-Options"] == "nosniff"
    assert server.log_failures() == []
