"""A route's arguments as its handler takes them: what it takes by name, bound
once (``bind``); per request, the path's, its integer parameters read as numbers,
and the route's query parameters (400 for one that is missing, or not a number
where the row says integer).

The router reads a path's numbers once and keeps them with its match
(``router.routed``), so they are never changed here: the query's are added to a
copy."""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Mapping
from types import CodeType, FunctionType
from typing import Any

from ..errors import ValidationError
from ..storage.base import MAX_ID
from ..web import Request, Response
from ..web.wsgi import positive_int, whole_number
from .route import Route

_PATH_ARGUMENT = re.compile(r"{(\w+)}")  # routes.py names them as {id}


def numbered(route: Route, raw_args: Mapping[str, str]) -> dict[str, object]:
    """The route's arguments, its integer path parameters as numbers: 400 for one
    that is not a number in its range."""
    args: dict[str, object] = dict(raw_args)
    for name, least, most in route.integer_path_params:
        args[name] = whole_number(name, raw_args[name], least, most)
    return args


def with_query(
    route: Route, request: Request, numbers: dict[str, object]
) -> dict[str, object]:
    """``numbers`` and the route's query parameters: 400 for one missing, or not a
    number where it is an integer."""
    args = dict(numbers)  # what the router kept stays as it was read
    for param in route.query_args:
        value = request.arg(param.name)
        if value is None:
            raise ValidationError.one(param.name, "is required")
        integer = param.type == "integer"
        args[param.name] = positive_int(param.name, value, MAX_ID) if integer else value
    return args


def bind(
    route: Route,
    provided: Mapping[str, object],
    function: Callable[..., Any] | None = None,
) -> Callable[..., Response]:
    """The row's handler (or another of its functions, its ``may_change``) with
    what it takes bound by parameter name, once.

    ``def get_todo(request, store, id)`` gets ``store`` here and the request and
    ``id`` per request, so a call costs what calling the function costs. A name that
    is neither provided nor one of the row's arguments, or an argument the handler
    does not take, fails at start-up, not at the first request.
    """
    function = function or route.handler
    taken = _taken(function)
    arguments = {*_PATH_ARGUMENT.findall(route.path)}
    arguments |= {p.name for p in route.query_args}
    unknown = [name for name in taken if (name in provided) == (name in arguments)]
    missing = sorted(arguments.difference(taken))
    if unknown or missing:
        raise TypeError(
            f"{route.method} {route.path}: {function.__name__} takes "
            f"{unknown or 'no'} {missing or ''} (what a handler may take: the "
            f"request, the row's arguments, or one of {sorted(provided)})"
        )
    bound = {name: provided[name] for name in taken if name in provided}
    return functools.partial(function, **bound) if bound else function


# What a plain function takes, by its code: read once a process, not once an app,
# and shared by the closures of one ``def``, whose cells it does not keep alive.
# PERF: 2.4 ms of an app's 7 (docs/development.md, "Running the tests")
_TAKEN: dict[CodeType, tuple[str, ...]] = {}


def _taken(handler: Callable[..., object]) -> tuple[str, ...]:
    """The names of what ``handler`` takes after the request."""
    plain = type(handler) is FunctionType and not (
        hasattr(handler, "__wrapped__") or hasattr(handler, "__signature__")
    )
    code = handler.__code__ if plain else None
    taken = _TAKEN.get(code) if code is not None else None
    if taken is None:
        taken = tuple(inspect.signature(handler).parameters)[1:]
        if code is not None:
            if len(_TAKEN) >= 4096:
                _TAKEN.clear()  # functions made at run time: forgetting costs a read
            _TAKEN[code] = taken
    return taken
