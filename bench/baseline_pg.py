"""The PostgreSQL baseline: a bare WSGI function doing refapi's round trips, no more.

refapi on PostgreSQL makes two round trips a request that this also makes: the
rate limit's upsert of the caller's bucket, then the request's own query (the same
SQL as ``common``'s, on the same tables, made by refapi's migrations). Each worker
opens its own psycopg_pool ``ConnectionPool`` after the fork (at its first request),
two connections at most as refapi's default ``REFAPI_DB_POOL_MAX``, in autocommit:
each statement is its own transaction. Ratios of refapi on PostgreSQL are to this.
It answers with refapi's response headers, as the SQLite baseline does (its
helpers, ``baseline.read`` and ``baseline.created``).
"""

from __future__ import annotations

import json
import os
import secrets
import time
from urllib.parse import parse_qs

import baseline
import common
from psycopg_pool import ConnectionPool

from refapi.storage.postgres.buckets import _TAKE_ONE as TAKE

# TAKE is refapi's own statement for one bucket (imported, so the two cannot drift):
# one upsert that refills the caller's row on the database's clock and takes a
# token. Its capacity is out of reach, as refapi's is in the benchmark.
CAPACITY = REFILL = 1_000_000_000
_pool: ConnectionPool | None = None


def pool() -> ConnectionPool:
    global _pool
    if _pool is None:
        _pool = ConnectionPool(
            os.environ["DATABASE_URL"],
            min_size=1,
            max_size=2,
            kwargs={"autocommit": True},
        )
    return _pool


def application(environ, start_response):
    method, path = environ["REQUEST_METHOD"], environ["PATH_INFO"]
    with pool().connection() as conn:
        conn.execute(
            TAKE,
            {"key": environ["REMOTE_ADDR"], "capacity": CAPACITY, "refill": REFILL},
        ).fetchone()
        if method == "GET" and path.startswith("/v1/todos/"):
            todo = get_todo(conn, int(path[10:]))
            return baseline.read(start_response, common.dumps(todo))
        if method == "GET" and path.startswith("/v1/articles/"):
            article = get_article(conn, int(path[13:]))
            return baseline.read(start_response, common.dumps(article))
        if method == "GET" and path == "/v1/items":
            query = parse_qs(environ.get("QUERY_STRING", ""))
            limit = int(query.get("limit", ["20"])[0])
            page = list_items(conn, query.get("cursor", [None])[0], limit)
            return baseline.items_page(start_response, page, limit)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = json.loads(environ["wsgi.input"].read(length))
        if method == "POST" and path == "/v1/articles":
            article = create_article(conn, body)
            location = f"/v1/articles/{article['id']}"
            return baseline.created(start_response, location, common.dumps(article))
        if method == "POST" and path == "/v1/payments":
            status, data, payment_id = create_payment(
                conn, environ["HTTP_IDEMPOTENCY_KEY"], body
            )
            location = f"/v1/payments/{payment_id}"
            return baseline.created(start_response, location, data)
    return baseline.respond(start_response, "404 Not Found", b"{}")


def get_todo(conn, todo_id: int) -> dict | None:
    row = conn.execute(
        "SELECT user_id, id, title, completed FROM todos WHERE id = %s", (todo_id,)
    ).fetchone()
    if row is None:
        return None
    return {"userId": row[0], "id": row[1], "title": row[2], "completed": bool(row[3])}


def list_items(conn, cursor: str | None, limit: int) -> dict | None:
    after = 0 if cursor is None else common.verify(cursor)
    if after is None:
        return None
    rows = conn.execute(
        "SELECT id, name, created_at FROM items WHERE id > %s ORDER BY id LIMIT %s",
        (after, limit + 1),
    ).fetchall()
    data = [{"id": r[0], "name": r[1], "createdAt": r[2]} for r in rows[:limit]]
    next_cursor = common.sign(data[-1]["id"]) if len(rows) > limit else None
    return {"data": data, "nextCursor": next_cursor}


def get_article(conn, article_id: int) -> dict | None:
    row = conn.execute(
        f"SELECT {common.ARTICLE_COLUMNS} FROM articles WHERE id = %s", (article_id,)
    ).fetchone()
    return common.article(row) if row else None


def create_article(conn, body: dict) -> dict:
    stamp = common.now()
    row = conn.execute(
        "INSERT INTO articles"
        " (title, tags, created_at, updated_at, author_type, author_id)"
        f" VALUES (%s, %s, %s, %s, 'user', 1) RETURNING {common.ARTICLE_COLUMNS}",
        (body["title"], json.dumps(body.get("tags", [])), stamp, stamp),
    ).fetchone()
    return common.article(row)


def create_payment(conn, key: str, body: dict) -> tuple[int, bytes, str]:
    """One INSERT of the payment with its key; on conflict, the stored answer.
    Its status, its JSON and its id."""
    epoch = time.time()
    payment = {"id": f"pay_{int(epoch * 1e6):014x}{secrets.token_hex(10)}",
               "amount": body["amount"], "currency": body["currency"],
               "createdAt": common.now()}  # fmt: skip
    data = common.dumps(payment)
    inserted = conn.execute(
        "INSERT INTO payments (id, amount, currency, created_at, scope,"
        " idempotency_key, fingerprint, status, body, created)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT DO NOTHING RETURNING 1",
        (payment["id"], str(payment["amount"]), payment["currency"],
         payment["createdAt"], "bench", key, "-", 201, data, epoch),
    ).fetchone()  # fmt: skip
    if inserted:
        return 201, data, payment["id"]
    row = conn.execute(
        "SELECT status, body, id FROM payments"
        " WHERE scope = %s AND idempotency_key = %s",
        ("bench", key),
    ).fetchone()
    return row[0], bytes(row[1]), row[2]
