"""The proxy over gunicorn, configured only from the environment: an allow-listed
upstream on loopback passes, the same address without the opt-in is refused."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from urllib.parse import quote

import pytest

from tests.handlers.test_proxy import Upstream

pytestmark = pytest.mark.e2e


@pytest.fixture
def upstream() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_the_proxy_fetches_an_allowed_upstream_and_refuses_loopback(
    gunicorn, pool, upstream
):
    allowed = f"127.0.0.1:{upstream}+private,localhost:{upstream}"
    server = gunicorn(workers=1, env={"REFAPI_PROXY_ALLOWED_HOSTS": allowed})

    def proxy(url: str):
        return pool.request(
            "GET", server.url(f"/api/proxy.php?url={quote(url, safe='')}")
        )

    passed = proxy(f"http://127.0.0.1:{upstream}/missing")
    assert passed.status == 404
    assert passed.headers["Content-Type"] == "application/json; charset=utf-8"
    assert json.loads(passed.data) == {"error": "no such thing"}
    refused = proxy(f"http://localhost:{upstream}/ok")  # listed, but no opt-in
    assert refused.status == 403
    assert json.loads(refused.data)["code"] == "HOST_NOT_ALLOWED"
