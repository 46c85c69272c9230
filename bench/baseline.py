"""The baseline: a bare WSGI function doing refapi's storage work, nothing else.

Ratios in the benchmark are to this: what a server costs beyond the bare minimum of
parsing the path, running the query and writing JSON.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qs

import common

JSON = [("Content-Type", "application/json; charset=utf-8")]


def respond(start_response, status: str, body: bytes):
    start_response(status, [*JSON, ("Content-Length", str(len(body)))])
    return [body]


def application(environ, start_response):
    method, path = environ["REQUEST_METHOD"], environ["PATH_INFO"]
    if method == "GET" and path.startswith("/v1/todos/"):
        todo = common.get_todo(int(path[10:]))
        return respond(start_response, "200 OK", common.dumps(todo))
    if method == "GET" and path.startswith("/v1/articles/"):
        article = common.get_article(int(path[13:]))
        return respond(start_response, "200 OK", common.dumps(article))
    if method == "GET" and path == "/v1/items":
        query = parse_qs(environ.get("QUERY_STRING", ""))
        page = common.list_items(
            query.get("cursor", [None])[0], int(query.get("limit", ["20"])[0])
        )
        return respond(start_response, "200 OK", common.dumps(page))
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = json.loads(environ["wsgi.input"].read(length))
    if method == "POST" and path == "/v1/articles":
        return respond(
            start_response, "201 Created", common.dumps(common.create_article(body))
        )
    if method == "POST" and path == "/v1/payments":
        status, data = common.create_payment(environ["HTTP_IDEMPOTENCY_KEY"], body)
        return respond(start_response, "201 Created", data)
    return respond(start_response, "404 Not Found", b"{}")
