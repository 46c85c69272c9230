"""The same endpoints as bare Falcon 4 resources (a peer, benchmark only)."""

from __future__ import annotations

import common
import falcon


class Todo:
    def on_get(self, req, resp, todo_id):
        resp.data = common.dumps(common.get_todo(todo_id))


class Article:
    def on_get(self, req, resp, article_id):
        resp.data = common.dumps(common.get_article(article_id))


class Articles:
    def on_post(self, req, resp):
        resp.data = common.dumps(common.create_article(req.get_media()))
        resp.status = falcon.HTTP_201


class Items:
    def on_get(self, req, resp):
        page = common.list_items(
            req.get_param("cursor"), req.get_param_as_int("limit", default=20)
        )
        resp.data = common.dumps(page)


class Payments:
    def on_post(self, req, resp):
        status, body, _ = common.create_payment(
            req.get_header("Idempotency-Key"), req.get_media()
        )
        resp.data, resp.status = body, falcon.HTTP_201


application = falcon.App()
application.add_route("/v1/todos/{todo_id:int}", Todo())
application.add_route("/v1/articles/{article_id:int}", Article())
application.add_route("/v1/articles", Articles())
application.add_route("/v1/items", Items())
application.add_route("/v1/payments", Payments())
