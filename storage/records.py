"""The resources' SQL, written once for every dialect: articles, todos, items,
notes, payments and users.

Each method is one statement (its own transaction), or one transaction that reads
before it writes; what differs between the engines (how a transaction holds what
it read, which errors are conflicts) is the dialect's (``dialect.py``).
"""

from __future__ import annotations

from typing import Any

from . import rows
from .base import (
    KEY_TTL_S,
    Check,
    Claim,
    EmailTaken,
    Idempotent,
    KeyInUse,
    LastAdmin,
    PasswordChanged,
    Record,
    Render,
    StorageUnavailable,
    iso,
)
from .dialect import Tx
from .idempotency import IdempotentCreates

ARTICLE = f"SELECT {rows.ARTICLE_COLUMNS} FROM articles WHERE id = ?"
# A page of one tag: a seek in the tag index, in id order, then each article by id.
# CROSS JOIN keeps article_tags the outer loop on SQLite (which never reorders
# it), so the plan cannot turn into a scan of the articles whatever the
# statistics say; to PostgreSQL it is the inner join it plans as it likes.
TAGGED_PAGE = (
    f"SELECT {rows.qualified('a', rows.ARTICLE_COLUMNS)}"
    " FROM article_tags AS t CROSS JOIN articles AS a"
    " WHERE a.id = t.article_id AND t.tag = ? AND t.article_id > ?"
    " ORDER BY t.article_id LIMIT ?"
)
# The claim of an idempotency key is the insert that stores the payment and its
# answer: unique per (owner, key), so one request of many makes the payment.
INSERT_PAYMENT = (
    f"INSERT INTO payments ({rows.PAYMENT_ROW_COLUMNS})"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING 1"
)
INSERT_ARTICLE = (
    "INSERT INTO articles"
    " (title, tags, created_at, updated_at, author_type, author_id)"
    f" VALUES (?, ?, ?, ?, ?, ?) RETURNING {rows.ARTICLE_COLUMNS}"
)


