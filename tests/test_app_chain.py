"""One WSGI chain: ``App.__call__`` -> ``App.wsgi_app`` (the stack) -> the router.

Werkzeug's ``shortly`` example keeps ``wsgi_app`` apart from ``__call__`` on the
application, so a host can wrap the one and keep calling the other; the pieces
beneath it are plain WSGI callables with one entry each.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import webtest

from refapi import middleware
from refapi.app import App
from refapi.router import Router

DEVELOPMENT = Path(__file__).resolve().parents[1] / "docs" / "development.md"


def test_the_router_is_one_wsgi_callable_not_a_second_app(make_app):
    app: App = make_app(anonymous=True).app
    assert not hasattr(app.router, "wsgi_app")  # only App has the pair
    assert app.wsgi_app is not app.router  # the stack, with the router at its foot
    assert isinstance(app.router, Router)


def test_the_router_answers_as_a_plain_wsgi_app(make_app):
    router = make_app(anonymous=True).app.router
    answer = webtest.TestApp(router).get("/v1/todos/1")
    assert answer.json["id"] == 1
    assert "X-Request-Id" not in answer.headers  # no middleware: the router alone


def test_a_host_wraps_wsgi_app_and_every_call_passes_through_it(make_app):
    app = make_app(anonymous=True).app
    seen: list[str] = []
    inner = app.wsgi_app

    def wrapper(environ, start_response):
        seen.append(environ["PATH_INFO"])
        return inner(environ, start_response)

    app.wsgi_app = wrapper  # as Werkzeug's docs wrap a Flask app's
    answer = webtest.TestApp(app).get("/v1/todos/1")
    assert answer.headers["X-Request-Id"]  # the stack still ran, beneath the wrapper
    assert seen == ["/v1/todos/1"]


def test_a_requests_storage_calls_are_between_hold_and_let_go(
    make_app, store, monkeypatch
):
    """The app holds the store for each request (one pooled connection for all its
    calls on PostgreSQL) and lets go when it answers, an answer that raised too."""
    seen: list[str] = []
    get_todo = store.get_todo
    monkeypatch.setattr(store, "hold", lambda: seen.append("hold"))
    monkeypatch.setattr(store, "let_go", lambda: seen.append("let_go"))
    monkeypatch.setattr(
        store, "get_todo", lambda *a: seen.append("get_todo") or get_todo(*a)
    )
    app = make_app()
    seen.clear()  # what the app's making did
    app.get("/v1/todos/1", status=200)
    assert seen == ["hold", "get_todo", "let_go"]

    def broken(*args):
        raise RuntimeError("a bug below the error layer's reach")

    seen.clear()
    monkeypatch.setattr(app.app, "wsgi_app", broken)
    with pytest.raises(RuntimeError):
        app.get("/v1/todos/1")
    assert seen == ["hold", "let_go"]


def test_the_guide_follows_one_request_through_the_layers_the_app_builds(make_app):
    """docs/development.md, "Follow one request", names the layers (in bold) in
    the order a request meets them: the order the app builds, so it cannot drift."""
    section = DEVELOPMENT.read_text().split("\n## Follow one request\n")[1]
    section = section.split("\n## ")[0]
    named = [
        name
        for name in re.findall(r"\*\*`(\w+)`\*\*", section)
        if name in middleware.__all__
    ]
    app: App = make_app(anonymous=True).app
    built, layer = [], app.wsgi_app
    while layer is not app.router:  # each layer keeps the app it wraps as .app
        built.append(type(layer).__name__)
        layer = layer.app
    assert named == built
    assert [cls.__name__ for cls, _ in app.router.layers] == built
