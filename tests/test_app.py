"""The app as one WSGI chain, and what the whole stack does to every answer.

``App.__call__`` -> ``App.wsgi_app`` (the stack) -> the router: Werkzeug's
``shortly`` example keeps ``wsgi_app`` apart from ``__call__`` on the application, so
a host can wrap the one and keep calling the other; the pieces beneath it are plain
WSGI callables with one entry each.

Every answer of each kind the stack produces carries a request id, ``nosniff`` and
(but a preflight) the rate-limit fields.

The order of checks: when a request is wrong in two ways, which answer wins. Rate
limit (429), then routing (404, 405), then what the request accepts (406: the
representation or the API version), then the body (413, 415, 400 INVALID_JSON,
400 VALIDATION_ERROR of the body), then the path parameters (400 VALIDATION_ERROR
on ``id``), then the endpoint's own rule (query parameters, 404 for an unknown
record, 412, 422...). Each case below is wrong in two ways and names the winner.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import webtest

from refapi import middleware
from refapi.app import App, wrapped
from refapi.router import Router
from tests.helpers import ROOT, assert_error, call

DEVELOPMENT = Path(__file__).resolve().parents[1] / "docs" / "development.md"


def test_the_router_is_one_wsgi_callable_not_a_second_app(make_app):
    app: App = make_app(anonymous=True).app
    assert not hasattr(app.router, "wsgi_app")  # only App has the pair
    assert app.core is not app.router  # the stack, with the router at its foot
    assert isinstance(app.router, Router)
    assert app.wsgi_app is not app.core  # the lab mounted in front of the core


def test_without_the_lab_the_door_is_the_core(make_app):
    app: App = make_app(anonymous=True, lab=False).app
    assert app.lab is None and app.wsgi_app is app.core


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
    webtest.TestApp(app).get("/lab/anything")  # the lab is behind the door too
    assert seen == ["/v1/todos/1", "/lab/anything"]


def test_a_requests_storage_calls_are_between_hold_and_let_go(
    make_app, store, monkeypatch
):
    """The app holds a pooled store for each request (one connection for all its
    calls on PostgreSQL) and lets go when it answers, an answer that raised too."""
    seen: list[str] = []
    get_todo = store.get_todo
    monkeypatch.setattr(store, "pooled", True)
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


def test_a_store_without_a_pool_is_neither_held_nor_let_go(
    make_app, store, monkeypatch
):
    """SQLite's connection is each thread's own: its store says it has no pool,
    and the app makes neither call (storage/base.py, ``pooled``)."""
    assert store.pooled is False  # the store of a test not marked every_backend
    app = make_app()
    for name in ("hold", "let_go"):
        monkeypatch.setattr(store, name, lambda: pytest.fail("called with no pool"))
    app.get("/v1/todos/1", status=200)


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
    built, layer = [], app.core
    while layer is not app.router:  # each layer keeps the app it wraps as .app,
        built.append(type(layer).__name__)  # a bound __call__ (app.py, wrapped)
        layer = layer.app.__self__
    assert named == built
    assert [cls.__name__ for cls, _ in app.layers] == built


# (method, path, headers, status): one answer of each kind the stack produces.
ANSWERS = [
    pytest.param("GET", "/v1/todos/1", {}, 200, id="200"),
    pytest.param("GET", "/v1/todos/1", {"If-None-Match": "*"}, 304, id="304"),
    pytest.param("OPTIONS", "/v1/todos/1", {}, 204, id="options-204"),
    pytest.param("GET", "/v1/todos/0", {}, 400, id="400"),
    pytest.param("GET", "/nope", {}, 404, id="404"),
    pytest.param("DELETE", "/v1/todos/1", {}, 405, id="405"),
    pytest.param("GET", "/v1/todos/1", {"Accept": "text/html"}, 406, id="406"),
    pytest.param(
        "OPTIONS",
        "/v1/todos/1",
        {"Origin": "https://x.example", "Access-Control-Request-Method": "GET"},
        204,
        id="preflight",
    ),
]


@pytest.mark.parametrize(
    "request_id", ["abc", "A.b_c-9", "x" * 128, "0"], ids=["word", "punct", "128", "1"]
)
@pytest.mark.parametrize(("method", "path", "headers", "status"), ANSWERS)
def test_valid_request_id_is_kept(app, request_id, method, path, headers, status):
    response = call(app, method, path, {**headers, "X-Request-Id": request_id})
    assert response.status_int == status
    assert response.headers["X-Request-Id"] == request_id


@pytest.mark.parametrize(
    "request_id",
    ["", "x" * 129, "has space", "semi;colon", "a/b", "caf\u00e9"],
    ids=["empty", "129-chars", "space", "semicolon", "slash", "non-ascii"],
)
@pytest.mark.parametrize(("method", "path", "headers", "status"), ANSWERS[:6])
def test_invalid_request_id_is_replaced(app, request_id, method, path, headers, status):
    response = call(app, method, path, {**headers, "X-Request-Id": request_id})
    assert response.status_int == status
    generated = response.headers["X-Request-Id"]
    assert generated != request_id
    assert re.fullmatch(r"[A-Za-z0-9._-]{1,128}", generated)


@pytest.mark.parametrize(("method", "path", "headers", "status"), ANSWERS)
def test_every_answer_has_nosniff(app, method, path, headers, status):
    response = call(app, method, path, headers)
    assert response.status_int == status
    assert response.headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize(("method", "path", "headers", "status"), ANSWERS[:-1])
def test_every_limited_answer_has_ratelimit_fields(app, method, path, headers, status):
    # docs/rate-limits.md: every response but /healthz and preflight carries them.
    response = call(app, method, path, headers)
    assert response.status_int == status
    assert response.headers["RateLimit-Policy"] == '"default";q=100;w=10'
    assert re.fullmatch(r'"default";r=\d+;t=0', response.headers["RateLimit"])


V2 = "application/vnd.refapi+json;version=2"
JSON = "application/json"
BIG = b'{"title": "' + b"x" * 2000 + b'"}'


@pytest.fixture
def article_app(make_app):
    app = make_app(max_body_bytes=1000)
    app.post_json("/v1/articles", {"title": "A"}, status=201)
    return app


# (method, path, Accept, Content-Type, body, status, code)
PAIRS = [
    pytest.param("GET", "/nope", V2, None, b"", 404, "NOT_FOUND",
                 id="404-before-406-version"),
    pytest.param("GET", "/nope", "text/html", None, b"", 404, "NOT_FOUND",
                 id="404-before-406"),
    pytest.param("POST", "/nope/x", "text/html", "text/plain", b"{", 404, "NOT_FOUND",
                 id="404-before-406-415"),
    pytest.param("POST", "/healthz", V2, None, b"", 405, "METHOD_NOT_ALLOWED",
                 id="405-before-406-version"),
    pytest.param("DELETE", "/v1/todos/1", "text/html", None, b"", 405,
                 "METHOD_NOT_ALLOWED", id="405-before-406"),
    pytest.param("PUT", "/v1/articles/0", JSON, "text/plain", BIG, 405,
                 "METHOD_NOT_ALLOWED", id="405-before-413-415-400"),
    pytest.param("GET", "/v1/todos/abc", "text/html", None, b"", 406, "NOT_ACCEPTABLE",
                 id="406-before-path-id"),
    pytest.param("GET", "/v1/todos/0", V2, None, b"", 406, "NOT_ACCEPTABLE",
                 id="406-version-before-path-id"),
    pytest.param("PATCH", "/v1/articles/abc", "text/html", "text/plain", b"{", 406,
                 "NOT_ACCEPTABLE", id="406-before-415"),
    pytest.param("POST", "/v1/articles", "text/csv", JSON, BIG, 406, "NOT_ACCEPTABLE",
                 id="406-before-413"),
    pytest.param("PATCH", "/v1/articles/1", V2, JSON, b"{", 406, "NOT_ACCEPTABLE",
                 id="406-version-before-400"),
    pytest.param("PATCH", "/v1/articles/abc", JSON, JSON, BIG, 413, "PAYLOAD_TOO_LARGE",
                 id="413-before-path-id"),
    pytest.param("PATCH", "/v1/articles/abc", JSON, "text/plain", b"{", 415,
                 "UNSUPPORTED_MEDIA_TYPE", id="415-before-path-id"),
    pytest.param("PATCH", "/v1/articles/0", JSON, JSON, b"{", 400, "INVALID_JSON",
                 id="invalid-json-before-path-id"),
    pytest.param("DELETE", "/v1/articles/abc", "text/html", None, b"", 400,
                 "VALIDATION_ERROR", id="bodiless-path-id-not-406"),
    pytest.param("PATCH", "/v1/articles/99", JSON, JSON, b'{"title": 5}', 400,
                 "VALIDATION_ERROR", id="body-400-before-404"),
    pytest.param("GET", "/v1/todos/201", "text/csv", None, b"", 404, "NOT_FOUND",
                 id="negotiated-then-404"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("method", "path", "accept", "content_type", "body", "status", "code"), PAIRS
)
def test_the_first_failing_check_answers(
    article_app, method, path, accept, content_type, body, status, code
):
    before = article_app.get("/v1/articles").json
    headers = {"Accept": accept}
    if content_type:
        headers["Content-Type"] = content_type
    response = article_app.request(
        path, method=method, headers=headers, body=body, expect_errors=True
    )
    assert_error(response, status, code)
    assert article_app.get("/v1/articles").json == before


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        pytest.param(b'{"title": 5}', ["/title"], id="body-before-path-id"),
        pytest.param(b'{"title": "ok"}', ["id"], id="then-path-id"),
    ],
)
def test_the_body_is_validated_before_the_path_id(article_app, body, fields):
    response = article_app.request(
        "/v1/articles/0",
        method="PATCH",
        body=body,
        headers={"Content-Type": JSON},
        expect_errors=True,
    )
    assert_error(response, 400, "VALIDATION_ERROR")
    assert [error["field"] for error in response.json["details"]["errors"]] == fields


def test_the_path_id_is_checked_before_query_parameters(app):
    # Nothing here takes both yet; a collection's limit is the endpoint's rule.
    response = app.get("/v1/items?limit=0", status=400)
    assert response.json["details"]["errors"][0]["field"] == "limit"
    response = app.get("/v1/todos/0?limit=0", status=400)
    assert response.json["details"]["errors"][0]["field"] == "id"


@pytest.mark.parametrize(
    ("method", "path", "accept"),
    [
        ("GET", "/nope", "text/html"),
        ("PUT", "/v1/todos/1", V2),
        ("GET", "/v1/todos/abc", "text/html"),
    ],
    ids=["429-before-404", "429-before-405", "429-before-406"],
)
def test_the_rate_limit_comes_first(make_app, method, path, accept):
    app = make_app(rate_limit_capacity=1)
    app.get("/v1/todos/1", status=200)
    response = app.request(
        path, method=method, headers={"Accept": accept}, expect_errors=True
    )
    assert_error(response, 429, "RATE_LIMITED")


class AnswerClass:
    """An app that is a class (PEP 3333): calling it makes the answer's iterable.
    Its instances' own ``__call__`` is not the app's."""

    def __init__(self, environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])

    def __iter__(self):
        yield b"made by the class"

    def __call__(self, *args):
        raise AssertionError("an instance was called as the app")


def test_a_class_as_the_app_is_wrapped_as_it_is():
    app = wrapped(AnswerClass, [(middleware.RequestId, {})])
    assert app.app is AnswerClass  # type: ignore[attr-defined]
    assert webtest.TestApp(app).get("/", status=200).text == "made by the class"


def in_a_master(script: str, data: Path) -> subprocess.CompletedProcess[str]:
    """``script`` run in a fresh interpreter, as a gunicorn master reads its
    settings: a configuration of its own, in ``data``."""
    environ = {
        **os.environ,
        "REFAPI_DATA_DIR": str(data),
        "DATABASE_URL": f"sqlite:///{data / 'refapi.db'}",
        "REFAPI_ADMIN_EMAIL": "admin@example.com",
        "REFAPI_ADMIN_PASSWORD": "a master's password",
    }
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=environ,
        timeout=60,
    )  # fmt: skip


def test_a_gunicorn_master_makes_what_each_worker_would_make_again(tmp_path):
    # What every worker's app makes alike (compiled maps, validators), the master
    # makes as it reads gunicorn.conf.py, so each worker forks with it: an app made
    # after the read compiles nothing (docs/benchmarks.md, "Made once, in the master").
    script = textwrap.dedent(f"""
        import json, runpy, sys
        assert "refapi.app" not in sys.modules
        runpy.run_path({str(ROOT / "gunicorn.conf.py")!r})
        from refapi import schemas
        from refapi.router.route import url_map
        made = (url_map.cache_info().misses, schemas._compiled.cache_info().misses)
        from refapi.app import create_app
        create_app().close()
        again = (url_map.cache_info().misses, schemas._compiled.cache_info().misses)
        print(json.dumps([made, again]))
    """)
    done = in_a_master(script, tmp_path)
    assert done.returncode == 0, done.stderr
    made, again = json.loads(done.stdout.splitlines()[-1])
    maps, validators = made
    assert maps == 2 and validators > 0  # the core's and the lab's tables
    assert again == made


def test_with_gunicorns_reload_each_worker_imports_the_code_as_it_is_now(tmp_path):
    # --reload replaces a worker by a fork of the master when a file changes: a
    # master that kept the code it imported for its workers would serve it still.
    script = textwrap.dedent(f"""
        import runpy, sys, types
        from gunicorn.config import Config
        settings = runpy.run_path({str(ROOT / "gunicorn.conf.py")!r})
        imported = "refapi.app" in sys.modules
        cfg = Config()
        cfg.set("reload", True)
        log = types.SimpleNamespace(info=lambda line: None)
        settings["on_starting"](types.SimpleNamespace(cfg=cfg, LISTENERS=[1], log=log))
        print(imported, "refapi.app" in sys.modules)
    """)
    done = in_a_master(script, tmp_path)
    assert done.stdout.split() == ["True", "False"], done.stderr
