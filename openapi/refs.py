"""How the document's parts point at one another.

An operation names a body schema or a response header by reference (``{"$ref":
"#/components/schemas/article"}``), and the document's ``components`` hold each one
once; ``refs`` walks a part of the document for the names it uses, so the
components are exactly those that something refers to.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

COMPONENT = "#/components/schemas/"
HEADER = "#/components/headers/"


def ref(name: str) -> dict[str, str]:
    """A reference to the component schema ``name``."""
    return {"$ref": COMPONENT + name}


def refs(node: Any, prefix: str) -> Iterator[str]:
    """The names of the components of one kind (``prefix``) that ``node`` uses."""
    if isinstance(node, dict):
        ref = node.get("$ref", "")
        if ref.startswith(prefix):
            yield ref.removeprefix(prefix)
        for value in node.values():
            yield from refs(value, prefix)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value, prefix)


def unique(items: Iterable[Any]) -> list[Any]:
    """``items`` without repeats, in the order they first come."""
    found: list[Any] = []
    for item in items:
        if item not in found:
            found.append(item)
    return found
