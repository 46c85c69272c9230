"""The router (router.py): handlers take what they use by parameter name, bound
once when the app starts; a plain OPTIONS is 204 with ``Allow``; a path starting
with ``//`` is routed nowhere; and the one no-store decision.

``Cache-Control: no-store`` on every answer that carries or depends on a
credential (docs/authentication.md): a credential route's answers to a method it
does not serve and to OPTIONS as well, and every 429, which is the caller's own.

``python -O`` changes nothing: the guards are ``if`` statements, not ``assert``. The
router refuses a caller without a credential before a handler runs; the handlers
that act for a principal refuse one all the same if a route table sends them a
request without it. Run in a subprocess under ``-O`` and without, through WebTest,
with the guarded handlers mounted without the router's check.
"""

from __future__ import annotations

import dataclasses
import gc
import inspect
import json
import re
import subprocess
import sys
import weakref

import pytest
import webtest

from refapi import routes
from refapi.middleware import Errors
from refapi.router import Router, Services
from refapi.router.arguments import bind
from refapi.router.route import Param, Route
from refapi.routes import ROUTES
from refapi.web import Request, json_response
from tests.helpers import assert_error

# What a handler may take besides the request and its row's arguments.
PROVIDED = {"store", "config", "clock", "new_id", "resolve", "routes", "document"}
PROVIDED |= {"pages", "limits", "slots"}  # slots: the slow work's (slots.py)


def test_every_handler_of_the_table_takes_only_what_the_router_provides():
    for route in routes.ROUTES:
        taken = list(inspect.signature(route.handler).parameters)
        assert taken[0] == "request", route.name
        arguments = {p.name for p in route.params if p.where == "path"}
        assert arguments == set(re.findall(r"{(\w+)}", route.path)), route.name
        arguments |= {p.name for p in route.query_args}
        assert set(taken[1:]) <= PROVIDED | arguments, route.name


def test_the_request_carries_the_request_alone():
    # No store, settings or clock: those are the handler's own parameters.
    request = Request({"REQUEST_METHOD": "GET"})
    assert set(vars(request)) == {
        "environ",
        "payload",
        "media_type",
        "principal",
        "body_limit",
        "idempotency",
        "auth",
    }


STORE = Param("store", "string", "path", True)  # a path argument named like one


def get_thing(request, store, id):
    return json_response({"id": id, "store": type(store).__name__})


def get_nothing(request, storage):  # a misspelt dependency
    return json_response({})


def get_without_id(request, store):  # the row's {id} is not taken
    return json_response({})


def test_a_handler_gets_the_apps_store_bound_and_its_arguments_per_request(
    config, store, clock
):
    route = Route("GET", "/things/{id}", get_thing, params=(routes.ID,))
    app = webtest.TestApp(
        Errors(Router(Services.made(config, store, clock, str), (route,)))
    )
    assert app.get("/things/7").json == {"id": 7, "store": type(store).__name__}


def get_thing_as(request, id, shape):
    return json_response({"id": id, "shape": shape})


def test_a_paths_numbers_are_kept_and_its_query_read_per_request(config, store, clock):
    """The router reads a path's numbers once and keeps them with its match
    (router/arguments.py): the query of one request is never another's, and an id
    that is no number is still 400 each time it is asked."""
    shape = Param("shape", "string", "query", True)
    route = Route("GET", "/things/{id}", get_thing_as, params=(routes.ID, shape))
    app = webtest.TestApp(
        Errors(Router(Services.made(config, store, clock, str), (route,)))
    )
    assert app.get("/things/7?shape=round").json == {"id": 7, "shape": "round"}
    assert app.get("/things/7?shape=square").json == {"id": 7, "shape": "square"}
    assert app.get("/things/007?shape=flat").json == {"id": 7, "shape": "flat"}
    app.get("/things/7", status=400)  # the query is required, however kept the id
    for _ in range(2):
        refused = app.get("/things/x7?shape=round", status=400).json
        assert refused["code"] == "VALIDATION_ERROR"
        assert [e["field"] for e in refused["details"]["errors"]] == ["id"]


@pytest.mark.parametrize(
    ("route", "named"),
    [
        pytest.param(Route("GET", "/nothing", get_nothing), "storage", id="unknown"),
        pytest.param(
            Route("GET", "/things/{id}", get_without_id, params=(routes.ID,)),
            "id",
            id="argument-not-taken",
        ),
        pytest.param(
            Route("GET", "/things/{store}", get_thing, params=(STORE,)),
            "store",
            id="argument-and-dependency",
        ),
    ],
)
def test_a_handler_that_takes_what_nothing_provides_stops_the_start(
    config, store, clock, route, named
):
    with pytest.raises(TypeError, match=named):
        Router(Services.made(config, store, clock, str), (route,))


