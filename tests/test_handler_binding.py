"""Handlers take what they use by parameter name, bound once when the app starts."""

from __future__ import annotations

import inspect
import re

import pytest
import webtest

from refapi import routes
from refapi.middleware import Errors
from refapi.router import Router, bind
from refapi.routes import Param, Route
from refapi.web import Request, json_response

# What a handler may take besides the request and its row's arguments.
PROVIDED = {"store", "config", "clock", "new_id", "resolve", "routes", "document"}
PROVIDED |= {"pages", "limits"}


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
    assert set(vars(request)) == {"environ", "payload", "media_type", "principal"}


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
    app = webtest.TestApp(Errors(Router(config, store, clock, str, (route,))))
    assert app.get("/things/7").json == {"id": 7, "store": type(store).__name__}


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
        Router(config, store, clock, str, (route,))


def test_a_handler_without_dependencies_is_called_as_it_is():
    def get_plain(request):
        return json_response({})

    route = Route("GET", "/plain", get_plain)
    assert bind(route, {"store": object()}) is get_plain
