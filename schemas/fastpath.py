"""A fast path for valid bodies: a schema's keywords compiled into one plain function.

jsonschema walks a schema generically and costs 40-60 us for a small article body;
most bodies are valid, and proving that needs only a few ``isinstance`` and ``len``
checks. ``compile_check`` turns a schema that uses only the keywords below into a
function that returns True when the instance is certainly valid. It never decides
that a body is invalid: anything it does not accept goes to jsonschema, which stays
the authority and reports every failing field. A schema with any other keyword gets
no fast path at all.

Both paths read ``integer`` as JSON Schema does (draft 2020-12, Validation section
6.1.1): any number of whole value, so ``9555.0`` is one (``is_integer``). Once a
body is valid, ``whole_numbers`` hands such a value over as an ``int`` where the
schema wants an integer, its bounds already checked (docs/api.md, "Request bodies").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

Check = Callable[[Any], bool]
Convert = Callable[[Any], Any]


def is_integer(value: Any) -> bool:
    """JSON Schema's integer: a number of whole value (``1``, ``1.0``, ``1e3``)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    if isinstance(value, float):
        return value.is_integer()
    if isinstance(value, Decimal) and value.is_finite():
        # From its digits, not arithmetic: 1E+999999999999 is whole at no cost.
        _, digits, exponent = value.as_tuple()
        return isinstance(exponent, int) and (
            exponent >= 0 or not any(digits[exponent:])
        )
    return False


_BOUNDS = {"maxLength", "maxItems", "maxProperties"}
# Keywords that do not constrain the instance.
# ``format`` too: no format checker is on, so it annotates (JSON Schema 2020-12's
# format-annotation vocabulary), as ``int64`` on an id does.
_ANNOTATIONS = {
    "$schema",
    "$id",
    "title",
    "description",
    "format",
    "x-enum-from-config",
    "x-max-items-from-config",
}
_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": is_integer,
    "number": lambda v: (
        isinstance(v, int | float | Decimal) and not isinstance(v, bool)
    ),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def compile_check(schema: dict[str, Any]) -> Check | None:
    """A certainly-valid test for ``schema``, or None if it uses other keywords."""
    checks: list[Check] = []
    # The bounds first: a value over one is refused before its items are looked at.
    for keyword, value in sorted(schema.items(), key=lambda kv: kv[0] not in _BOUNDS):
        check = _keyword(keyword, value, schema)
        if check is None:
            return None
        checks.append(check)
    return lambda instance: all(check(instance) for check in checks)


# One case a keyword: left as it is until its performance issue reworks it.
def _keyword(keyword: str, value: Any, schema: dict[str, Any]) -> Check | None:  # noqa: C901
    if keyword in _ANNOTATIONS:
        return lambda instance: True
    match keyword:
        case "type":
            tests = [
                _TYPES[kind] for kind in ([value] if isinstance(value, str) else value)
            ]
            return lambda v: any(test(v) for test in tests)
        case "properties":
            compiled: dict[str, Check] = {}
            for name, sub in value.items():
                check = compile_check(sub)
                if check is None:
                    return None
                compiled[name] = check
            return lambda v: (
                not isinstance(v, dict)
                or all(compiled[name](v[name]) for name in compiled if name in v)
            )
        case "required":
            return lambda v: not isinstance(v, dict) or all(name in v for name in value)
        case "additionalProperties" if value is False:
            known = set(schema.get("properties", {}))
            return lambda v: not isinstance(v, dict) or known.issuperset(v)
        case "items":
            item = compile_check(value)
            if item is None:
                return None
            return lambda v: not isinstance(v, list) or all(item(x) for x in v)
        case "maxProperties":
            return lambda v: not isinstance(v, dict) or len(v) <= value
        case "minLength" | "maxLength" | "minItems" | "maxItems":
            kind = str if keyword.endswith("Length") else list
            low = value if keyword.startswith("min") else 0
            high = value if keyword.startswith("max") else float("inf")
            return lambda v: not isinstance(v, kind) or low <= len(v) <= high
        case "uniqueItems" if value is True:
            # Only lists of strings are decided here; JSON equality of other values
            # (1 == 1.0, true != 1) is left to jsonschema.
            return lambda v: (
                not isinstance(v, list)
                or (all(isinstance(x, str) for x in v) and len(set(v)) == len(v))
            )
        case "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum":
            holds = {
                "minimum": lambda v: v >= value,
                "maximum": lambda v: v <= value,
                "exclusiveMinimum": lambda v: v > value,
                "exclusiveMaximum": lambda v: v < value,
            }[keyword]
            return lambda v: not _TYPES["number"](v) or holds(v)
        case "enum":
            options = [option for option in value if isinstance(option, str)]
            if len(options) != len(value):
                return None
            allowed = frozenset(options)
            return lambda v: isinstance(v, str) and v in allowed
        case "pattern":
            regex = re.compile(value)
            return lambda v: not isinstance(v, str) or regex.search(v) is not None
        case "maxDecimalPlaces":
            return lambda v: (
                not isinstance(v, Decimal) or (v.is_finite() and v == round(v, value))
            )
    return None


def whole_numbers(schema: dict[str, Any]) -> Convert | None:
    """A function that gives a valid instance back with each number where the
    schema wants an integer as an ``int`` (9555.0 -> 9555); None if it wants none.

    Run on valid bodies only, so each such number is within its schema's bounds
    (``load`` wants an integer bounded both ways): ``int()`` never meets 1e300."""
    kinds = schema.get("type", ())
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if "integer" in kinds and "number" not in kinds:
        return lambda v: v if isinstance(v, int) or not is_integer(v) else int(v)
    listed = schema.get("properties", {})
    found = {name: whole_numbers(sub) for name, sub in listed.items()}
    members = {name: to_int for name, to_int in found.items() if to_int is not None}
    others = schema.get("additionalProperties")
    other = whole_numbers(others) if isinstance(others, dict) else None
    item = schema.get("items")
    items = whole_numbers(item) if isinstance(item, dict) else None
    if not members and other is None and items is None:
        return None

    def member(name: str, value: Any) -> Any:
        if name in members:
            return members[name](value)
        return value if name in listed or other is None else other(value)

    def convert(value: Any) -> Any:
        if isinstance(value, dict):
            return {name: member(name, v) for name, v in value.items()}
        if isinstance(value, list) and items is not None:
            return [items(v) for v in value]
        return value

    return convert
