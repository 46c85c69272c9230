"""Each route row's body limit against its schema (``Route.body_limit``).

A limit must admit every body the row's schema accepts, however it is written: each
character as a JSON escape (``\\u00e9``, 6 bytes; ``\\ud83e\\udd84``, 12, for an
astral one, where the string's ``pattern`` admits one; a form's ``%F0%9F%A6%84``, 12
too), laid out one member a line, indented four spaces a level, as a pretty-printer
writes it. The largest such body is computed here from the
schema's bounds (``maxLength``, ``maxItems``, ``maxProperties``, ``propertyNames``);
a schema that leaves any value unbounded fails, as its body would have no largest.
The limit must not be much more either: what it admits past the schema's largest
body is what a hostile client can make the route parse and refuse.
"""

from __future__ import annotations

import re
import re._constants as sre
import re._parser
from pathlib import Path
from typing import Any

import pytest

from refapi import routes, schemas
from refapi.config import Config
from refapi.web.body import MAX_NUMBER_CHARS
from tests.helpers import SERVED

ESCAPED = 12  # bytes of one character at worst: an astral one, as two \uXXXX
BMP_ESCAPED = 6  # one of the Basic Multilingual Plane, as one \uXXXX
ANY_CHARACTER = (sre.ANY, sre.NOT_LITERAL, sre.NEGATE, sre.CATEGORY)
REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)
INDENT = 4  # spaces a level, as json.dumps(..., indent=4) writes them
SCALARS = {"integer": MAX_NUMBER_CHARS, "number": MAX_NUMBER_CHARS}
SCALARS |= {"boolean": len("false"), "null": len("null")}
BODIES = [route for route in SERVED if route.schema or route.form]


class Unbounded(Exception):
    """A schema that accepts bodies of any size."""


def bound(schema: dict[str, Any], keyword: str, where: str) -> int:
    if keyword not in schema:
        raise Unbounded(f"{where or '/'} has no {keyword}")
    value: int = schema[keyword]
    return value


def escaped_name(name: str) -> int:
    """A member name, quoted, every character escaped."""
    return 2 + sum(ESCAPED if ord(c) > 0xFFFF else 6 for c in name)


def largest_json(schema: dict[str, Any], depth: int = 0, where: str = "") -> int:
    """The longest JSON text of a value ``schema`` accepts, escaped, pretty-printed."""
    if "type" not in schema:
        raise Unbounded(f"{where or '/'} has no type")
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    return max(_largest_of(kind, schema, depth, where) for kind in kinds)


def _largest_of(kind: str, schema: dict[str, Any], depth: int, where: str) -> int:
    if kind in SCALARS:
        return SCALARS[kind]  # a longer number token is refused (web/body.py)
    if kind == "string":
        pattern = schema.get("pattern")
        astral = pattern is None or widest(pattern) > 0xFFFF
        each = ESCAPED if astral else BMP_ESCAPED
        return 2 + each * bound(schema, "maxLength", where)
    if kind == "array":
        count = bound(schema, "maxItems", where)
        first = schema.get("prefixItems", [])[:count]
        sizes = [
            largest_json(item, depth + 1, f"{where}/{n}")
            for n, item in enumerate(first)
        ]
        item = largest_json(schema.get("items", {}), depth + 1, f"{where}/items")
        return _laid_out(sizes + [item] * (count - len(first)), depth)
    members = [
        escaped_name(name) + len(": ") + largest_json(sub, depth + 1, f"{where}/{name}")
        for name, sub in schema.get("properties", {}).items()
    ]
    count = bound(schema, "maxProperties", where)
    others = schema.get("additionalProperties", {})
    if others is not False:
        names = bound(schema.get("propertyNames", {}), "maxLength", f"{where} names")
        value = largest_json(others, depth + 1, f"{where}/additionalProperties")
        members += [2 + ESCAPED * names + len(": ") + value] * count
    return _laid_out(sorted(members, reverse=True)[:count], depth)


def widest(pattern: str) -> int:
    """The highest code point ``pattern`` admits anywhere: the highest it names,
    or U+10FFFF where it admits any character (``.``, ``[^...]``, ``\\S``)."""
    highest, parts = 0, list(re._parser.parse(pattern))
    while parts:
        op, arg = parts.pop()
        if op in ANY_CHARACTER:
            return 0x10FFFF
        if op is sre.LITERAL:
            highest = max(highest, arg)
        elif op is sre.RANGE:
            highest = max(highest, arg[1])
        elif op is sre.IN:
            parts += arg
        elif op in REPEATS:
            parts += arg[2]
        elif op is sre.SUBPATTERN:
            parts += arg[3]
        elif op is sre.BRANCH:
            parts += [part for branch in arg[1] for part in branch]
    return highest


def _laid_out(sizes: list[int], depth: int) -> int:
    """Brackets around values one a line, a comma after each but the last."""
    if not sizes:
        return 2
    line = len("\n") + INDENT * (depth + 1)
    return 2 + sum(line + size for size in sizes) + len(sizes) - 1 + 1 + INDENT * depth


