"""The credentials' SQL, written once for every dialect: login tokens, API keys,
OAuth clients and the counters of failed logins.

Credentials found are remembered (``remembered.py``) at the credential generation
the dialect reads; every change to a credential goes through the dialect's
``changing_credentials``, which moves it (docs/authentication.md, "Remembered
credentials").
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from . import rows
from .base import Record, UnknownClient, UnknownUser, iso
from .dialect import Queries
from .remembered import Entry, Remembered

# The same columns of ``users AS u``, for the credential lookups that join it.
_U_COLUMNS = rows.qualified("u", rows.USER_COLUMNS)
_FIND_TOKEN = (
    f"SELECT t.login, t.client_id, t.expires, {_U_COLUMNS}"
    " FROM tokens AS t LEFT JOIN users AS u ON u.id = t.user_id"
    " WHERE t.hash = ? AND t.kind = ?"
)
_FIND_API_KEY = (
    f"SELECT {_U_COLUMNS}"
    " FROM api_keys AS k JOIN users AS u ON u.id = k.user_id WHERE k.hash = ?"
)


class _OverLimit(Exception):
    """A login attempt would pass a limit: roll back, and wait ``wait`` seconds."""

    def __init__(self, wait: float) -> None:
        self.wait = wait


class Credentials(Queries):
    def _remembered(self) -> dict[str, Entry]:
        """What may be answered from memory now, and where a lookup is kept."""
        memory: Remembered = self.dialect.remembered()
        return memory.at(self.dialect.credential_generation())

    # -- login tokens -------------------------------------------------------------

    def create_tokens(
        self,
        login: str,
        hashes: dict[str, str],
        expires: float,
        user_id: int | None = None,
        client_id: int | None = None,
    ) -> None:
        try:
            with self.dialect.transaction() as tx:
                tx.many(
                    "INSERT INTO tokens"
                    " (hash, kind, login, user_id, client_id, expires)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        (digest, kind, login, user_id, client_id, expires)
                        for kind, digest in hashes.items()
                    ],
                )
                # Expired tokens go as new ones come: a range of the expiry index.
                tx.run("DELETE FROM tokens WHERE expires < ?", (expires - 86400 * 7,))
        except self.dialect.foreign_key_violation:
            raise (UnknownClient if user_id is None else UnknownUser)() from None

    def find_token(self, kind: str, token_hash: str, now: float) -> Record | None:
        known = self._remembered()
        hit = known.get(token_hash)
        if hit is not None and hit[0] == kind:
            return hit[1] if hit[2] > now else None
        row = self.dialect.one(_FIND_TOKEN, (token_hash, kind))
        if row is None or row[2] <= now:
            return None
        user = rows.user(row[3:]) if row[3] is not None else None
        found = {"login": row[0], "clientId": row[1], "user": user}
        Remembered.keep(known, token_hash, (kind, found, row[2]))
        return found

    def end_login(self, login: str) -> None:
        with self.dialect.changing_credentials() as tx:
            tx.run("DELETE FROM tokens WHERE login = ?", (login,))

    # -- API keys -----------------------------------------------------------------

    def create_api_key(
        self, name: str, user_id: int, key_hash: str, now: float
    ) -> Record:
        try:
            # A key for no user draws no id (WHERE EXISTS); the foreign key still
            # refuses a user deleted meanwhile.
            row = self.dialect.one(
                "INSERT INTO api_keys (name, user_id, hash, created_at)"
                " SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM users WHERE id = ?)"
                f" RETURNING {rows.API_KEY_COLUMNS}",
                (name, user_id, key_hash, iso(now), user_id),
                write=True,
            )
        except self.dialect.foreign_key_violation:
            raise UnknownUser() from None
        if row is None:
            raise UnknownUser()
        return rows.api_key(row)

    def list_api_keys(self, after: int, limit: int) -> list[Record]:
        return self._page("api_keys", rows.API_KEY_COLUMNS, rows.api_keys, after, limit)

    def delete_api_key(self, key_id: int) -> bool:
        return self._delete("api_keys", key_id, credential=True)

    def find_api_key(self, key_hash: str) -> Record | None:
        known = self._remembered()
        hit = known.get(key_hash)
        if hit is not None and hit[0] == "api_key":
            found: Record = hit[1]
            return found
        row = self.dialect.one(_FIND_API_KEY, (key_hash,))
        if row is None:
            return None
        user = rows.user(row)
        Remembered.keep(known, key_hash, ("api_key", user, math.inf))
        return user

    # -- OAuth clients ------------------------------------------------------------

    def create_oauth_client(
        self, name: str, client_id: str, secret_hash: str, now: float
    ) -> Record:
        row = self.dialect.one(
            "INSERT INTO oauth_clients (name, client_id, secret_hash, created_at)"
            f" VALUES (?, ?, ?, ?) RETURNING {rows.OAUTH_CLIENT_COLUMNS}",
            (name, client_id, secret_hash, iso(now)),
            write=True,
        )
        return rows.oauth_client(row)

    def list_oauth_clients(self, after: int, limit: int) -> list[Record]:
        return self._page(
            "oauth_clients", rows.OAUTH_CLIENT_COLUMNS, rows.oauth_clients, after, limit
        )

    def delete_oauth_client(self, record_id: int) -> bool:
        return self._delete("oauth_clients", record_id, credential=True)

    def find_oauth_client(self, client_id: str) -> tuple[Record, str] | None:
        if self._unstorable(client_id):
            return None
        row = self.dialect.one(
            f"SELECT {rows.OAUTH_CLIENT_COLUMNS}, secret_hash FROM oauth_clients"
            " WHERE client_id = ?",
            (client_id,),
        )
        return (rows.oauth_client(row), row[4]) if row else None

    # -- failed logins ------------------------------------------------------------

    def reserve_login_attempt(
        self, limits: Sequence[tuple[str, int]], now: float, window: float
    ) -> float:
        try:
            with self.dialect.transaction() as tx:
                tx.run("DELETE FROM login_attempts WHERE started <= ?", (now - window,))
                # In key order, as every reserve takes them: never in a circle.
                for key, limit in sorted(limits):
                    count, started = tx.one(
                        "INSERT INTO login_attempts AS a (key, started, count)"
                        " VALUES (?, ?, 1) ON CONFLICT (key)"
                        " DO UPDATE SET count = a.count + 1"
                        " RETURNING count, started",
                        (key, now),
                    ) or (0, now)
                    if count > limit:  # the transaction counts none, then
                        raise _OverLimit(started + window - now)
        except _OverLimit as over:
            return max(over.wait, 1e-3)
        return 0.0

    def release_login_attempt(self, keys: Sequence[str]) -> None:
        with self.dialect.transaction() as tx:
            tx.many(
                "UPDATE login_attempts SET count = count - 1"
                " WHERE key = ? AND count > 0",
                [(key,) for key in sorted(keys)],
            )
