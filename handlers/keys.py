"""API keys and OAuth clients: made, listed and revoked by an admin.

An API key, sent in ``X-API-Key``, acts as the user it was made for (the admin
making it, unless ``userId`` names another). An OAuth client trades its id and
secret for Bearer tokens at ``POST /oauth/token`` (``handlers/oauth.py``); those
speak for the client itself, which owns no user record.

The key and the client secret are random 256-bit secrets, shown once, in the answer
that makes them: the store keeps only their SHA-256, so a lost one is replaced,
never recovered, and lists never carry them. Deleting revokes at once: a key is
looked up on every request, and a client's tokens go with the client (the foreign
key cascades).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from ..errors import ValidationError, found
from ..storage.base import ApiKeyStore, OAuthClientStore, UnknownUser
from ..web import Request, Response, empty_response, json_response
from ..web.auth import new_secret, secret_hash
from ..web.pagination import Pages


def create_api_key(
    request: Request, store: ApiKeyStore, clock: Callable[[], float]
) -> Response:
    body = request.payload
    admin = request.require_principal()
    key = new_secret()
    try:
        record = store.create_api_key(
            body["name"], body.get("userId", admin.id), secret_hash(key), clock()
        )
    except UnknownUser:
        raise ValidationError.one("/userId", "names no user") from None
    location = request.link(f"/api/keys/{record['id']}")
    return json_response({**record, "key": key}, 201, [("Location", location)])


def list_api_keys(request: Request, store: ApiKeyStore, pages: Pages) -> Response:
    return pages.list(request, "api-keys", store.list_api_keys)


def delete_api_key(request: Request, store: ApiKeyStore, id: int) -> Response:
    found(store.delete_api_key(id), "API key", id)
    return empty_response()


def create_oauth_client(
    request: Request, store: OAuthClientStore, clock: Callable[[], float]
) -> Response:
    secret = new_secret()
    record = store.create_oauth_client(
        request.payload["name"], _client_id(), secret_hash(secret), clock()
    )
    location = request.link(f"/api/oauth-clients/{record['id']}")
    return json_response(
        {**record, "clientSecret": secret}, 201, [("Location", location)]
    )


def list_oauth_clients(
    request: Request, store: OAuthClientStore, pages: Pages
) -> Response:
    return pages.list(request, "oauth-clients", store.list_oauth_clients)


def delete_oauth_client(request: Request, store: OAuthClientStore, id: int) -> Response:
    found(store.delete_oauth_client(id), "OAuth client", id)
    return empty_response()


def _client_id() -> str:
    # Public, but unguessable all the same, and free of ":" (RFC 7617 forbids one in
    # a Basic user-id) and of anything form encoding would change.
    return secrets.token_urlsafe(16)
