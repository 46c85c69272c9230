"""``Cache-Control: no-store`` on every answer that carries or depends on a
credential (docs/authentication.md): a credential route's answers to a method it
does not serve and to OPTIONS as well, and every 429, which is the caller's own."""

from __future__ import annotations

import pytest

from refapi.routes import ROUTES

# Each path whose every route carries or depends on a credential: its refusal of a
# method is that path's answer too. (Articles are read by anyone: not these.)
# /metrics is served only when REFAPI_METRICS is set (tests/test_metrics.py).
CREDENTIAL_PATHS = sorted(
    {
        route.path
        for route in ROUTES
        if route.needs is None
        and all(r.auth or r.private for r in ROUTES if r.path == route.path)
    }
)
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def concrete(path: str) -> str:
    return path.replace("{id}", "1").replace("{prefix}", "abc")


def unserved(path: str) -> str:
    served = {route.method for route in ROUTES if route.path == path}
    return next(method for method in METHODS if method not in served)


@pytest.mark.parametrize("path", CREDENTIAL_PATHS)
def test_a_credential_paths_405_and_options_are_no_store(app, path):
    refused = app.request(concrete(path), method=unserved(path), status=405)
    assert refused.headers["Cache-Control"] == "no-store"
    allowed = app.options(concrete(path), status=204)
    assert allowed.headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize("path", ["/v1/todos/1", "/v1/articles/1"])
def test_a_public_paths_405_may_be_kept(app, path):
    assert "Cache-Control" not in app.put(path, status=405).headers


@pytest.mark.parametrize("path", ["/v1/todos/1", "/api/keys", "/api/session"])
def test_every_429_is_no_store(make_app, path):
    app = make_app(rate_limit_capacity=1, rate_limit_refill=0.01)
    app.get(path, expect_errors=True)
    refused = app.get(path, status=429)
    assert refused.headers["Cache-Control"] == "no-store"
