"""Articles: the full REST collection under ``/v1/articles``.

POST creates (``201`` with ``Location``), GET lists by keyset pages or reads one,
PATCH applies a JSON merge patch (RFC 7396: members present replace, ``null``
removes, so ``"tags": null`` empties the tags), DELETE removes (``204``). Writes honour
``If-Match`` (RFC 9110 section 13.1.1).
"""

from __future__ import annotations

from ..errors import NotFound, ValidationError
from ..web import Request, Response, empty_response, json_response, pagination
from ..web.conditional import if_match
from . import now_iso


def list_articles(request: Request) -> Response:
    after, limit = pagination.window(request, "articles")
    records = request.store.list_articles(after, limit)
    return pagination.page_response(request, "articles", records, limit)


def create_article(request: Request) -> Response:
    body = request.payload
    article = request.store.create_article(
        body["title"], body.get("tags", []), now_iso(request)
    )
    location = request.link(f"/v1/articles/{article['id']}")
    return json_response(article, 201, [("Location", location)])


def get_article(request: Request, id: int) -> Response:
    article = request.store.get_article(id)
    if article is None:
        raise NotFound(f"Article {id} does not exist.")
    return json_response(article)


def update_article(request: Request, id: int) -> Response:
    patch = request.payload
    if "title" in patch and patch["title"] is None:
        raise ValidationError.one("/title", "cannot be removed")
    changes = dict(patch)
    if "tags" in changes and changes["tags"] is None:
        changes["tags"] = []
    article = request.store.update_article(
        id, changes, now_iso(request), if_match(request)
    )
    if article is None:
        raise NotFound(f"Article {id} does not exist.")
    return json_response(article)


def delete_article(request: Request, id: int) -> Response:
    if not request.store.delete_article(id, if_match(request)):
        raise NotFound(f"Article {id} does not exist.")
    return empty_response()