def test_a_handler_without_dependencies_is_called_as_it_is():
    def get_plain(request):
        return json_response({})

    route = Route("GET", "/plain", get_plain)
    assert bind(route, {"store": object()}) is get_plain


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        ("/v1/articles", {"GET", "HEAD", "POST", "OPTIONS"}),
        ("/v1/articles/1", {"GET", "HEAD", "PATCH", "DELETE", "OPTIONS"}),
        ("/v1/todos/1", {"GET", "HEAD", "OPTIONS"}),
        ("/v1/items", {"GET", "HEAD", "OPTIONS"}),
        ("/healthz", {"GET", "HEAD", "OPTIONS"}),
    ],
)
def test_plain_options_is_204_with_allow(app, path, allowed):
    response = app.options(path, status=204)
    assert response.body == b""
    assert set(response.headers["Allow"].split(", ")) == allowed


def test_options_on_an_unknown_path_is_404(app):
    assert_error(app.options("/nope", status=404), 404, "NOT_FOUND")


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


# Each path whose every route carries or depends on a credential: its refusal of a
# method is that path's answer too. (Articles are read by anyone: not these.)
# /metrics is served only when REFAPI_METRICS is set (tests/test_metrics.py).
CREDENTIAL_PATHS = sorted(
    {
        route.path
        for route in ROUTES
        if route.needs is None
        and all(r.auth or r.sensitive for r in ROUTES if r.path == route.path)
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


SCRIPT = """
import dataclasses, json, sys, time
import webtest
from refapi import routes
from refapi.router import Router, Services
from refapi.config import Config
from refapi.middleware import Errors
from refapi.storage import open_store

url = sys.argv[1]
store = open_store(url)
calls = [
    ("POST", "/v1/articles", {"title": "x"}, "create_article"),
    ("PATCH", "/v1/articles/1", {"title": "x"}, "update_article"),
    ("DELETE", "/api/users/1", None, "delete_user"),
    ("POST", "/v1/payments", {"amount": 1, "currency": "EUR"}, "create_payment"),
    ("POST", "/api/keys", {"name": "k"}, "create_api_key"),
]
names = {name for *_, name in calls}
rows = tuple(dataclasses.replace(row, auth=None, may_change=None)
             for row in routes.ROUTES if row.name in names)
services = Services.made(Config(database_url=url, secret_key=b"k"), store,
                         time.time, lambda now: "pay_1")
router = Router(services, rows)
app = webtest.TestApp(Errors(router))
statuses = [
    app.request(path, method=method, body=json.dumps(body).encode() if body else b"",
                content_type="application/json", expect_errors=True,
                headers={"Idempotency-Key": "k"}).status_int
    for method, path, body, _ in calls
]
print(json.dumps(statuses))
"""


def statuses(tmp_path, *flags: str) -> list[int]:
    url = f"sqlite:///{tmp_path}/refapi-{len(flags)}.db"
    done = subprocess.run(
        [sys.executable, *flags, "-c", SCRIPT, url],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return json.loads(done.stdout)


def test_a_handler_reached_without_a_principal_refuses_it_under_python_O(tmp_path):
    assert statuses(tmp_path, "-O") == [401] * 5
    assert statuses(tmp_path) == [401] * 5


@dataclasses.dataclass
class CallableHandler:
    """A handler that is an object: a dataclass's instances are not hashable."""

    answer: dict

    def __call__(self, request, store):
        return json_response(self.answer)


def test_a_handler_that_is_an_unhashable_object_is_bound_by_its_signature():
    handler = CallableHandler({"from": "an object"})
    store = object()
    bound = bind(Route("GET", "/object", handler), {"store": store})
    assert bound.func is handler and bound.keywords == {"store": store}


def test_what_a_handler_takes_is_remembered_by_its_code_not_its_closure():
    # Each app's handler may close over that app's state: remembering what the
    # handler takes must not keep that state alive once the app is gone.
    class State:
        pass

    def made(state):
        def get_it(request, store):
            return json_response({"state": id(state)})

        return get_it

    state = State()
    watched = weakref.ref(state)
    first = made(state)
    assert bind(Route("GET", "/it", first), {"store": 1}).keywords == {"store": 1}
    del first, state
    gc.collect()
    assert watched() is None
    again = made(State())  # the same code: what it takes is not read again
    assert bind(Route("GET", "/it", again), {"store": 2}).keywords == {"store": 2}
