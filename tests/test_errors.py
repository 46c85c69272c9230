"""What each layer, error class and handler declares holds for its code, so the
OpenAPI document, made from the declarations, cannot drift from what is served."""

from __future__ import annotations

import ast
import inspect

import pytest

from refapi import errors, routes
from refapi.errors import ApiError
from refapi.lab import errors as lab_errors
from refapi.lab import routes as lab_routes
from refapi.middleware.headers import declared
from tests.helpers import operations_inline

# The service's error family and the lab's own (lab/errors.py), by name.
API_ERRORS = {
    name: value
    for module in (errors, lab_errors)
    for name, value in vars(module).items()
    if isinstance(value, type) and issubclass(value, ApiError)
}


def _errors_named(module: object) -> set[type[ApiError]]:
    """The ApiError classes a module raises or builds (``raise X``, ``X(...)``)."""
    tree = ast.parse(inspect.getsource(module))  # type: ignore[arg-type]
    found = set()
    for node in ast.walk(tree):
        target = node.exc if isinstance(node, ast.Raise) else None
        if isinstance(node, ast.Call):
            target = node.func
        if isinstance(target, ast.Call):
            target = target.func
        if isinstance(target, ast.Name) and target.id in API_ERRORS:
            found.add(API_ERRORS[target.id])
    return found


@pytest.mark.parametrize(
    "table", [routes.ROUTES, lab_routes.ROUTES], ids=["core", "lab"]
)
def test_every_layer_answers_only_the_errors_it_declares(app, table):
    # The lab's stack is of the core's classes with its own options (lab/).
    layers = app.app.layers_for(table[0].path)
    paths = {route.path for route in table}
    assert layers, "the app has its middleware"
    for layer in layers:
        cls, _ = layer  # as app.py lists it: the class and its options
        said = set()
        for path in paths:
            found = declared(layer, path)
            said |= {*found.raises, *found.router_raises}
        module = inspect.getmodule(cls)
        assert _errors_named(module) <= said, cls.__name__


@pytest.mark.parametrize(
    ("table", "served_at"),
    [(routes.ROUTES, "/openapi.json"), (lab_routes.ROUTES, "/lab/openapi.json")],
    ids=["core", "lab"],
)
def test_every_handler_error_is_in_its_operations_document(app, table, served_at):
    document = operations_inline(app.get(served_at).json)
    modules = {inspect.getmodule(route.handler) for route in table}
    for module in modules:
        # The docs, the UI, /metrics and the lab's front page are not in the
        # document; a module of those alone is left out.
        rows = [
            r for r in table if inspect.getmodule(r.handler) is module and r.documented
        ]
        if not rows:
            continue
        codes, statuses = set(), set()
        for row in rows:
            responses = document["paths"][row.path][row.method.lower()]["responses"]
            for status, answer in responses.items():
                statuses.add(status)
                for media in answer.get("content", {}).values():
                    codes |= set(media.get("examples", {}))
        for error in _errors_named(module):
            # An error of another shape (the token endpoint's, RFC 6749's) is a
            # row's own answer: its status is there, with its schema.
            own_answer = any(
                str(error.status) == a.status for r in rows for a in r.answers
            )
            assert error.code in codes or own_answer, (module.__name__, error.code)


# Arguments for the classes whose constructor needs some; the rest take none.
MADE = {
    errors.ValidationError: lambda: errors.ValidationError.one("x", "is wrong"),
    errors.UnknownAction: lambda: errors.UnknownAction(["list"]),
    errors.Unauthenticated: lambda: errors.Unauthenticated(
        invalid=True, clear_cookie="s=; Max-Age=0"
    ),
    errors.MethodNotAllowed: lambda: errors.MethodNotAllowed(["GET"]),
    errors.PayloadTooLarge: lambda: errors.PayloadTooLarge(1),
    errors.UriTooLong: lambda: errors.UriTooLong(1),
    errors.RequestHeaderFieldsTooLarge: lambda: errors.RequestHeaderFieldsTooLarge(
        1, 1
    ),
    errors.UnsupportedMediaType: lambda: errors.UnsupportedMediaType(("a/b",)),
    errors.RateLimited: lambda: errors.RateLimited(1),
    lab_errors.SlowWorkLimited: lambda: lab_errors.SlowWorkLimited(1),
    lab_errors.Simulated: lambda: lab_errors.Simulated(
        503, "Service Unavailable", retry_after=1, headers=[("Retry-After", "1")]
    ),
    lab_errors.Challenged: lambda: lab_errors.Challenged('Basic realm="x"', "no"),
    lab_errors.DigestChallenged: lambda: lab_errors.DigestChallenged(
        'Digest realm="x"', "no", "fake=fake_value"
    ),
    lab_errors.RangeNotSatisfiable: lambda: lab_errors.RangeNotSatisfiable(10),
    lab_errors.RunsFull: lambda: lab_errors.RunsFull(1),
}


@pytest.mark.parametrize("error", sorted(API_ERRORS.values(), key=lambda e: e.__name__))
def test_every_error_carries_the_headers_it_declares(error):
    made = MADE.get(error, error)()
    sent = {name for name, _ in made.headers}
    assert set(error.carries) <= sent
    assert sent <= {*error.carries, *error.may_carry}


@pytest.mark.parametrize(
    ("method", "path", "headers"),
    [
        ("GET", "/v1/todos/1", {}),
        ("GET", "/v1/todos/0", {}),
        ("GET", "/v1/items?limit=1", {}),
        ("POST", "/v1/articles", {"Authorization": "Bearer nonsense"}),
        ("GET", "/healthz", {}),
    ],
)
def test_every_header_an_answer_carries_is_in_the_document(app, method, path, headers):
    document = operations_inline(app.get("/openapi.json").json)
    answer = app.request(path, method=method, headers=headers, expect_errors=True)
    template = path.split("?")[0].replace("/1", "/{id}").replace("/0", "/{id}")
    responses = document["paths"][template][method.lower()]["responses"]
    documented = set(responses[str(answer.status_int)].get("headers", {}))
    sent = {name for name, _ in answer.headerlist}
    assert sent - {"Content-Type", "Content-Length"} <= documented
