"""What several operations say alike, said once: a response or a parameter that
more than one operation gives goes to ``components`` (``responses``,
``parameters``), and each operation refers to it (``$ref``).

Most of the document is such repeats: every operation lists gunicorn's refusals,
the 500 and the 503, most list a 401 and a 429, each HEAD repeats its GET's errors
without their bodies, each path without ``/v1`` its twin's operations. Written out
in every operation they made the document over a megabyte, which Swagger UI at
/docs parses and resolves before it draws anything (docs/development.md, "The
OpenAPI document's size").

A component is named by what it is: a response by its status, a parameter by its
name, then a digest of its content (``401.3fa2c1``, ``limit.5c1e2a``). A name
changes only when what it names does, so a route or an error added later leaves
every other name as it was; two that would share a name get longer digests.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any

RESPONSE = "#/components/responses/"
PARAMETER = "#/components/parameters/"


def share(paths: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Move what more than one operation of ``paths`` gives into components, in
    place, and return those components by kind (``responses``, ``parameters``)."""
    operations = [operation for item in paths.values() for operation in item.values()]
    answers: list[_Slot] = [
        (operation["responses"], status, status)
        for operation in operations
        for status in operation["responses"]
    ]
    parameters: list[_Slot] = [
        (operation["parameters"], index, parameter["name"])
        for operation in operations
        for index, parameter in enumerate(operation.get("parameters", ()))
    ]
    return {
        "responses": _share(answers, RESPONSE),
        "parameters": _share(parameters, PARAMETER),
    }


# Where an object is (its container, its key there) and the label of its name.
_Slot = tuple[Any, Any, str]


def _share(slots: list[_Slot], prefix: str) -> dict[str, Any]:
    """Replace each object found in more than one slot by a reference to it, and
    return the objects so referred to, by name."""
    texts = [(label, _canonical(container[key])) for container, key, label in slots]
    counts = Counter(texts)
    found = {
        text: container[key]
        for (container, key, _), text in zip(slots, texts, strict=True)
        if counts[text] > 1
    }
    names = _names(list(found))
    for (container, key, _), text in zip(slots, texts, strict=True):
        if text in names:
            container[key] = {"$ref": prefix + names[text]}
    return {names[text]: found[text] for text in sorted(found, key=names.__getitem__)}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _names(found: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """A name for each (label, canonical text): the label and the shortest digest
    of the text, from 6 hex digits, that no other object of the kind shares."""
    for size in range(3, 33):
        names = {key: f"{key[0]}.{_digest(key[1], size)}" for key in found}
        if len(set(names.values())) == len(names):
            return names
    raise ValueError("no digest tells these components apart")  # pragma: no cover


def _digest(text: str, size: int) -> str:
    return hashlib.blake2b(text.encode(), digest_size=size).hexdigest()