class Records(IdempotentCreates):
    # -- articles ---------------------------------------------------------------

    def list_articles(
        self, after: int, limit: int, tag: str | None = None
    ) -> list[Record]:
        # The tag index is kept by triggers (migration 005), in the transaction of
        # every article write, so no method here writes it.
        if tag is None:
            return self._page(
                "articles", rows.ARTICLE_COLUMNS, rows.articles, after, limit
            )
        if self._unstorable(tag):
            return []
        found = self.dialect.all(TAGGED_PAGE, (tag, after, rows.page_size(limit)))
        return [rows.article(row) for row in found]

    def get_article(self, article_id: int) -> Record | None:
        row = self.dialect.one(ARTICLE, (article_id,))
        return rows.article(row) if row else None

    def create_article(
        self, title: str, tags: list[str], now: float, author: Record | None = None
    ) -> Record:
        row = self.dialect.one(
            INSERT_ARTICLE, _article_row(title, tags, now, author), write=True
        )
        return rows.article(row)

    def create_article_once(
        self,
        claim: Claim,
        title: str,
        tags: list[str],
        now: float,
        author: Record | None,
        render: Render,
    ) -> Idempotent:
        def create(tx: Tx) -> Record:
            row = tx.one(INSERT_ARTICLE, _article_row(title, tags, now, author))
            return rows.article(row)

        return self._once(claim, now, create, render)

    def _article_held(self, tx: Tx, article_id: int) -> Record | None:
        """The article, held until the transaction ends: two conditional writes
        with one ETag never both pass."""
        row = tx.one(ARTICLE + self.dialect.for_update, (article_id,))
        return rows.article(row) if row else None

    def update_article(
        self, article_id: int, changes: Record, now: float, check: Check
    ) -> Record | None:
        with self.dialect.transaction() as tx:
            current = self._article_held(tx, article_id)
            if current is None:
                return None
            check(current)
            updated = rows.changed_article(current, changes, now)
            if updated is None:
                return current
            tx.run(
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
        with self.dialect.transaction() as tx:
            current = self._article_held(tx, article_id)
            if current is None:
                return False
            check(current)
            tx.run("DELETE FROM articles WHERE id = ?", (article_id,))
            return True

    # -- todos and items ----------------------------------------------------------

    def get_todo(self, todo_id: int) -> Record | None:
        row = self.dialect.one(
            f"SELECT {rows.TODO_COLUMNS} FROM todos WHERE id = ?", (todo_id,)
        )
        return rows.todo(row) if row else None

    def list_items(self, after: int, limit: int) -> list[Record]:
        return self._page("items", rows.ITEM_COLUMNS, rows.items, after, limit)

    # -- payments -----------------------------------------------------------------

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
        # The claim is one statement committed at once: a concurrent request with
        # the key waits on the unique index only while it runs, then finds the
        # outcome.
        for _ in range(5):  # a key freed by the expiry in between: claim again
            try:
                if self.dialect.one(INSERT_PAYMENT, row, write=True):
                    return first_time
            except StorageUnavailable as exc:
                # Waited the short lock wait on the first request's claim.
                if self.dialect.lock_wait_given_up(exc.__cause__):
                    raise KeyInUse(1) from exc
                raise
            with self.dialect.transaction() as tx:
                first = tx.one(
                    "SELECT fingerprint, status, body, id, created FROM payments"
                    " WHERE scope = ? AND idempotency_key = ?"
                    + self.dialect.for_update,
                    (owner, key),
                )
                if first is None:
                    # The row that held the key let it go while this waited for
                    # it (a concurrent request freed the expired key and claimed
                    # it anew, in a row this statement cannot see): claim again.
                    continue
                if first[4] >= now - KEY_TTL_S:
                    return Idempotent(
                        first[0], first[1], bytes(first[2]), first[3], True
                    )
                # The key expired and was not yet swept: free it from that row
                # alone (held above), and claim it afresh.
                tx.run(
                    "UPDATE payments SET idempotency_key = NULL WHERE id = ?",
                    (first[3],),
                )
                if tx.one(INSERT_PAYMENT, row):
                    return first_time
        raise StorageUnavailable("the idempotency key kept changing hands")

    def get_payment(self, payment_id: str, owner: str) -> Record | None:
        if self._unstorable(payment_id):
            return None
        row = self.dialect.one(
            f"SELECT {rows.PAYMENT_COLUMNS} FROM payments WHERE id = ? AND scope = ?",
            (payment_id, owner),
        )
        return rows.payment(row) if row else None

    # -- notes --------------------------------------------------------------------

    def list_notes(self, after: int, limit: int) -> list[Record]:
        return self._page("notes", rows.NOTE_COLUMNS, rows.notes, after, limit)

    def get_note(self, note_id: int) -> Record | None:
        row = self.dialect.one(
            f"SELECT {rows.NOTE_COLUMNS} FROM notes WHERE id = ?", (note_id,)
        )
        return rows.note(row) if row else None

    def create_note(self, text: str, now: float, keep: int) -> Record:
        with self.dialect.transaction() as tx:
            # Creates queue here, so concurrent ones never leave more than `keep`.
            self.dialect.lock_table(tx, "notes")
            return _insert_note(tx, text, now, keep)

    def create_note_once(
        self, claim: Claim, text: str, now: float, keep: int, render: Render
    ) -> Idempotent:
        def create(tx: Tx) -> Record:
            return _insert_note(tx, text, now, keep)  # the notes locked by _once

        return self._once(claim, now, create, render, note=True)

    def update_note(self, note_id: int, text: str) -> Record | None:
        row = self.dialect.one(
            f"UPDATE notes SET text = ? WHERE id = ? RETURNING {rows.NOTE_COLUMNS}",
            (text, note_id),
            write=True,
        )
        return rows.note(row) if row else None

    def delete_note(self, note_id: int) -> bool:
        return self._delete("notes", note_id)

    # -- users --------------------------------------------------------------------

    def create_user(
        self,
        email: str,
        password_hash: str,
        first: str,
        last: str,
        role: str,
        now: float,
    ) -> Record:
        # WHERE NOT EXISTS, not ON CONFLICT: a refused insert then draws no id, on
        # either engine. Two inserts racing past it meet the unique index.
        key = rows.email_key(email)
        stamp = iso(now)  # created and updated at once: one text for both
        try:
            row = self.dialect.one(
                "INSERT INTO users (email, email_key, password_hash, first_name,"
                " last_name, role, created_at, updated_at)"
                " SELECT ?, ?, ?, ?, ?, ?, ?, ?"
                " WHERE NOT EXISTS (SELECT 1 FROM users WHERE email_key = ?)"
                f" RETURNING {rows.USER_COLUMNS}",
                (email, key, password_hash, first, last, role, stamp, stamp, key),
                write=True,
            )
        except self.dialect.unique_violation:  # taken by a concurrent insert
            raise EmailTaken() from None
        if row is None:
            raise EmailTaken()
        return rows.user(row)

    def get_user(self, user_id: int) -> Record | None:
        row = self.dialect.one(
            f"SELECT {rows.USER_COLUMNS} FROM users WHERE id = ?", (user_id,)
        )
        return rows.user(row) if row else None

    def user_login(self, email: str) -> tuple[Record, str] | None:
        if self._unstorable(email):
            return None
        row = self.dialect.one(
            f"SELECT {rows.USER_COLUMNS}, password_hash FROM users WHERE email_key = ?",
            (rows.email_key(email),),
        )
        return (rows.user(row), row[7]) if row else None

    def list_users(self, after: int, limit: int) -> list[Record]:
        return self._page("users", rows.USER_COLUMNS, rows.users, after, limit)

    def replace_user(
        self,
        user_id: int,
        fields: Record,
        password_hash: str | None,
        now: float,
        keep_login: str | None = None,
        current_hash: str | None = None,
    ) -> Record | None:
        email = fields["email"]
        # Compared by the UPDATE itself: PostgreSQL reads the row again once a
        # change committed meanwhile lets it go, so the second of two is refused.
        unchanged = " AND password_hash = ?" if current_hash is not None else ""
        try:
            # A role, a name, a password: all of it remembered with a token.
            with self.dialect.changing_credentials() as tx:
                if fields["role"] != "admin":
                    self._refuse_last_admin(tx, user_id)
                row = tx.one(
                    "UPDATE users SET email = ?, email_key = ?, first_name = ?,"
                    " last_name = ?, role = ?, updated_at = ?,"
                    " password_hash = coalesce(?, password_hash)"
                    f" WHERE id = ?{unchanged} RETURNING {rows.USER_COLUMNS}",
                    (
                        email,
                        rows.email_key(email),
                        fields["firstName"],
                        fields["lastName"],
                        fields["role"],
                        iso(now),
                        password_hash,
                        user_id,
                        *((current_hash,) if current_hash is not None else ()),
                    ),  # fmt: skip
                )
                if row is None and current_hash is not None:
                    if tx.one("SELECT 1 FROM users WHERE id = ?", (user_id,)):
                        raise PasswordChanged()
                if row is not None and password_hash is not None:
                    # A new password ends the other logins: a stolen token too.
                    tx.run(
                        "DELETE FROM tokens WHERE user_id = ?"
                        " AND login IS DISTINCT FROM ?",
                        (user_id, keep_login),
                    )
        except self.dialect.unique_violation:
            raise EmailTaken() from None
        return rows.user(row) if row else None

    def delete_user(self, user_id: int) -> bool:
        with self.dialect.changing_credentials() as tx:
            self._refuse_last_admin(tx, user_id)
            # Foreign keys cascade to the user's tokens and API keys.
            return bool(
                tx.one("DELETE FROM users WHERE id = ? RETURNING 1", (user_id,))
            )

    def _refuse_last_admin(self, tx: Tx, user_id: int) -> None:
        """Raise ``LastAdmin`` if the user is the only admin. The admins are read
        in the caller's writing transaction, held in id order (PostgreSQL; SQLite's
        transaction holds the database), so a concurrent demotion waits for it and
        then sees its outcome: two admins demoting each other at once leave one."""
        admins = tx.all(
            "SELECT id FROM users WHERE role = 'admin' ORDER BY id"
            + self.dialect.for_update
        )
        if [tuple(admin) for admin in admins] == [(user_id,)]:
            raise LastAdmin()

    def has_admin(self) -> bool:
        found = self.dialect.one("SELECT 1 FROM users WHERE role = 'admin' LIMIT 1")
        return bool(found)

    def set_password(self, email: str, password_hash: str, now: float) -> Record | None:
        if self._unstorable(email):
            return None
        with self.dialect.changing_credentials() as tx:
            row = tx.one(
                "UPDATE users SET password_hash = ?, updated_at = ?"
                f" WHERE email_key = ? RETURNING {rows.USER_COLUMNS}",
                (password_hash, iso(now), rows.email_key(email)),
            )
            if row is not None:  # every login of the account ends: a stolen one too
                tx.run("DELETE FROM tokens WHERE user_id = ?", (row[0],))
        return rows.user(row) if row else None


def _article_row(
    title: str, tags: list[str], now: float, author: Record | None
) -> tuple[Any, ...]:
    """A new article's values, in the order of ``INSERT_ARTICLE``."""
    kind, author_id = (author["type"], author["id"]) if author else (None, None)
    stamp = iso(now)  # created and updated at once: one text for both
    return (title, rows.tags_text(tags), stamp, stamp, kind, author_id)


def _insert_note(tx: Tx, text: str, now: float, keep: int) -> Record:
    """Add a note and remove the oldest beyond the newest ``keep``; the caller's
    transaction holds the notes (``Dialect.lock_table``)."""
    row: Any = tx.one(
        "INSERT INTO notes (text, created_at) VALUES (?, ?)"
        f" RETURNING {rows.NOTE_COLUMNS}",
        (text, iso(now)),
    )
    # Ids only grow, so the oldest notes are those below the newest `keep`
    # (counted, not subtracted: deleted notes leave gaps in the ids). Their
    # keys go with them (migration 012's foreign key).
    tx.run(
        "DELETE FROM notes WHERE id <= (SELECT id FROM notes"
        " ORDER BY id DESC LIMIT 1 OFFSET ?)",
        (keep,),
    )
    return rows.note(row)
