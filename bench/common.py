"""What the baseline and the peers share: the SQL, the cursor and the JSON.

Each benchmarked server does the same storage work as refapi (the same queries on
the same schema, made by refapi's own migrations), so the comparison is of the
HTTP layers, not of the databases. Connections are opened lazily, after the fork.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import io
import json
import logging
import os
import re
import secrets
import sqlite3
import sys
import time
from pathlib import Path

SECRET = b"bench-secret"
RESULTS = Path(__file__).resolve().parent / "results.md"
# refapi's writes need a credential: each benchmark starts refapi with this admin,
# logs in as it once and sends its token with every write.
ADMIN = {"email": "bench@localhost", "password": "bench-password"}
_conn: sqlite3.Connection | None = None


def connection() -> sqlite3.Connection:
    global _conn
    if _conn is None:
        _conn = sqlite3.connect(
            os.environ["BENCH_DB"], isolation_level=None, check_same_thread=False
        )
        _conn.execute("PRAGMA synchronous=NORMAL")
        _conn.execute("PRAGMA busy_timeout=30000")
    return _conn


def request_log_off() -> None:
    """refapi's request log off (its ``refapi.request`` logger's level, a host's own
    choice, docs/operating.md, "Logs"): the bare app and the peers log nothing, so a
    comparison with them leaves it out; what the log costs is measured apart."""
    logging.getLogger("refapi.request").setLevel(logging.WARNING)


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def dumps(value) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


_KEYED = hmac.new(SECRET, digestmod=hashlib.sha256)


def _mac(payload: bytes) -> bytes:
    mac = _KEYED.copy()
    mac.update(payload)
    return mac.digest()[:16]


def sign(last_id: int) -> str:
    """The same cursor scheme as refapi's: base64url(payload + HMAC-SHA256[:16])."""
    payload = f"items:{last_id}".encode()
    return base64.urlsafe_b64encode(payload + _mac(payload)).rstrip(b"=").decode()


def verify(cursor: str) -> int | None:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except ValueError:
        return None
    if base64.urlsafe_b64encode(raw).rstrip(b"=").decode() != cursor:
        return None
    payload, mac = raw[:-16], raw[-16:]
    if len(raw) <= 16 or not hmac.compare_digest(mac, _mac(payload)):
        return None
    return int(payload.decode().partition(":")[2])


def get_todo(todo_id: int) -> dict | None:
    row = (
        connection()
        .execute(
            "SELECT user_id, id, title, completed FROM todos WHERE id = ?", (todo_id,)
        )
        .fetchone()
    )
    if row is None:
        return None
    return {"userId": row[0], "id": row[1], "title": row[2], "completed": bool(row[3])}


def list_items(cursor: str | None, limit: int) -> dict | None:
    after = 0 if cursor is None else verify(cursor)
    if after is None:
        return None
    rows = (
        connection()
        .execute(
            "SELECT id, name, created_at FROM items WHERE id > ? ORDER BY id LIMIT ?",
            (after, limit + 1),
        )
        .fetchall()
    )
    data = [{"id": r[0], "name": r[1], "createdAt": r[2]} for r in rows[:limit]]
    next_cursor = sign(data[-1]["id"]) if len(rows) > limit else None
    return {"data": data, "nextCursor": next_cursor}


# refapi's columns and JSON of an article, its author included (a write's author
# is the benchmark's admin, user 1, whose token refapi checks).
ARTICLE_COLUMNS = "id, title, tags, created_at, updated_at, author_type, author_id"


def article(row) -> dict:
    author = {"type": row[5], "id": row[6]} if row[5] is not None else None
    return {"id": row[0], "title": row[1], "tags": json.loads(row[2]),
            "author": author, "createdAt": row[3], "updatedAt": row[4]}  # fmt: skip


def get_article(article_id: int) -> dict | None:
    row = (
        connection()
        .execute(f"SELECT {ARTICLE_COLUMNS} FROM articles WHERE id = ?", (article_id,))
        .fetchone()
    )
    return article(row) if row else None


def create_article(body: dict) -> dict:
    stamp = now()
    row = (
        connection()
        .execute(
            "INSERT INTO articles"
            " (title, tags, created_at, updated_at, author_type, author_id)"
            f" VALUES (?, ?, ?, ?, 'user', 1) RETURNING {ARTICLE_COLUMNS}",
            (body["title"], json.dumps(body.get("tags", [])), stamp, stamp),
        )
        .fetchone()
    )
    return article(row)


def create_payment(key: str, body: dict) -> tuple[int, bytes, str]:
    """One INSERT of the payment with its key; on conflict, the stored answer.
    Its status, its JSON and its id."""
    epoch = time.time()
    payment = {"id": f"pay_{int(epoch * 1e6):014x}{secrets.token_hex(10)}",
               "amount": body["amount"], "currency": body["currency"],
               "createdAt": now()}  # fmt: skip
    data = dumps(payment)
    conn = connection()
    inserted = conn.execute(
        "INSERT INTO payments VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT DO NOTHING RETURNING 1",
        (payment["id"], str(payment["amount"]), payment["currency"],
         payment["createdAt"], "bench", key, "-", 201, data, epoch),
    ).fetchone()  # fmt: skip
    if inserted:
        return 201, data, payment["id"]
    row = conn.execute(
        "SELECT status, body, id FROM payments WHERE scope = ? AND idempotency_key = ?",
        ("bench", key),
    ).fetchone()
    return row[0], bytes(row[1]), row[2]


def environ(method: str, path: str, query: str = "", body: bytes = b"", **headers):
    env = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,  # PEP 3333 asks for it; Falcon reads it
        "HTTP_ACCEPT": "application/json",
    }
    if body:
        env["CONTENT_TYPE"] = "application/json"
        env["CONTENT_LENGTH"] = str(len(body))
    env.update(headers)
    return env


def log_in(app) -> str:
    """``Bearer <token>`` of refapi's admin, from one login through the WSGI ``app``."""
    statuses = []

    def start_response(status, headers, exc_info=None):
        statuses.append(status)

    login = environ("POST", "/api/login", body=dumps(ADMIN))
    body = b"".join(app(login, start_response))
    if statuses != ["200 OK"]:
        raise SystemExit(f"the benchmark's login failed: {statuses} {body!r}")
    return "Bearer " + json.loads(body)["token"]


def write_results(command: str, text: str) -> Path:
    """Put ``text`` under the heading ``# <command>`` of ``bench/results.md``, in
    place of that command's last figures; the other commands' stay."""
    old = RESULTS.read_text() if RESULTS.exists() else ""
    sections = re.split(r"(?m)^(?=# make )", old)
    heading = f"# {command}\n"
    new = f"{heading}\n{text.rstrip()}\n\n"
    kept = [s for s in sections if s.strip()]
    at = next((n for n, s in enumerate(kept) if s.startswith(heading)), None)
    if at is None:
        kept.append(new)
    else:
        kept[at] = new
    RESULTS.write_text("".join(s.rstrip() + "\n\n" for s in kept).rstrip() + "\n")
    return RESULTS
