"""The route table: what the CSV catalogue and the OpenAPI document will read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from refapi import routes
from refapi.errors import (
    CsrfFailed,
    Forbidden,
    NotAcceptable,
    NotFound,
    PreconditionFailed,
    Unauthenticated,
    ValidationError,
)
from refapi.handlers import todos
from refapi.router.route import url_map
from tests.helpers import SERVED

SCHEMAS = Path(routes.__file__).parent / "schemas"


@pytest.mark.parametrize(
    "route",
    [r for r in SERVED if r.schema],
    ids=lambda r: r.name,
)
def test_body_params_are_read_from_the_routes_schema(route):
    document = json.loads((SCHEMAS / f"{route.schema}.json").read_text())
    names = [param.name for param in route.body_params]
    assert names == list(document["properties"])
    assert {p.name for p in route.body_params if p.required} == set(
        document.get("required", ())
    )
    assert all(param.where == "body" for param in route.body_params)
    assert not any(param.where == "body" for param in route.params)


def test_body_param_types_are_json_schema_types():
    create = next(r for r in routes.ROUTES if r.name == "create_article")
    patch = next(r for r in routes.ROUTES if r.name == "update_article")
    payment = next(r for r in routes.ROUTES if r.name == "create_payment")
    as_text = {
        route.name: [(p.name, p.type, p.required) for p in route.body_params]
        for route in (create, patch, payment)
    }
    assert as_text == {
        "create_article": [("title", "string", True), ("tags", "string[]", False)],
        # tags may be null in a merge patch; its type is still the array's.
        "update_article": [("title", "string", False), ("tags", "string[]", False)],
        "create_payment": [("amount", "number", True), ("currency", "string", True)],
    }


def test_the_url_map_is_made_once_per_route_table():
    assert url_map(routes.ROUTES) is url_map(routes.ROUTES)
    assert url_map(routes.ROUTES[:1]) is not url_map(routes.ROUTES)


@pytest.mark.parametrize("auth", ["admn", "User", "", "any"])
def test_a_row_with_an_unknown_auth_fails_when_it_is_made(auth):
    # Else "admn" would silently mean "any credential" to the router.
    with pytest.raises(ValueError, match="auth"):
        routes.Route("GET", "/v1/todos/{id}", todos.get_todo, auth=auth)


def test_every_row_of_the_table_names_a_known_auth():
    assert {route.auth for route in routes.ROUTES} == {None, "user", "admin"}


def test_a_rows_implied_errors_follow_its_columns():
    by_name = {route.name: route for route in routes.ROUTES}
    assert by_name["get_todo"].implied_errors == (
        ValidationError,
        NotFound,
        NotAcceptable,
        PreconditionFailed,  # a read of a resource asks If-Match
    )
    # An admin's row: 401 without a credential, 403 for a user's, and the
    # session's CSRF check on an unsafe method.
    assert {Unauthenticated, Forbidden, CsrfFailed} <= set(
        by_name["create_api_key"].implied_errors
    )
    assert CsrfFailed not in by_name["list_api_keys"].implied_errors
    assert Unauthenticated not in by_name["list_articles"].implied_errors


def test_a_rows_success_headers_follow_its_columns():
    by_name = {route.name: route for route in routes.ROUTES}
    assert dict(by_name["create_payment"].success_headers) == {
        "Location": True,
        "Idempotent-Replayed": False,
        "Vary": True,
        "Cache-Control": True,
        "Set-Cookie": False,
    }
    assert dict(by_name["list_items"].success_headers) == {
        "ETag": True,
        "X-Next-Cursor": False,
        "Link": False,
        "Vary": True,
    }
