"""The demo endpoint over gunicorn: every action, its errors, and a walk of the list
whose cursors any of the workers redeems."""

from __future__ import annotations

import re
from urllib.parse import urljoin

import pytest

pytestmark = pytest.mark.e2e

DEMO = "/api/demo.php"
_LINK_NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')


@pytest.mark.fresh_server  # its note is note 1, the list holds it alone
def test_the_five_actions_and_their_errors(server, pool):
    made = pool.request(
        "POST", server.url(f"{DEMO}?action=create"), json={"text": "first"}
    )
    assert made.status == 201, made.data
    location = made.headers["Location"]
    assert location == f"{DEMO}?action=detail&id=1"
    detail = pool.request("GET", server.url(location))
    assert detail.status == 200 and detail.json() == made.json()

    updated = pool.request(
        "PATCH", server.url(f"{DEMO}?action=update&id=1"), json={"text": "second"}
    )
    assert updated.status == 200 and updated.json()["text"] == "second"
    csv = pool.request(
        "GET", server.url(f"{DEMO}?action=list"), headers={"Accept": "text/csv"}
    )
    assert csv.status == 200
    assert csv.data.decode().startswith("id,text,createdAt\r\n1,second,")

    gone = pool.request("DELETE", server.url(f"{DEMO}?action=delete&id=1"))
    assert gone.status == 204 and gone.data == b""
    assert pool.request("GET", server.url(location)).status == 404

    unknown = pool.request("GET", server.url(f"{DEMO}?action=nope"))
    assert unknown.status == 400 and unknown.json()["code"] == "UNKNOWN_ACTION"
    wrong = pool.request("POST", server.url(f"{DEMO}?action=list"))
    assert wrong.status == 405 and wrong.headers["Allow"] == "GET, HEAD, OPTIONS"
    no_id = pool.request("GET", server.url(f"{DEMO}?action=detail"))
    assert no_id.status == 400 and no_id.json()["code"] == "VALIDATION_ERROR"


@pytest.mark.fresh_server  # the list holds its seven notes alone
def test_the_list_walks_by_link_across_workers(server, pool):
    for n in range(7):
        response = pool.request(
            "POST", server.url(f"{DEMO}?action=create"), json={"text": f"n{n}"}
        )
        assert response.status == 201
    url = server.url(f"{DEMO}?action=list&limit=2")
    seen: list[str] = []
    for _ in range(10):
        response = pool.request("GET", url)
        assert response.status == 200, response.data
        seen += [note["text"] for note in response.json()["data"]]
        link = response.headers.get("Link")
        if link is None:
            break
        url = urljoin(url, _LINK_NEXT.fullmatch(link).group(1))
    assert seen == [f"n{n}" for n in range(7)]
