"""JSON Schema's integers, and a valid body's whole numbers handed over as ints.

Draft 2020-12 reads ``integer`` as any number of whole value (Validation section
6.1.1), so ``9555.0`` is one (``is_integer``). Once a body is valid,
``whole_numbers`` hands such a value over as an ``int`` where the schema wants an
integer, its bounds already checked (docs/api.md, "Request bodies").
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

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
