"""The tag filter over gunicorn: a walk of one tag by ``Link``, its cursors redeemed
by whichever of four workers takes the connection, and refused under another tag."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urljoin, urlsplit

import pytest

pytestmark = pytest.mark.e2e

_LINK_NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')
TAG = "café & co"


@pytest.mark.fresh_server  # its articles are 1 to 30
def test_a_tag_walk_follows_link_across_workers(server, pool):
    for n in range(1, 31):
        tags = [TAG] if n % 3 == 0 else ["other"]
        response = pool.request(
            "POST", server.url("/v1/articles"), json={"title": f"a{n}", "tags": tags}
        )
        assert response.status == 201, response.data
    url = server.url("/v1/articles?" + "tag=caf%C3%A9+%26+co&limit=3")
    seen = []
    for _ in range(10):
        response = pool.request("GET", url)
        assert response.status == 200, response.data
        seen += [a["id"] for a in response.json()["data"]]
        link = response.headers.get("Link")
        if link is None:
            break
        target = urlsplit(_LINK_NEXT.fullmatch(link).group(1))
        assert parse_qs(target.query)["tag"] == [TAG]
        if len(seen) == 6:  # mid-walk: one joins the tag ahead, one leaves behind
            patch = {"tags": [TAG]}
            assert (
                pool.request("PATCH", server.url("/v1/articles/20"), json=patch).status
                == 200
            )
            patch = {"tags": None}
            assert (
                pool.request("PATCH", server.url("/v1/articles/3"), json=patch).status
                == 200
            )
        url = urljoin(url, target.geturl())
    assert seen == [3, 6, 9, 12, 15, 18, 20, 21, 24, 27, 30]

    first = pool.request("GET", server.url("/v1/articles?tag=other&limit=2"))
    cursor = first.json()["nextCursor"]
    reused = pool.request(
        "GET", server.url(f"/v1/articles?cursor={cursor}&tag=caf%C3%A9")
    )
    assert reused.status == 400
    assert reused.json()["code"] == "INVALID_CURSOR"
