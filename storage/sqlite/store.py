"""SQLite backend, the default: one file, WAL, shared safely by every worker of a host.

- WAL lets readers proceed while one writer commits; ``synchronous=NORMAL`` in WAL
  mode loses nothing when a process is killed (the WAL is in the OS page cache), only
  on a power cut, and makes a commit several times cheaper than ``FULL``.
- Writes that read first take ``BEGIN IMMEDIATE``, so two writers queue on the busy
  timeout instead of one failing with "database is locked" when it upgrades its lock.
- The file itself (made at start, never while serving; checked against its path;
  which errors are faults) is ``file``'s business. Every query here goes
  through ``_one``, ``_all`` or ``_write``, which let faults out as
  ``StorageUnavailable``; a write asks for a checked connection.
- Connections are opened lazily, one per thread and process, so nothing is opened
  at import time and nothing crosses a ``fork``.
- Credentials found are remembered per connection and trusted while the host's
  credential generation (``buckets.py``, shared memory) stays where it was when
  they were read; every change to a credential moves it once committed. So a
  valid token costs no SQL while nothing changes, and a revocation, a role change
  or a deleted user takes effect at once in every worker (docs/authentication.md,
  "Remembered credentials").
"""

from __future__ import annotations

import contextlib
import functools
import math
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .. import rows
from ..base import (
    KEY_TTL_S,
    Bucket,
    Check,
    EmailTaken,
    Idempotent,
    LastAdmin,
    Record,
    StorageUnavailable,
    UnknownUser,
    iso,
)
from .buckets import SharedBuckets
from .file import BUSY_TIMEOUT_S, SqliteFile
from .schema import MIGRATIONS, migrate, seed

