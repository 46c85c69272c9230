"""Our keywords, and the bound every string, array and object of a schema has.

Each keyword is a function of the keyword's value and an instance that says what
is wrong with the instance, or None; the compiled validator (``schemas/__init__.py``)
and the authority (``authority.py``) both run these very functions, each wrapping
them as its library calls a keyword.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

from .invisible import first_invisible

_FOLDER = Path(__file__).parent

# The bound a schema gives every string, array and object.
BOUNDS = {"string": "maxLength", "array": "maxItems", "object": "maxProperties"}

# One of our keywords: what is wrong with an instance, given the keyword's value;
# None when nothing is.
Check = Callable[[Any, Any], "str | None"]


def _max_decimal_places(places: int, instance: Any) -> str | None:
    """``maxDecimalPlaces``: a number written with at most that many decimals."""
    if isinstance(instance, Decimal):
        if not instance.is_finite():
            return "must be a finite number"
        _, digits, exponent = instance.as_tuple()
        if not isinstance(exponent, int):  # a finite number's always is
            raise TypeError(f"{instance!r} has no integer exponent")
        trailing_zeros = len(digits) - len("".join(map(str, digits)).rstrip("0"))
        if -(exponent + trailing_zeros) > places:
            return f"must have at most {places} decimal places"
    return None


@functools.cache
def common_passwords() -> frozenset[str]:
    """The most common passwords of 8 characters or more, lower-cased."""
    return frozenset((_FOLDER / "common-passwords.txt").read_text().split())


def _not_common_password(wanted: bool, instance: Any) -> str | None:
    """``x-not-common-password``: not on the list, compared without regard to case."""
    if wanted and isinstance(instance, str):
        if instance.casefold() in common_passwords():
            return "is one of the 10,000 most common passwords"
    return None


def _no_invisible(wanted: bool, instance: Any) -> str | None:
    """``x-no-invisible``: no character of ``invisible.RANGES``, named if found."""
    if wanted and isinstance(instance, str):
        found = first_invisible(instance)
        if found is not None:
            return f"must not contain an invisible character (U+{ord(found):04X})"
    return None


OUR_KEYWORDS: dict[str, Check] = {
    "maxDecimalPlaces": _max_decimal_places,
    "x-not-common-password": _not_common_password,
    "x-no-invisible": _no_invisible,
}
