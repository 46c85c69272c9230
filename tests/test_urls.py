"""The URLs the service emits (Location, Link) and the paths it routes.

Every URL is an absolute path (RFC 3986 section 4.2) under the mount point; none may
start with ``//``, which a client reads as a scheme-relative URL naming another host
(``//v1/items`` points at a host called ``v1``). ``X-Forwarded-Prefix`` is trusted
only as a plain path prefix.
"""

from __future__ import annotations

import pytest

from tests.helpers import assert_error


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "//v1/items"),
        ("GET", "///v1/items"),
        ("GET", "//v1/articles"),
        ("GET", "//v1/todos/1"),
        ("GET", "//healthz"),
        ("POST", "//v1/articles"),
        ("OPTIONS", "//v1/items"),
        ("GET", "//items"),
    ],
)
def test_a_path_with_a_leading_double_slash_is_404(app, method, path):
    # The URL map does not merge slashes: /v1//todos/1 is 404, and so is //v1/items.
    response = app.request(
        path,
        method=method,
        headers={"Accept": "application/vnd.refapi+json;version=1"},
        expect_errors=True,
    )
    assert_error(response, 404, "NOT_FOUND")
    assert "Link" not in response.headers and "Location" not in response.headers


@pytest.mark.parametrize(
    "script_name", ["", "//", "//evil.example", "/\\evil.example", "/prod"]
)
def test_no_emitted_url_starts_with_two_slashes(app, script_name):
    environ = {"SCRIPT_NAME": script_name}
    created = app.post_json(
        "/v1/articles", {"title": "a"}, extra_environ=environ, status=201
    )
    app.post_json("/v1/articles", {"title": "b"}, status=201)
    page = app.get("/v1/articles?limit=1", extra_environ=environ, status=200)
    urls = [created.headers["Location"], page.headers["Link"].removeprefix("<")]
    for url in urls:
        assert url.startswith("/") and not url.startswith(("//", "/\\")), url
        assert "\\" not in url


@pytest.mark.parametrize(
    ("prefix", "location"),
    [
        pytest.param("/prod", "/prod/v1/articles/1", id="plain"),
        pytest.param("/prod/eu-1/", "/prod/eu-1/v1/articles/1", id="two-segments"),
        pytest.param("/", "/v1/articles/1", id="root"),
        pytest.param("/a%20b", "/a%20b/v1/articles/1", id="percent-encoded"),
        pytest.param("//evil.example", "/v1/articles/1", id="scheme-relative"),
        pytest.param("///evil.example", "/v1/articles/1", id="three-slashes"),
        pytest.param("/prod//x", "/v1/articles/1", id="empty-segment"),
        pytest.param("https://evil.example", "/v1/articles/1", id="absolute-url"),
        pytest.param("evil.example", "/v1/articles/1", id="no-leading-slash"),
        pytest.param("/\\evil.example", "/v1/articles/1", id="backslash"),
        pytest.param("/a<script>", "/v1/articles/1", id="angle-brackets"),
        pytest.param("/a\tb", "/v1/articles/1", id="control"),
        pytest.param("/a b", "/v1/articles/1", id="space"),
    ],
)
def test_forwarded_prefix_is_kept_only_when_a_plain_path(make_app, prefix, location):
    app = make_app(trust_proxy=1)
    response = app.post_json(
        "/v1/articles",
        {"title": "a"},
        headers={"X-Forwarded-Prefix": prefix},
        status=201,
    )
    assert response.headers["Location"] == location


def test_forwarded_prefix_counts_from_the_trusted_proxy(make_app):
    # With one trusted proxy, the value it appended (the last) is the one used.
    app = make_app(trust_proxy=1)
    headers = {"X-Forwarded-Prefix": "//evil.example, /prod"}
    response = app.post_json("/v1/articles", {"title": "a"}, headers=headers)
    assert response.headers["Location"] == "/prod/v1/articles/1"
    headers = {"X-Forwarded-Prefix": "/prod, //evil.example"}
    response = app.post_json("/v1/articles", {"title": "b"}, headers=headers)
    assert response.headers["Location"] == "/v1/articles/2"


def test_forwarded_prefix_is_ignored_unless_a_proxy_is_trusted(app):
    headers = {"X-Forwarded-Prefix": "/prod"}
    response = app.post_json("/v1/articles", {"title": "a"}, headers=headers)
    assert response.headers["Location"] == "/v1/articles/1"


def test_a_refused_prefix_keeps_the_hosts_mount_point(make_app):
    app = make_app(trust_proxy=1)
    response = app.post_json(
        "/v1/articles",
        {"title": "a"},
        headers={"X-Forwarded-Prefix": "//evil.example"},
        extra_environ={"SCRIPT_NAME": "/mnt"},
    )
    assert response.headers["Location"] == "/mnt/v1/articles/1"
