"""The token endpoint: OAuth 2.0 client credentials (RFC 6749 section 4.4).

A client an admin registered at ``/api/oauth-clients`` trades its id and secret for
a Bearer token::

    POST /oauth/token
    Authorization: Basic base64(client_id ":" client_secret)
    Content-Type: application/x-www-form-urlencoded

    grant_type=client_credentials

answers ``200 {"access_token", "token_type": "Bearer", "expires_in"}`` with
``Cache-Control: no-store`` and ``Pragma: no-cache`` (section 5.1). The client may
send ``client_id`` and ``client_secret`` as form parameters instead of Basic
(section 2.3.1), but not both ways at once. The token speaks for the client (the
principal ``client:<id>``, role ``user``, owning no user record), lives
``REFAPI_TOKEN_TTL`` seconds and dies with its client.

Every refusal here but one is RFC 6749's (section 5.2): ``error`` and
``error_description`` beside our ``code``, ``message`` and ``details``. So this
handler reads the form itself rather than the router: a body of another type than
a form, or not valid for the form's schema is ``invalid_request`` (400), never our
415 or ``VALIDATION_ERROR``. The one is a body over the route's limit: our 413,
refused unread as on every route. A client that fails to authenticate is
``invalid_client`` (401, with a ``Basic`` challenge when it tried Basic); another
grant type is
``unsupported_grant_type``, and any ``scope`` is ``invalid_scope``, as this service
defines none (both 400).
"""

from __future__ import annotations

import functools
import hmac
from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import unquote_plus

from .. import schemas
from ..config import Config
from ..errors import (
    InvalidClient,
    InvalidRequest,
    InvalidScope,
    MalformedRequest,
    UnsupportedGrantType,
    UnsupportedMediaType,
    ValidationError,
)
from ..storage.base import LoginStore, OAuthClientStore, UnknownClient
from ..web import Request, Response, json_response, read_form
from ..web.auth import new_secret, parsed_authorization, secret_hash

FORM_SCHEMA = "oauth-token-request"
GRANT_TYPE = "client_credentials"


class TokenStore(OAuthClientStore, LoginStore, Protocol):
    """What issuing a token asks of storage: the client, then its token's login."""


@functools.cache  # a constant of the package's schema file: compiled once a process
def _form_schema() -> schemas.Schema:
    return schemas.load(FORM_SCHEMA)


@functools.cache
def _max_fields() -> int:
    """The most parameters a token request may have (the schema's maxProperties)."""
    most: int = schemas.document(FORM_SCHEMA)["maxProperties"]
    return most


def issue_token(
    request: Request, store: TokenStore, config: Config, clock: Callable[[], float]
) -> Response:
    form = _read(request, config)
    client = _authenticate(request, store, form)
    if form["grant_type"] != GRANT_TYPE:
        raise UnsupportedGrantType(details={"supported": [GRANT_TYPE]})
    if form.get("scope"):
        raise InvalidScope()
    token, now = new_secret(), clock()
    try:
        store.create_tokens(
            new_secret(),  # the login: the token is its only credential
            {"bearer": secret_hash(token)},
            now + config.token_ttl,
            client_id=client["id"],
        )
    except UnknownClient:  # deleted since it was read: a fresh start, a DELETE
        raise InvalidClient("The client id or secret is wrong.") from None
    body = {
        "access_token": token,
        "token_type": "Bearer",
        "expires_in": config.token_ttl,
    }
    return json_response(body, headers=[("Pragma", "no-cache")])


def _read(request: Request, config: Config) -> dict[str, str]:
    """The form, each parameter once and valid for its schema; else invalid_request."""
    # Over the route's limit: 413, refused unread as on every route (docs/api.md).
    limit = request.body_limit or config.max_body_bytes
    try:
        form = read_form(request.environ, limit, _max_fields())
    except (UnsupportedMediaType, MalformedRequest, ValidationError) as error:
        raise InvalidRequest(error.message, error.details) from None
    repeated = sorted(name for name, values in form.lists() if len(values) > 1)
    if repeated:
        # Section 3.2: a parameter MUST NOT be sent more than once.
        raise InvalidRequest(
            "Each parameter may be sent only once.", {"repeated": repeated}
        )
    fields = form.to_dict()
    try:
        schemas.validate(fields, _form_schema())
    except ValidationError as error:
        raise InvalidRequest(details=error.details) from None
    return fields


def _authenticate(
    request: Request, store: OAuthClientStore, form: dict[str, str]
) -> dict[str, Any]:
    """The client the request authenticates, by HTTP Basic or by the form."""
    # Only Basic is client authentication here; a Bearer token (a client that sends
    # one by default) authenticates no client, so the form must.
    header = request.environ.get("HTTP_AUTHORIZATION", "")
    if header.partition(" ")[0].lower() == "basic":
        client_id, secret = _basic(header)
        if "client_secret" in form or form.get("client_id", client_id) != client_id:
            raise InvalidRequest("Authenticate the client one way: Basic or the form.")
    elif "client_id" in form and "client_secret" in form:
        client_id, secret = form["client_id"], form["client_secret"]
    else:
        raise InvalidClient(
            "Send the client's id and secret by HTTP Basic or as client_id and"
            " client_secret."
        )
    found = store.find_oauth_client(client_id)
    # compare_digest: the time taken says nothing about how much of it matched.
    if found is None or not hmac.compare_digest(found[1], secret_hash(secret)):
        raise InvalidClient("The client id or secret is wrong.")
    return found[0]


def _basic(header: str) -> tuple[str, str]:
    """The client id and secret of a Basic header; invalid_client if malformed."""
    parsed = parsed_authorization(header)
    if parsed is None or parsed.username is None or parsed.password is None:
        raise InvalidClient("The Basic credentials are malformed.")
    # Section 2.3.1: each is form-encoded before Basic joins and encodes them.
    return unquote_plus(parsed.username), unquote_plus(parsed.password)
