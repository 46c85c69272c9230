"""The interactive docs over gunicorn, mounted under a prefix: the page and every
file it references load from the server itself, whole and under the policy."""

from __future__ import annotations

import pytest

from tests.handlers.test_docs import CSP, Page

pytestmark = pytest.mark.e2e


def test_the_docs_page_and_everything_it_loads_come_from_the_server(gunicorn, pool):
    # gunicorn takes the mount point from SCRIPT_NAME, as a gateway mapping would.
    server = gunicorn(workers=1, env={"SCRIPT_NAME": "/prod"}, ready="listening")
    page = pool.request("GET", server.url("/prod/docs"))
    assert page.status == 200
    assert page.headers["Content-Type"] == "text/html; charset=utf-8"
    assert page.headers["Content-Security-Policy"] == CSP
    parsed = Page(page.data.decode())
    assert parsed.openapi == "/prod/openapi.json"
    # Swagger UI's two files, ours (docs.css), two icons, the initializer; and
    # links to the two documents, which the page does not load.
    assert len(parsed.loads) == 6
    assert parsed.links == [("/prod/docs", "page"), ("/prod/docs?document=lab", None)]
    for url in parsed.loads:
        assert url.startswith("/prod/docs/")
        response = pool.request("GET", server.url(url))
        assert response.status == 200, url
        assert response.headers["Content-Security-Policy"] == CSP
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert int(response.headers["Content-Length"]) == len(response.data) > 0
        etag = response.headers["ETag"]
        again = pool.request("GET", server.url(url), headers={"If-None-Match": etag})
        assert again.status == 304 and again.data == b"", url
    assert server.log_failures() == []
