"""The same endpoints as bare Flask 3 views (a peer, benchmark only)."""

from __future__ import annotations

import common
from flask import Flask, Response, request

application = Flask(__name__)


def json_response(body: bytes, status: int = 200) -> Response:
    return Response(body, status, content_type="application/json; charset=utf-8")


@application.get("/v1/todos/<int:todo_id>")
def todo(todo_id):
    return json_response(common.dumps(common.get_todo(todo_id)))


@application.get("/v1/articles/<int:article_id>")
def article(article_id):
    return json_response(common.dumps(common.get_article(article_id)))


@application.post("/v1/articles")
def create_article():
    return json_response(common.dumps(common.create_article(request.get_json())), 201)


@application.get("/v1/items")
def items():
    page = common.list_items(
        request.args.get("cursor"), request.args.get("limit", 20, type=int)
    )
    return json_response(common.dumps(page))


@application.post("/v1/payments")
def payments():
    status, body, _ = common.create_payment(
        request.headers["Idempotency-Key"], request.get_json()
    )
    return json_response(body, status)
