"""The deterministic seed: 200 todos and 1,000 items, the same on every machine.

Todo ``n`` belongs to user ``ceil(n / 20)``; every third todo is completed. Item ``n``
was created ``n`` minutes after 2026-01-01T00:00:00Z. No randomness, so examples in
the docs and assertions in tests can name exact values.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

from .base import iso

if TYPE_CHECKING:
    from .dialect import Tx

TODO_COUNT = 200
ITEM_COUNT = 1000
_EPOCH = 1767225600  # 2026-01-01T00:00:00Z

_VERBS = ("write", "review", "test", "document", "deploy", "measure", "refactor")
_OBJECTS = ("the parser", "the cursor", "the cache", "the schema", "the client")


def todos() -> Iterator[tuple[int, int, str, int]]:
    """Rows of (id, user_id, title, completed)."""
    for n in range(1, TODO_COUNT + 1):
        title = f"{_VERBS[n % len(_VERBS)]} {_OBJECTS[n % len(_OBJECTS)]} #{n}"
        yield n, math.ceil(n / 20), title, int(n % 3 == 0)


def items() -> Iterator[tuple[int, str, str]]:
    """Rows of (id, name, created_at)."""
    for n in range(1, ITEM_COUNT + 1):
        yield n, f"item {n:04d}", iso(_EPOCH + 60 * n)


def insert_seed(tx: Tx) -> None:
    """The seed's todos and items, into empty tables (at start, and by a reset)."""
    tx.many(
        "INSERT INTO todos (id, user_id, title, completed) VALUES (?, ?, ?, ?)",
        list(todos()),
    )
    tx.many("INSERT INTO items (id, name, created_at) VALUES (?, ?, ?)", list(items()))
