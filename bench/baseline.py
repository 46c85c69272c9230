"""The baseline: a bare WSGI function doing refapi's storage work, nothing else.

Ratios in the benchmark are to this: what a server costs beyond the bare minimum of
parsing the path, running the query and writing JSON. It answers with the response
headers refapi sends for the same request (the same names, values of the same
shape), so a ratio never counts the bytes and the server's work of headers against
refapi: the ``ETag`` is the same hash of the same bytes, the request id a prefix and
a counter as refapi makes it; the rate limit's fields are constants, since the bare
app keeps no buckets (that work is refapi's, and counted against it).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import secrets
from urllib.parse import parse_qs

import common

CONTENT_TYPE = "application/json; charset=utf-8"
# What refapi adds to every answer, its rate limit's fields as they read out of reach.
EVERY = [
    ("Vary", "Accept"),
    ("X-Content-Type-Options", "nosniff"),
    ("RateLimit-Policy", '"default";q=1000000000;w=1'),
    ("RateLimit", '"default";r=999999999;t=0'),
]
_PREFIX = secrets.token_hex(10)
_COUNTER = itertools.count()


def etag(body: bytes) -> str:
    """refapi's entity tag: a hash of the Content-Type and the body."""
    digest = hashlib.blake2b(CONTENT_TYPE.encode(), digest_size=12)
    digest.update(b"\n")
    digest.update(body)
    return f'"{digest.hexdigest()}"'


def respond(start_response, status: str, body: bytes, headers=()):
    start_response(
        status,
        [("Content-Type", CONTENT_TYPE), *headers,
         ("Content-Length", str(len(body))),
         ("X-Request-Id", f"{_PREFIX}{next(_COUNTER):012x}"), *EVERY],
    )  # fmt: skip
    return [body]


def read(start_response, body: bytes, headers=()):
    """A 200 to a GET: with its ETag, as refapi's."""
    return respond(start_response, "200 OK", body, [*headers, ("ETag", etag(body))])


def items_page(start_response, page: dict, limit: int):
    """A page of items, with the next page's cursor in headers too, as refapi's."""
    headers = []
    if page["nextCursor"]:
        after = page["nextCursor"]
        link = f'</v1/items?cursor={after}&limit={limit}>; rel="next"'
        headers = [("X-Next-Cursor", after), ("Link", link)]
    return read(start_response, common.dumps(page), headers)


def created(start_response, location: str, body: bytes):
    headers = [("Location", location), ("Cache-Control", "no-store")]
    return respond(start_response, "201 Created", body, headers)


def application(environ, start_response):
    method, path = environ["REQUEST_METHOD"], environ["PATH_INFO"]
    if method == "GET" and path.startswith("/v1/todos/"):
        todo = common.get_todo(int(path[10:]))
        return read(start_response, common.dumps(todo))
    if method == "GET" and path.startswith("/v1/articles/"):
        article = common.get_article(int(path[13:]))
        return read(start_response, common.dumps(article))
    if method == "GET" and path == "/v1/items":
        query = parse_qs(environ.get("QUERY_STRING", ""))
        limit = int(query.get("limit", ["20"])[0])
        page = common.list_items(query.get("cursor", [None])[0], limit)
        return items_page(start_response, page, limit)
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = json.loads(environ["wsgi.input"].read(length))
    if method == "POST" and path == "/v1/articles":
        article = common.create_article(body)
        location = f"/v1/articles/{article['id']}"
        return created(start_response, location, common.dumps(article))
    if method == "POST" and path == "/v1/payments":
        status, data, payment_id = common.create_payment(
            environ["HTTP_IDEMPOTENCY_KEY"], body
        )
        return created(start_response, f"/v1/payments/{payment_id}", data)
    return respond(start_response, "404 Not Found", b"{}")
