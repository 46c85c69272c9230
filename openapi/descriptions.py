"""What each operation does, in a sentence or two: the ``description`` of each
operation of the OpenAPI document, by (method, path).

Kept as data beside the route table rather than in the handlers' docstrings, which
teach the code (docs/development.md, "The contract tools"); a row of ``routes.py``
with no sentence here fails the document's tests, so a new route is described when
it is added. A row may carry its own (``Route.description``): the lab's do, so the
core's document names none of its paths.
"""

from __future__ import annotations

DEMO = "/api/demo.php"

DESCRIPTIONS: dict[tuple[str, str], str] = {
    ("GET", "/"): "The front page: links to the docs, the web UI, this document, the "
    "health check and each collection, as HTML for a browser or JSON. Public.",
    ("GET", "/v1/articles"): "A page of articles in ascending id; `tag` keeps those "
    "carrying that tag. Public; also as XML or CSV.",
    ("POST", "/v1/articles"): "Write an article; its author is the caller. With an "
    "`Idempotency-Key`, a retry with the same body gets the stored answer.",
    ("GET", "/v1/articles/{id}"): "One article, with its strong `ETag`. Public.",
    ("PATCH", "/v1/articles/{id}"): "Change an article (JSON Merge Patch, RFC 7396); "
    "its author or an admin only. With `If-Match`, only if the copy is current; the "
    "answer carries the new `ETag`.",
    ("DELETE", "/v1/articles/{id}"): "Delete an article; its author or an admin "
    "only, and with `If-Match` only if the copy is current.",
    ("GET", "/v1/todos/{id}"): "One todo of the fixed seed data. Public.",
    ("GET", "/v1/items"): "A page of items, by id. Public.",
    ("POST", "/v1/payments"): "Record a payment once: a retry with the same "
    "`Idempotency-Key` and body gets the stored answer, another body `422`.",
    ("GET", "/v1/payments/{id}"): "One of the caller's payments.",
    ("GET", DEMO): "The demo's reads, picked by `action`: a page of notes (`list`) "
    "or one note (`detail`). Public.",
    ("POST", DEMO): "The demo's `create`: write a note. Public. With an "
    "`Idempotency-Key`, a retry with the same body gets the stored answer.",
    ("PATCH", DEMO): "The demo's `update`: change a note (JSON Merge Patch). Public.",
    ("DELETE", DEMO): "The demo's `delete`: delete a note. Public.",
    ("GET", "/api/download_csv.php"): "The endpoint catalogue: one CSV line per "
    "operation, as a file to save. Public.",
    ("POST", "/api/users"): "Register a user account. Public; the password must "
    "not be a common one.",
    ("GET", "/api/users"): "A page of user accounts.",
    ("GET", "/api/users/{id}"): "One user account.",
    ("PUT", "/api/users/{id}"): "Replace a user account: the user or an admin; "
    "changing the password needs the current one. The answer carries no `ETag` "
    "(RFC 9110 9.3.4: the account is stored changed); a GET gives it.",
    ("DELETE", "/api/users/{id}"): "Delete a user account: the user or an admin, never "
    "the last admin.",
    ("POST", "/api/login"): "Sign in with email and password: a Bearer token and a "
    "session cookie, issued together. Public.",
    ("POST", "/api/logout"): "End the login the request was made with: its token "
    "and its session.",
    ("GET", "/api/session"): "The user the session cookie speaks for, and the "
    "CSRF token its unsafe requests send; 401 without a valid session.",
    ("POST", "/api/keys"): "Make an API key for a user; the key is shown once. "
    "Admins only.",
    ("GET", "/api/keys"): "A page of API keys, without their secrets. Admins only.",
    ("DELETE", "/api/keys/{id}"): "Revoke an API key. Admins only.",
    ("POST", "/api/oauth-clients"): "Register an OAuth 2.0 client; its secret is "
    "shown once. Admins only.",
    ("GET", "/api/oauth-clients"): "A page of OAuth 2.0 clients, without their "
    "secrets. Admins only.",
    ("DELETE", "/api/oauth-clients/{id}"): "Remove an OAuth 2.0 client. Admins only.",
    ("POST", "/oauth/token"): "An access token for an OAuth 2.0 client (client "
    "credentials, RFC 6749 section 4.4); the client authenticates itself here, by "
    "HTTP Basic or in the form.",
    ("GET", "/healthz"): "Whether the service and its storage answer: for load "
    "balancers' probes, never rate limited.",
    ("GET", "/api/proxy.php"): "Fetch a JSON document from an allowed upstream "
    "host and pass on its status and body; `503 BUSY` when the host's share of "
    "slow work is taken. Public.",
}