# A write that proves writes work (lock, file mode, room on disk) and leaves one row.
_PROBE = (
    "INSERT INTO meta (key, value) VALUES ('probe', hex(randomblob(8)))"
    " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)


# The same columns of ``users AS u``, for the credential lookups that join it.
_U_COLUMNS = rows.qualified("u", rows.USER_COLUMNS)
REMEMBERED = 4096  # credentials remembered per connection, as the limiter's keys


# A page of one tag: a seek in the tag index, in id order, then each article by id.
# CROSS JOIN keeps article_tags the outer loop (SQLite never reorders it), so the
# plan cannot turn into a scan of the articles whatever the statistics say.
TAGGED_PAGE = (
    f"SELECT {rows.qualified('a', rows.ARTICLE_COLUMNS)}"
    " FROM article_tags AS t CROSS JOIN articles AS a ON a.id = t.article_id"
    " WHERE t.tag = ? AND t.article_id > ? ORDER BY t.article_id LIMIT ?"
)
_INSERT_PAYMENT = (
    f"INSERT INTO payments ({rows.PAYMENT_ROW_COLUMNS})"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class _OverLimit(Exception):
    """A login attempt would pass a limit: roll back, and wait ``wait`` seconds."""

    def __init__(self, wait: float) -> None:
        self.wait = wait


def _refuse_last_admin(conn: sqlite3.Connection, user_id: int) -> None:
    """Raise ``LastAdmin`` if the user is the only admin. In the caller's write
    transaction (BEGIN IMMEDIATE), so no other writer changes a role before the
    caller's change: two admins demoting each other at once leave one."""
    (last,) = conn.execute(
        "SELECT count(*) FROM users AS u WHERE u.id = ? AND u.role = 'admin'"
        " AND NOT EXISTS (SELECT 1 FROM users WHERE role = 'admin' AND id != u.id)",
        (user_id,),
    ).fetchone()
    if last:
        raise LastAdmin()


class SqliteStore:
    """The store over one SQLite file; creating it prepares the file (at start)."""

    def __init__(
        self,
        path: str,
        *,
        busy_timeout_s: float = BUSY_TIMEOUT_S,
        migrations: Path = MIGRATIONS,
    ) -> None:
        self.path = path
        self._file = SqliteFile(
            path, functools.partial(migrate, folder=migrations), busy_timeout_s
        )
        self._buckets = SharedBuckets(path + ".buckets", busy_timeout_s)
        self._next_key_cleanup = 0.0
        self._file.start()

    def _connection(self, write: bool = False) -> sqlite3.Connection:
        """This thread's connection, for tests of this backend's tables."""
        return self._file.connection(check=write)

    # Every query goes through one of these three, which let a fault of the
    # environment out as StorageUnavailable (a 503) and anything else as it is.

    def _one(self, sql: str, args: tuple = (), write: bool = False) -> Any:
        conn = self._file.connection(write)
        try:
            return conn.execute(sql, args).fetchone()
        except sqlite3.Error as exc:
            self._fault(exc)
            raise  # a bug, not an outage: a 500

    def _all(self, sql: str, args: tuple = ()) -> list[Any]:
        conn = self._file.connection()
        try:
            return conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            self._fault(exc)
            raise

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        conn = self._file.connection(check=True)
        try:
            conn.execute("BEGIN IMMEDIATE")
            yield conn
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:  # a failed COMMIT may leave it open
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                self._fault(exc)
            raise

    def _page(
        self,
        table: str,
        columns: str,
        mapper: Callable[[Any], Record],
        after: int,
        limit: int,
    ) -> list[Record]:
        """A keyset page of ``table`` in id order: the rows after ``after``, one
        past the page (``rows.page_size``)."""
        found = self._all(
            f"SELECT {columns} FROM {table} WHERE id > ? ORDER BY id LIMIT ?",
            (after, rows.page_size(limit)),
        )
        return [mapper(row) for row in found]

    def _delete(self, table: str, record_id: int) -> bool:
        """Delete one row by id in one statement; whether there was one."""
        sql = f"DELETE FROM {table} WHERE id = ? RETURNING 1"
        return bool(self._one(sql, (record_id,), write=True))

    def _fault(self, exc: sqlite3.Error) -> None:
        outage = self._file.outage(exc)
        if outage is not None:
            raise outage from exc

    # -- the interface ----------------------------------------------------------

    def ping(self) -> None:
        self._one(_PROBE, write=True)

    def ping_buckets(self) -> None:
        try:
            self._buckets.check()
        except OSError as exc:
            raise StorageUnavailable(f"rate-limit buckets: {exc}") from exc

    def secret_key(self) -> bytes:
        cache = self._file.cache()  # per connection: a restored file brings its own
        if "secret" not in cache:
            row = self._one("SELECT value FROM meta WHERE key = 'secret_key'")
            if row is None:
                raise StorageUnavailable("the database holds no secret key")
            cache["secret"] = bytes.fromhex(row[0])
        return cache["secret"]

    def reset_epoch(self) -> int:
        # Not cached: a reset is another process's write (python -m refapi.storage).
        row = self._one("SELECT value FROM meta WHERE key = 'reset_epoch'")
        return int(row[0]) if row else 0

    def list_articles(
        self, after: int, limit: int, tag: str | None = None
    ) -> list[Record]:
        # The tag index is kept by triggers (migration 005), in the transaction of
        # every article write, so no method here writes it.
        if tag is None:
            return self._page(
                "articles", rows.ARTICLE_COLUMNS, rows.article, after, limit
            )
        found = self._all(TAGGED_PAGE, (tag, after, rows.page_size(limit)))
        return [rows.article(row) for row in found]

    def get_article(self, article_id: int) -> Record | None:
        row = self._one(
            f"SELECT {rows.ARTICLE_COLUMNS} FROM articles WHERE id = ?", (article_id,)
        )
        return rows.article(row) if row else None

    def create_article(
        self, title: str, tags: list[str], now: float, author: Record | None = None
    ) -> Record:
        # One statement is one implicit transaction: no read-then-write to upgrade.
        kind, author_id = (author["type"], author["id"]) if author else (None, None)
        row = self._one(
            "INSERT INTO articles"
            " (title, tags, created_at, updated_at, author_type, author_id)"
            f" VALUES (?, ?, ?, ?, ?, ?) RETURNING {rows.ARTICLE_COLUMNS}",
            (
                title,
                rows.tags_text(tags),
                iso(now),
                iso(now),
                kind,
                author_id,
            ),
            write=True,
        )
        return rows.article(row)

    def update_article(
        self, article_id: int, changes: Record, now: float, check: Check
    ) -> Record | None:
        with self._write() as conn:
            row = conn.execute(
                f"SELECT {rows.ARTICLE_COLUMNS} FROM articles WHERE id = ?",
                (article_id,),
            ).fetchone()
            if row is None:
                return None
            current = rows.article(row)
            check(current)
            updated = rows.changed_article(current, changes, now)
            if updated is None:
                return current
            conn.execute(
                "UPDATE articles SET title = ?, tags = ?, updated_at = ? WHERE id = ?",
                (
                    updated["title"],
                    rows.tags_text(updated["tags"]),
                    updated["updatedAt"],
                    article_id,
                ),
            )
            return updated

    def delete_article(self, article_id: int, check: Check) -> bool:
        with self._write() as conn:
            row = conn.execute(
                f"SELECT {rows.ARTICLE_COLUMNS} FROM articles WHERE id = ?",
                (article_id,),
            ).fetchone()
            if row is None:
                return False
            check(rows.article(row))
            conn.execute("DELETE FROM articles WHERE id = ?", (article_id,))
            return True

    def get_todo(self, todo_id: int) -> Record | None:
        row = self._one(
            f"SELECT {rows.TODO_COLUMNS} FROM todos WHERE id = ?", (todo_id,)
        )
        return rows.todo(row) if row else None

    def list_items(self, after: int, limit: int) -> list[Record]:
        return self._page("items", rows.ITEM_COLUMNS, rows.item, after, limit)

    def create_payment(
        self,
        owner: str,
        key: str,
        fingerprint: str,
        payment: Record,
        body: bytes,
        now: float,
    ) -> Idempotent:
        row = rows.payment_row(owner, key, fingerprint, payment, body, now)
        first_time = Idempotent(fingerprint, 201, body, payment["id"], replayed=False)
        self._expire_keys(now)
        # One statement, one implicit transaction; writers queue on the busy timeout.
        if self._one(
            _INSERT_PAYMENT + " ON CONFLICT DO NOTHING RETURNING 1", row, write=True
        ):
            return first_time
        with self._write() as conn:
            first = conn.execute(
                "SELECT fingerprint, status, body, id, created FROM payments"
                " WHERE scope = ? AND idempotency_key = ?",
                (owner, key),
            ).fetchone()
            if first is not None and first[4] >= now - KEY_TTL_S:
                return Idempotent(first[0], first[1], bytes(first[2]), first[3], True)
            # The key expired and was not yet cleaned up: free it and start afresh.
            conn.execute(
                "UPDATE payments SET idempotency_key = NULL"
                " WHERE scope = ? AND idempotency_key = ?",
                (owner, key),
            )
            conn.execute(_INSERT_PAYMENT, row)
            return first_time

    def _expire_keys(self, now: float) -> None:
        """Free the keys of payments older than 24 hours, at most once a minute."""
        if now < self._next_key_cleanup:
            return
        self._next_key_cleanup = now + 60
        # A range of the partial index on live keys' creation times (migration 003).
        self._one(
            "UPDATE payments SET idempotency_key = NULL"
            " WHERE idempotency_key IS NOT NULL AND created < ?",
            (now - KEY_TTL_S,),
            write=True,
        )

    def get_payment(self, payment_id: str, owner: str) -> Record | None:
        row = self._one(
            f"SELECT {rows.PAYMENT_COLUMNS} FROM payments WHERE id = ? AND scope = ?",
            (payment_id, owner),
        )
        return rows.payment(row) if row else None

    def list_notes(self, after: int, limit: int) -> list[Record]:
        return self._page("notes", rows.NOTE_COLUMNS, rows.note, after, limit)

    def get_note(self, note_id: int) -> Record | None:
        row = self._one(
            f"SELECT {rows.NOTE_COLUMNS} FROM notes WHERE id = ?", (note_id,)
        )
        return rows.note(row) if row else None

    def create_note(self, text: str, now: float, keep: int) -> Record:
        with self._write() as conn:
            row = conn.execute(
                "INSERT INTO notes (text, created_at) VALUES (?, ?)"
                f" RETURNING {rows.NOTE_COLUMNS}",
                (text, iso(now)),
            ).fetchone()
            # Ids only grow, so the oldest notes are those below the newest `keep`
            # (counted, not subtracted: deleted notes leave gaps in the ids).
            conn.execute(
                "DELETE FROM notes WHERE id <= (SELECT id FROM notes"
                " ORDER BY id DESC LIMIT 1 OFFSET ?)",
                (keep,),
            )
        return rows.note(row)

    def update_note(self, note_id: int, text: str) -> Record | None:
        row = self._one(
            f"UPDATE notes SET text = ? WHERE id = ? RETURNING {rows.NOTE_COLUMNS}",
            (text, note_id),
            write=True,
        )
        return rows.note(row) if row else None

    def delete_note(self, note_id: int) -> bool:
        return self._delete("notes", note_id)

    # -- users and credentials ------------------------------------------------

    def create_user(
        self,
        email: str,
        password_hash: str,
        first: str,
        last: str,
        role: str,
        now: float,
    ) -> Record:
        try:
            row = self._one(
                "INSERT INTO users (email, email_key, password_hash, first_name,"
                " last_name, role, created_at, updated_at)"
                f" VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING {rows.USER_COLUMNS}",
                (
                    email,
                    rows.email_key(email),
                    password_hash,
                    first,
                    last,
                    role,
                    iso(now),
                    iso(now),
                ),
                write=True,
            )
        except sqlite3.IntegrityError:
            raise EmailTaken() from None
        return rows.user(row)

    def get_user(self, user_id: int) -> Record | None:
        row = self._one(
            f"SELECT {rows.USER_COLUMNS} FROM users WHERE id = ?", (user_id,)
        )
        return rows.user(row) if row else None

    def user_login(self, email: str) -> tuple[Record, str] | None:
        row = self._one(
            f"SELECT {rows.USER_COLUMNS}, password_hash FROM users WHERE email_key = ?",
            (rows.email_key(email),),
        )
        return (rows.user(row), row[7]) if row else None

    def list_users(self, after: int, limit: int) -> list[Record]:
        return self._page("users", rows.USER_COLUMNS, rows.user, after, limit)

    def replace_user(
        self,
        user_id: int,
        fields: Record,
        password_hash: str | None,
        now: float,
        keep_login: str | None = None,
    ) -> Record | None:
        email = fields["email"]
        try:
            with self._write() as conn:
                if fields["role"] != "admin":
                    _refuse_last_admin(conn, user_id)
                row = conn.execute(
                    "UPDATE users SET email = ?, email_key = ?, first_name = ?,"
                    " last_name = ?, role = ?, updated_at = ?,"
                    " password_hash = coalesce(?, password_hash)"
                    f" WHERE id = ? RETURNING {rows.USER_COLUMNS}",
                    (
                        email,
                        rows.email_key(email),
                        fields["firstName"],
                        fields["lastName"],
                        fields["role"],
                        iso(now),
                        password_hash,
                        user_id,
                    ),  # fmt: skip
                ).fetchone()
                if row is not None and password_hash is not None:
                    # A new password ends the other logins: a stolen token too.
                    conn.execute(
                        "DELETE FROM tokens WHERE user_id = ? AND login IS NOT ?",
                        (user_id, keep_login),
                    )
        except sqlite3.IntegrityError:
            raise EmailTaken() from None
        self._credentials_changed()  # a role, a name, a password: all remembered
        return rows.user(row) if row else None

    def delete_user(self, user_id: int) -> bool:
        with self._write() as conn:
            _refuse_last_admin(conn, user_id)
            # Foreign keys cascade to the user's tokens and API keys.
            deleted = conn.execute(
                "DELETE FROM users WHERE id = ? RETURNING 1", (user_id,)
            ).fetchone()
        self._credentials_changed()
        return bool(deleted)

    def has_admin(self) -> bool:
        return bool(self._one("SELECT 1 FROM users WHERE role = 'admin' LIMIT 1"))

    def create_tokens(
        self,
        login: str,
        hashes: dict[str, str],
        expires: float,
        user_id: int | None = None,
        client_id: int | None = None,
    ) -> None:
        with self._write() as conn:
            conn.executemany(
                "INSERT INTO tokens (hash, kind, login, user_id, client_id, expires)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (digest, kind, login, user_id, client_id, expires)
                    for kind, digest in hashes.items()
                ],
            )
            # Expired tokens go as new ones come: a range of the expiry index.
            conn.execute("DELETE FROM tokens WHERE expires < ?", (expires - 86400 * 7,))

    def find_token(self, kind: str, token_hash: str, now: float) -> Record | None:
        known = self._remembered()
        hit = known.get(token_hash) if known is not None else None
        if hit is not None and hit[0] == kind:
            return hit[1] if hit[2] > now else None
        row = self._one(
            "SELECT t.login, t.client_id, t.expires,"
            f" {_U_COLUMNS}"
            " FROM tokens AS t LEFT JOIN users AS u ON u.id = t.user_id"
            " WHERE t.hash = ? AND t.kind = ?",
            (token_hash, kind),
        )
        if row is None or row[2] <= now:
            return None
        user = rows.user(row[3:]) if row[3] is not None else None
        found = {"login": row[0], "clientId": row[1], "user": user}
        _remember(known, token_hash, (kind, found, row[2]))
        return found

    def end_login(self, login: str) -> None:
        self._one("DELETE FROM tokens WHERE login = ?", (login,), write=True)
        self._credentials_changed()

    def create_api_key(
        self, name: str, user_id: int, key_hash: str, now: float
    ) -> Record:
        try:
            row = self._one(
                "INSERT INTO api_keys (name, user_id, hash, created_at)"
                f" VALUES (?, ?, ?, ?) RETURNING {rows.API_KEY_COLUMNS}",
                (name, user_id, key_hash, iso(now)),
                write=True,
            )
        except sqlite3.IntegrityError:
            # The foreign key: checked in the insert, so a user deleted meanwhile
            # cannot be given a key.
            raise UnknownUser() from None
        return rows.api_key(row)

    def list_api_keys(self, after: int, limit: int) -> list[Record]:
        return self._page("api_keys", rows.API_KEY_COLUMNS, rows.api_key, after, limit)

    def delete_api_key(self, key_id: int) -> bool:
        deleted = self._delete("api_keys", key_id)
        self._credentials_changed()
        return deleted

    def find_api_key(self, key_hash: str) -> Record | None:
        known = self._remembered()
        hit = known.get(key_hash) if known is not None else None
        if hit is not None and hit[0] == "api_key":
            return hit[1]
        row = self._one(
            f"SELECT {_U_COLUMNS}"
            " FROM api_keys AS k JOIN users AS u ON u.id = k.user_id WHERE k.hash = ?",
            (key_hash,),
        )
        if row is None:
            return None
        user = rows.user(row)
        _remember(known, key_hash, ("api_key", user, math.inf))
        return user

    def remembered_credentials_hold(self) -> bool:
        return True  # the generation was read as each one was answered

    def _remembered(self) -> dict[str, Any] | None:
        """This connection's remembered credentials, digest -> (kind, record,
        expires), every one read at the credential generation there is now; None
        when the generation cannot be read: nothing is trusted, nothing kept.
        Records are shared by every request that finds them: read them, never
        change them."""
        try:
            number: int | None = self._buckets.generation()
        except OSError:
            number = None  # the limiter reports the file; the lookup goes on
        # The number of the file opened last: another file (a copy put back) may
        # hold the very number this one had when a credential was remembered.
        generation = (self._buckets.opened, number)
        cache = self._file.cache()
        if "credentials" not in cache or cache["generation"] != generation:
            # Moved, or another file: only what is read from now on may match,
            # never a number come back.
            cache["credentials"], cache["generation"] = {}, generation
        return cache["credentials"] if number is not None else None

    def _credentials_changed(self) -> None:
        """After a committed change to a credential: every worker reads again."""
        try:
            self._buckets.bump()
        except OSError as exc:
            # Committed, but other workers may still trust what they remember.
            raise StorageUnavailable(f"rate-limit buckets: {exc}") from exc

    def create_oauth_client(
        self, name: str, client_id: str, secret_hash: str, now: float
    ) -> Record:
        row = self._one(
            "INSERT INTO oauth_clients (name, client_id, secret_hash, created_at)"
            f" VALUES (?, ?, ?, ?) RETURNING {rows.OAUTH_CLIENT_COLUMNS}",
            (name, client_id, secret_hash, iso(now)),
            write=True,
        )
        return rows.oauth_client(row)

    def list_oauth_clients(self, after: int, limit: int) -> list[Record]:
        return self._page(
            "oauth_clients", rows.OAUTH_CLIENT_COLUMNS, rows.oauth_client, after, limit
        )

    def delete_oauth_client(self, record_id: int) -> bool:
        deleted = self._delete("oauth_clients", record_id)
        self._credentials_changed()
        return deleted

    def find_oauth_client(self, client_id: str) -> tuple[Record, str] | None:
        row = self._one(
            f"SELECT {rows.OAUTH_CLIENT_COLUMNS}, secret_hash FROM oauth_clients"
            " WHERE client_id = ?",
            (client_id,),
        )
        return (rows.oauth_client(row), row[4]) if row else None

    def reserve_login_attempt(
        self, limits: Sequence[tuple[str, int]], now: float, window: float
    ) -> float:
        try:
            with self._write() as conn:
                conn.execute(
                    "DELETE FROM login_attempts WHERE started <= ?", (now - window,)
                )
                for key, limit in limits:
                    count, started = conn.execute(
                        "INSERT INTO login_attempts (key, started, count)"
                        " VALUES (?, ?, 1) ON CONFLICT (key)"
                        " DO UPDATE SET count = count + 1 RETURNING count, started",
                        (key, now),
                    ).fetchone()
                    if count > limit:  # the transaction counts none, then
                        raise _OverLimit(started + window - now)
        except _OverLimit as over:
            return max(over.wait, 1e-3)
        return 0.0

    def release_login_attempt(self, keys: Sequence[str]) -> None:
        with self._write() as conn:
            conn.executemany(
                "UPDATE login_attempts SET count = count - 1"
                " WHERE key = ? AND count > 0",
                [(key,) for key in keys],
            )

    def take_from_buckets(
        self,
        buckets: Sequence[Bucket],
        now: float,
        refund: Bucket | None = None,
    ) -> tuple[bool, list[float]]:
        try:
            return self._buckets.take_all(buckets, now, refund)
        except OSError as exc:
            raise StorageUnavailable(f"rate-limit buckets: {exc}") from exc

    def reset(self) -> None:
        # Accounts and credentials stay: a reset must not lock the operator out.
        with self._write() as conn:
            for table in ("payments", "articles", "notes", "todos", "items"):
                conn.execute(f"DELETE FROM {table}")
            conn.execute(
                "DELETE FROM sqlite_sequence WHERE name IN ('articles', 'notes')"
            )
            seed(conn)
            # In the same transaction: no worker sees the new ids with the old epoch.
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('reset_epoch', '1')"
                " ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
            )

    def hold(self) -> None:
        pass  # each thread has its connection already (storage/sqlite/file.py)

    def let_go(self) -> None:
        pass

    def close(self) -> None:
        self._buckets.close()
        self._file.close()


def _remember(known: dict[str, Any] | None, digest: str, entry: tuple) -> None:
    if known is None:
        return  # the generation could not be read: nothing is kept
    if len(known) >= REMEMBERED:
        known.clear()  # forgetting costs lookups, never a wrong answer
    known[digest] = entry
