"""Articles: the full REST collection under ``/v1/articles``.

POST creates (``201`` with ``Location``), GET lists by keyset pages (``?tag=x``:
only the articles carrying that exact tag, from an index of tags; the cursor is
good for that filter only) or reads one,
PATCH applies a JSON merge patch (RFC 7396: members present replace, ``null``
removes, so ``"tags": null`` empties the tags), DELETE removes (``204``). Writes honour
``If-Match`` and ``If-None-Match`` (RFC 9110 sections 13.1.1 and 13.1.2).

An article's ``author`` is the principal that posted it (``{"type": "user"|"client",
"id"}``), never a member of the body. Only that principal (the same type and id: an
OAuth client is not the user of the same number) or an admin may change or delete it;
anyone else gets ``403 FORBIDDEN`` (OWASP API1:2023, object-level authorization). An
article without an author (stored before authors were kept) is the admins' alone.
The check runs inside the write's transaction, before ``If-Match``: an unknown
article is 404, then a stranger 403, then a stale tag 412, so a stranger learns
nothing of an article's versions.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .. import schemas
from ..errors import Forbidden, ValidationError, found
from ..storage.base import ArticleStore, Check, Record
from ..web import (
    Request,
    Response,
    empty_response,
    idempotency,
    json_bytes,
    json_response,
    pagination,
)
from ..web.auth import Principal
from ..web.conditional import preconditions


@functools.cache  # a constant of the package's schema file: read once a process
def _tag_lengths() -> tuple[int, int]:
    """A tag's bounds, read from the article schema (its one source of truth)."""
    tag = schemas.document("article-create")["properties"]["tags"]["items"]
    return tag["minLength"], tag["maxLength"]


def tag_filter_schema() -> dict[str, Any]:
    """The ``tag`` filter's schema in the OpenAPI document: a tag's bounds."""
    low, high = _tag_lengths()
    return {"type": "string", "minLength": low, "maxLength": high}


def list_articles(
    request: Request, store: ArticleStore, pages: pagination.Pages
) -> Response:
    tag = pagination.text_filter(request, "tag", *_tag_lengths())
    fetch = functools.partial(store.list_articles, tag=tag)
    return pages.list(request, "articles", fetch, {"tag": tag})


def create_article(
    request: Request, store: ArticleStore, clock: Callable[[], float]
) -> Response:
    body, principal = request.payload, request.require_principal()
    title, tags, now = body["title"], body.get("tags", []), clock()
    author = {"type": principal.kind, "id": principal.id}

    def location(article_id: object) -> str:
        return request.link(f"/v1/articles/{article_id}")

    if request.idempotency is None:
        article = store.create_article(title, tags, now, author)
        return json_response(article, 201, [("Location", location(article["id"]))])
    # With a key: made once, a retry answered as the first (docs/api.md).
    claim = request.idempotency.claim(body)
    return idempotency.answer(
        claim,
        lambda: store.create_article_once(claim, title, tags, now, author, json_bytes),
        location,
    )


def get_article(request: Request, store: ArticleStore, id: int) -> Response:
    return json_response(found(store.get_article(id), "Article", id))


def update_article(
    request: Request, store: ArticleStore, clock: Callable[[], float], id: int
) -> Response:
    patch = request.payload
    if "title" in patch and patch["title"] is None:
        raise ValidationError.one("/title", "cannot be removed")
    changes = dict(patch)
    if "tags" in changes and changes["tags"] is None:
        changes["tags"] = []
    check = _author_then_preconditions(request)
    article = store.update_article(id, changes, clock(), check)
    return json_response(found(article, "Article", id))


def delete_article(request: Request, store: ArticleStore, id: int) -> Response:
    deleted = store.delete_article(id, _author_then_preconditions(request))
    found(deleted, "Article", id)
    return empty_response()


def author_or_admin(request: Request, store: ArticleStore, id: int) -> None:
    """Who may change an article (the row's ``may_change``): its author or an
    admin, else 403, before the body is read. An article that is not there
    passes: its 404 is the handler's. The write's transaction asks again, with its
    preconditions, of the row it changes (``_author_then_preconditions``)."""
    current = store.get_article(id)
    caller = request.require_principal()
    if current is not None and not _may_change(caller, current["author"]):
        raise Forbidden(_NOT_THE_AUTHOR)


def _author_then_preconditions(request: Request) -> Check:
    """The check of a write's transaction: the caller may change the article
    (403), then ``If-Match`` and ``If-None-Match`` hold (412)."""
    caller, precondition = request.require_principal(), preconditions(request)

    def check(current: Record) -> None:
        if not _may_change(caller, current["author"]):
            raise Forbidden(_NOT_THE_AUTHOR)
        precondition(current)

    return check


_NOT_THE_AUTHOR = "Only the article's author or an admin may change it."


def _may_change(caller: Principal, author: Record | None) -> bool:
    """An admin may change any article; anyone else only their own."""
    return caller.role == "admin" or author == {"type": caller.kind, "id": caller.id}
