"""The SQL store: every protocol of ``base.py`` written once, over a dialect.

``Records`` (``records.py``) serves the resources, ``Credentials``
(``credentials.py``) authentication and ``GradeRuns`` (``grades.py``) the lab's
report cards; this adds what keeps the data itself: health, the secret key, the
reset. A backend is this class over its dialect
(``sqlite/dialect.py``, ``postgres/dialect.py``), plus its migrations and the rate
limiter's buckets kept beside its data.
"""

from __future__ import annotations

import secrets

from . import seed
from .base import Buckets, StorageUnavailable
from .credentials import Credentials
from .dialect import Dialect, Tx
from .grades import GradeRuns
from .records import Records

# The tables of accounts and credentials, those whose rows point at another's
# first: a create writes its own table, then its foreign key holds the row it
# points at, so a reset that locks them in this order never waits in a circle.
ACCOUNT_TABLES = ("tokens", "api_keys", "users", "oauth_clients")


class SqlStore(Records, Credentials, GradeRuns):
    """A ``Store`` over ``dialect``; ``buckets`` are the rate limiter's."""

    pooled = True  # the dialect's hold and let_go are called, unless it says not

    def __init__(self, dialect: Dialect, buckets: Buckets) -> None:
        super().__init__(dialect)
        self.buckets = buckets

    def ping(self) -> None:
        # A write that proves writes work (a lock, the file's mode, room on disk,
        # not a standby) and leaves one row.
        self.dialect.one(
            "INSERT INTO meta (key, value) VALUES ('probe', ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value RETURNING 1",
            (secrets.token_hex(8),),
            write=True,
        )

    def secret_key(self) -> bytes:
        cache = self.dialect.cache()  # SQLite's per connection: a restored file's own
        if "secret" not in cache:
            row = self.dialect.one("SELECT value FROM meta WHERE key = 'secret_key'")
            if row is None:
                raise StorageUnavailable("the database holds no secret key")
            cache["secret"] = bytes.fromhex(row[0])
        secret: bytes = cache["secret"]
        return secret

    def reset_epoch(self) -> int:
        # Not cached: a reset is another process's write (python -m refapi reset).
        row = self.dialect.one("SELECT value FROM meta WHERE key = 'reset_epoch'")
        return int(row[0]) if row else 0

    def reset(self, everything: bool = False) -> None:
        # Accounts and credentials stay: a reset must not lock the operator out.
        # A fresh start (`everything`) keeps the first admin for that, and moves
        # the credential generation: no worker honours a credential it remembers.
        locked = ("articles", "notes", *(ACCOUNT_TABLES if everything else ()))
        dialect = self.dialect
        begin = dialect.changing_credentials if everything else dialect.transaction
        with begin() as tx:
            # Creates wait for the reset to commit: ids start again below, and an
            # insert meanwhile could take one twice.
            for table in locked:
                dialect.lock_table(tx, table, exclusive=True)
            # The creates' keys too: a replay would name an id given out again.
            tables = ("idempotency_keys", "payments", "articles", "notes")
            for table in (*tables, "todos", "items"):
                tx.run(f"DELETE FROM {table}")
            dialect.restart_ids(tx, ("articles", "notes"))
            seed.insert_seed(tx)
            if everything:
                _keep_the_first_admin_alone(dialect, tx)
                tx.run("DELETE FROM lab_grade_runs")  # the lab's report cards
            # In the same transaction: no worker sees the new ids with the old epoch.
            tx.run(
                "INSERT INTO meta (key, value) VALUES ('reset_epoch', '1')"
                " ON CONFLICT (key) DO UPDATE"
                " SET value = CAST(CAST(meta.value AS INTEGER) + 1 AS TEXT)"
            )
        if everything:
            self.buckets.empty()

    def hold(self) -> None:
        self.dialect.hold()

    def let_go(self) -> None:
        self.dialect.let_go()

    def close(self) -> None:
        self.dialect.close()


def _keep_the_first_admin_alone(dialect: Dialect, tx: Tx) -> None:
    """Remove every credential, every login counter and every account but the
    first admin: the admin with the lowest id (with no admin, every account)."""
    for table in ("tokens", "api_keys", "oauth_clients", "login_attempts"):
        tx.run(f"DELETE FROM {table}")
    tx.run(
        "DELETE FROM users WHERE id IS DISTINCT FROM"
        " (SELECT min(id) FROM users WHERE role = 'admin')"
    )
    # Nothing left names a removed id (articles, payments, buckets and counters
    # are gone too), so ids start again after the first admin's.
    dialect.restart_ids(tx, ("users", "api_keys", "oauth_clients"))
