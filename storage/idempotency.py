"""Idempotency keys in storage: the creates' claims, and every key's expiry.

A payment keeps its key in its own row (``records.py``): its id is made above
storage, so its answer is rendered before the one insert that claims the key. An
article or a demo note takes its id from the database, so its key is a row of
``idempotency_keys`` (migration 012), unique per (owner, method, route, key):
claimed by the first statement of the create's transaction, then the record is
written and its answer rendered and stored before the transaction commits, so no
one ever sees a claim without its outcome (docs/api.md, "Idempotent creates").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .base import (
    KEY_TTL_S,
    Claim,
    Idempotent,
    KeyInUse,
    Record,
    Render,
    StorageUnavailable,
)
from .dialect import Dialect, Queries, Tx

CLAIM_KEY = (
    "INSERT INTO idempotency_keys (owner, method, route, key, fingerprint, created)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING 1"
)
KEY_WHERE = " WHERE owner = ? AND method = ? AND route = ? AND key = ?"
SWEEP_S = 60  # how often a process frees the expired keys


class IdempotentCreates(Queries):
    """What the creates that take a key share: claim, create, store; the sweep."""

    def __init__(self, dialect: Dialect) -> None:
        super().__init__(dialect)
        self._next_key_sweep = 0.0

    def _expire_keys(self, now: float) -> None:
        """Free the keys older than 24 hours, at most once a minute a process: the
        payments' (a range of the partial index on live keys, migration 003) and
        the other creates' (a range of their index by age, migration 012)."""
        if now < self._next_key_sweep:
            return
        self._next_key_sweep = now + SWEEP_S
        self.dialect.run(
            "UPDATE payments SET idempotency_key = NULL"
            " WHERE idempotency_key IS NOT NULL AND created < ?",
            (now - KEY_TTL_S,),
        )
        self.dialect.run(
            "DELETE FROM idempotency_keys WHERE created < ?", (now - KEY_TTL_S,)
        )

    def _once(
        self,
        claim: Claim,
        now: float,
        create: Callable[[Tx], Record],
        render: Render,
        note: bool = False,
    ) -> Idempotent:
        """``create`` at most once per claimed key: claim, create, store the answer,
        in one transaction; or the first request's stored outcome. A ``note``'s
        key is the note's: it goes with it."""
        self._expire_keys(now)  # before: it is a statement of its own
        scope = (claim.owner, claim.method, claim.route, claim.key)
        with self.dialect.transaction() as tx:
            if note:
                # The notes first, as every create of a note takes them: a create
                # holding them may wait on a key's row (its note pushed out), never
                # the other way round.
                self.dialect.lock_table(tx, "notes")
            for _ in range(5):  # a key freed by the expiry in between: claim again
                if self._claim(tx, CLAIM_KEY, (*scope, claim.fingerprint, now)):
                    record = create(tx)
                    body = render(record)
                    made = str(record["id"])
                    tx.run(
                        "UPDATE idempotency_keys SET status = 201, body = ?,"
                        " resource_id = ?, note_id = ?" + KEY_WHERE,
                        (body.decode(), made, record["id"] if note else None, *scope),
                    )
                    return Idempotent(claim.fingerprint, 201, body, made, False)
                first = self._claim(
                    tx,
                    "SELECT fingerprint, status, body, resource_id, created"
                    " FROM idempotency_keys" + KEY_WHERE + self.dialect.for_update,
                    scope,
                )
                if first is None:
                    continue  # freed after this claim met it: claim again
                if first[4] >= now - KEY_TTL_S:
                    stored = first[2].encode()
                    return Idempotent(first[0], first[1], stored, first[3], True)
                # Expired and not yet swept: free it (held above), and claim afresh.
                tx.run("DELETE FROM idempotency_keys" + KEY_WHERE, scope)
        raise StorageUnavailable("the idempotency key kept changing hands")

    def _claim(self, tx: Tx, sql: str, args: tuple[Any, ...]) -> Any:
        """``sql``, a statement that may wait on another request's claim of the key:
        past the short lock wait, the key is in use (a 409), not an outage."""
        try:
            return tx.one(sql, args)
        except Exception as exc:
            if self.dialect.lock_wait_given_up(exc):
                raise KeyInUse(1) from exc
            raise
