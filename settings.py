"""How a setting's text in the environment is read (docs/configuration.md, "Refused
settings"): a number in ASCII digits, a whole one within what SQLite stores, a
switch 0 or 1; empty or unset, the default. A value that is not one is a
ValueError naming its variable."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

# A number setting as a person writes it, in ASCII digits.
_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(
    r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?inf|nan", re.I
)
# The largest whole number a setting may be: what SQLite stores (2^63 - 1).
MAX_SETTING = 2**63 - 1


# ASCII digits only: Python's int() and float() also read "1_000" and other
# scripts' digits, which no one setting a variable means.
def number(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if not _NUMBER.fullmatch(raw):
        raise ValueError(f"{name} must be a number, got {raw!r}")
    value = float(raw)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {raw!r}")
    return value


def integer(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if not _INTEGER.fullmatch(raw):
        raise ValueError(f"{name} must be an integer, got {raw!r}")
    value = int(raw)
    if abs(value) > MAX_SETTING:  # what SQLite and a path id can hold
        raise ValueError(f"{name} must be at most {MAX_SETTING}, got {raw}")
    return value


def switch(env: Mapping[str, str], name: str, default: bool) -> bool:
    """A setting that is on (``1``) or off (``0``); unset, ``default``."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if raw not in ("0", "1"):
        raise ValueError(f"{name} must be 0 or 1, got {raw!r}")
    return raw == "1"