def largest_form(schema: dict[str, Any]) -> int:
    """The longest form (``a=1&b=2``) ``schema`` accepts, every byte percent-encoded."""
    pairs = [
        3 * len(name.encode()) + 1 + ESCAPED * bound(sub, "maxLength", f"/{name}")
        for name, sub in schema.get("properties", {}).items()
    ]
    count = bound(schema, "maxProperties", "/")
    others = schema.get("additionalProperties", {})
    if others is not False:
        names = bound(schema.get("propertyNames", {}), "maxLength", "/ names")
        value = bound(others, "maxLength", "/additionalProperties")
        pairs += [ESCAPED * names + 1 + ESCAPED * value] * count
    chosen = sorted(pairs, reverse=True)[:count]
    return sum(chosen) + len(chosen) - 1


def largest_body(route: routes.Route) -> int:
    options = vars(Config())  # the configured enums (currencies) filled in
    if route.form:
        return largest_form(schemas.configured(route.form, options))
    assert route.schema
    return largest_json(schemas.configured(route.schema, options)) + len("\n")


@pytest.mark.parametrize("route", BODIES, ids=lambda r: f"{r.method} {r.path} {r.name}")
def test_each_body_limit_admits_the_largest_body_its_schema_accepts(route):
    largest = largest_body(route)
    assert route.body_limit is not None
    assert largest <= route.body_limit, f"needs {largest}"
    assert route.body_limit <= 2 * largest + 1024, f"{largest} would do"
    # The default REFAPI_MAX_BODY_BYTES takes it too: the route's own limit is used.
    assert route.body_limit <= Config().max_body_bytes


def deepest(schema: dict[str, Any], where: str = "") -> int:
    """How deep a value ``schema`` accepts nests arrays and objects (a scalar: 0)."""
    if "type" not in schema:
        raise Unbounded(f"{where or '/'} has no type")
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    inner = []
    if "array" in kinds:
        inner += [*schema.get("prefixItems", []), schema.get("items", {})]
    if "object" in kinds:
        others = schema.get("additionalProperties", {})
        inner += [*schema.get("properties", {}).values(), *([others] if others else [])]
    if not inner:
        return 0
    return 1 + max(deepest(sub, f"{where}/{n}") for n, sub in enumerate(inner))


def test_a_row_that_names_a_depth_names_its_schemas_deepest_body():
    """A row whose schema nests less than ``REFAPI_JSON_MAX_DEPTH`` may say so
    (``Route.body_depth``): a deeper body is refused by its brackets, before it is
    decoded; every body the schema accepts is taken (the explainer's form: 3)."""
    named = {route: route.body_depth for route in BODIES if route.body_depth}
    assert named == {route: deepest(schemas.document(route.schema)) for route in named}
    assert [f"{r.method} {r.path}" for r in named] == ["POST /lab/explain"]


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string"},
        {"type": "array", "maxItems": 3},
        {"type": "array", "maxItems": 3, "items": {"type": "string"}},
        {"type": "object", "properties": {}},
        {"type": "object", "maxProperties": 3},
        {"type": "object", "maxProperties": 3, "additionalProperties": {}},
    ],
    ids=["string", "array-items", "array-item-length", "object-size", "object-names",
         "object-values"],
)  # fmt: skip
def test_a_schema_without_bounds_has_no_largest_body(schema):
    with pytest.raises(Unbounded):
        largest_json(schema)


def test_the_largest_body_is_measured_as_written():
    """The measure against a body written out: one astral character, two levels."""
    schema = {
        "type": "object",
        "maxProperties": 1,
        "additionalProperties": False,
        "properties": {"a": {"type": "array", "maxItems": 1,
                             "items": {"type": "string", "maxLength": 1}}},
    }  # fmt: skip
    written = '{\n    "\\u0061": [\n        "\\ud83e\\udd84"\n    ]\n}'
    assert largest_json(schema) == len(written)


@pytest.mark.parametrize(
    "route", [r for r in routes.ROUTES if not (r.schema or r.form)][:3]
)
def test_a_row_that_reads_no_body_names_no_limit(route):
    assert route.body_limit is None
    with pytest.raises(ValueError, match="body_limit"):
        routes.Route(route.method, route.path, route.handler, body_limit=1024)
    with pytest.raises(ValueError, match="body_limit"):
        routes.Route(route.method, route.path, route.handler, schema="note")


def test_the_guide_lists_each_limit():
    """docs/api.md, "Request bodies": a line a row, with the row's limit."""
    guide = (Path(__file__).resolve().parents[1] / "docs" / "api.md").read_text()
    listed = {
        (match[1], int(match[2].replace(",", "")))
        for match in re.finditer(r"^\| `(\S+ \S+)`.*\| ([\d,]+) \|$", guide, re.M)
    }
    assert listed == {(f"{r.method} {r.path}", r.body_limit) for r in BODIES}
