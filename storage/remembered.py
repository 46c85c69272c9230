"""Remembered credentials: a valid token costs no lookup while nothing changes.

A credential found (a token's login and user, an API key's user) is remembered
with the credential generation read before it was looked up: a number that every
change to a credential moves (a logout, a key or client deleted, a user changed or
deleted). A credential is answered from memory only while the generation is still
that number; any other number forgets everything remembered, whether it moved on
or came back (a restored backup), so nothing read before is trusted again. So a
revocation, a role change or a deleted user takes effect at once in every worker
(docs/authentication.md, "Remembered credentials").

One piece for both backends: the dialect says where the generation is kept and
where the memory lives; this keeps and forgets.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

LIMIT = 4096  # credentials remembered in one place, as the limiter's keys
Entry = tuple[str, Any, float]  # kind, record, expires


class Remembered:
    """Digest -> (kind, record, expires), all read at one generation. Records are
    shared by every request that finds them: read them, never change them."""

    __slots__ = ("generation", "entries")

    def __init__(self) -> None:
        self.generation: Hashable | None = None
        self.entries: dict[str, Entry] = {}

    def at(self, generation: Hashable | None) -> dict[str, Entry]:
        """What may be trusted at ``generation`` (and kept under it); nothing
        when it cannot be read (None)."""
        if generation is None:
            return {}  # a fresh dict: what is put in it is never read again
        if generation != self.generation:
            self.entries, self.generation = {}, generation
        return self.entries

    @staticmethod
    def keep(
        known: dict[str, tuple[str, Any, float]],
        digest: str,
        entry: tuple[str, Any, float],
    ) -> None:
        if len(known) >= LIMIT:
            known.clear()  # forgetting costs lookups, never a wrong answer
        known[digest] = entry
