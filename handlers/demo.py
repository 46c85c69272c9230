"""The demo endpoint: one path, ``/api/demo.php``, five operations over notes.

The ``action`` query parameter picks the operation, the way many small PHP APIs
work: ``list`` and ``detail`` (GET), ``create`` (POST), ``update`` (PATCH) and
``delete`` (DELETE). Which action takes which method is data, the rows of the route
table (``router.route.Actions`` picks one, and answers a missing or unknown action with
``400 UNKNOWN_ACTION`` and a known one asked with another method with ``405``);
these functions are the handlers those rows name. ``id`` is a query parameter here,
validated like a path's by the dispatcher.

The demo is public, writes included, and keeps only the newest
``REFAPI_DEMO_MAX_NOTES`` notes: a create beyond that removes the oldest in the
same transaction, so no caller can fill the disk or crowd the others out for good.
"""

from __future__ import annotations

from collections.abc import Callable

from ..config import Config
from ..errors import found
from ..storage.base import NoteStore
from ..web import (
    Request,
    Response,
    empty_response,
    idempotency,
    json_bytes,
    json_response,
)
from ..web.pagination import Pages

_LIST = {"action": "list"}  # the next page's URL must still name the action


def list_notes(request: Request, store: NoteStore, pages: Pages) -> Response:
    return pages.list(request, "notes", store.list_notes, keep=_LIST)


def get_note(request: Request, store: NoteStore, id: int) -> Response:
    return json_response(found(store.get_note(id), "Note", id))


def create_note(
    request: Request, store: NoteStore, config: Config, clock: Callable[[], float]
) -> Response:
    text, now, keep = request.payload["text"], clock(), config.demo_max_notes

    def location(note_id: object) -> str:
        return request.link(f"/api/demo.php?action=detail&id={note_id}")

    if request.idempotency is None:
        note = store.create_note(text, now, keep)
        return json_response(note, 201, [("Location", location(note["id"]))])
    # With a key: made once, a retry answered as the first; the key is the note's
    # and goes with it (docs/api.md, "Idempotent creates").
    claim = request.idempotency.claim(request.payload)
    return idempotency.answer(
        claim,
        lambda: store.create_note_once(claim, text, now, keep, json_bytes),
        location,
    )


def update_note(request: Request, store: NoteStore, id: int) -> Response:
    note = store.update_note(id, request.payload["text"])
    return json_response(found(note, "Note", id))


def delete_note(request: Request, store: NoteStore, id: int) -> Response:
    found(store.delete_note(id), "Note", id)
    return empty_response()
