"""What the document says in words: the service's description (``ABOUT``), what
each response header means and how it is written (``HEADERS``), how a caller proves
who it is (``SECURITY_SCHEMES``, OpenAPI's security schemes) and what a conditional
request header asks (``CONDITIONS``, RFC 9110 section 13.1).

The rest of the package shapes the document; these are its sentences, kept in one
place so that a change of wording is a change here alone.
"""

from __future__ import annotations

from typing import Any

from ..middleware.request_id import REQUEST_ID_SCHEMA
from ..web.auth import SESSION_COOKIE
from ..web.conditional import ETAG_SCHEMA
from ..web.cors import EXPOSED, METHODS, REQUEST_HEADERS
from ..web.http_fields import described
from ..web.pagination import CURSOR_SCHEMA

ERROR = "error"  # schemas/error.json: the body of every error

ABOUT = """\
A reference REST service. Every error, from every layer, is the error object
(`code`, `message`, `details`). Versioned resources live under `/v1`; the same paths
without the prefix answer a request whose `Accept` names
`application/vnd.refapi+json;version=1`. GET and HEAD of a resource answer with a
strong `ETag` and `304` to a matching `If-None-Match`; every path answers `OPTIONS`
with `Allow`. Limited routes carry the IETF `RateLimit` fields."""

# The licence of the code (LICENSE) and who answers for it; no address is
# promised: SECURITY.md says how to report a vulnerability.
LICENSE = {"name": "MIT", "identifier": "MIT"}
CONTACT = {"name": "refapi maintainers"}

# The response headers the service sends: description and schema. A standard
# header's description starts with its line of the table of HTTP fields
# (web/http_fields.py), which the explainer reads too; then what refapi does with it.
HEADERS: dict[str, tuple[str, dict[str, Any]]] = {
    "X-Request-Id": (
        "The request's id, kept from the request when well-formed; in every log line.",
        dict(REQUEST_ID_SCHEMA),
    ),
    "X-Content-Type-Options": (
        "`nosniff`: a browser takes the Content-Type as sent, never guessing another.",
        {"type": "string", "enum": ["nosniff"]},
    ),
    "RateLimit": (
        "Tokens left (r) and seconds until one is back (t), after "
        "draft-ietf-httpapi-ratelimit-headers, for each bucket the request passed: "
        '"default" (under /lab/, the lab\'s own, "lab"), then "auth" (logins, '
        'password changes) or "register"; in the lab "delay" or "explain".',
        {
            "type": "string",
            "pattern": '^"[a-z]+";r=[0-9]+;t=[0-9]+(, "[a-z]+";r=[0-9]+;t=[0-9]+)*$',
        },
    ),
    "RateLimit-Policy": (
        "Each bucket's capacity (q) and the seconds it takes to fill (w), in the "
        "order of RateLimit.",
        {
            "type": "string",
            "pattern": '^"[a-z]+";q=[0-9]+;w=[0-9]+(, "[a-z]+";q=[0-9]+;w=[0-9]+)*$',
        },
    ),
    "ETag": (
        described("ETag") + " Strong, for If-None-Match and If-Match.",
        dict(ETAG_SCHEMA),
    ),
    "Location": (described("Location"), {"type": "string"}),
    "Link": (
        described("Link") + ' The next page: `<url>; rel="next"`.',
        {"type": "string"},
    ),
    "X-Next-Cursor": (
        "The cursor of the next page; absent on the last.",
        {
            "type": "string",
            "maxLength": CURSOR_SCHEMA["maxLength"],
            "pattern": CURSOR_SCHEMA["pattern"],
        },
    ),
    "Idempotent-Replayed": (
        "The stored answer to an earlier request with this Idempotency-Key.",
        {"type": "string", "enum": ["true"]},
    ),
    # delay-seconds; RFC 9111 section 1.2.2 has caches take up to 2^31.
    "Retry-After": (
        described("Retry-After"),
        {"type": "integer", "format": "int32", "minimum": 0, "maximum": 2**31 - 1},
    ),
    "Allow": (described("Allow"), {"type": "string"}),
    "Vary": (described("Vary"), {"type": "string"}),
    "Deprecation": (described("Deprecation"), {"type": "string"}),
    "Sunset": (described("Sunset"), {"type": "string"}),
    "WWW-Authenticate": (
        'The challenge (RFC 6750): `Bearer realm="refapi"`, with '
        '`error="invalid_token"` when the token or key sent was refused; at '
        '/oauth/token, `Basic realm="refapi"` (RFC 6749 section 5.2); in the '
        'lab, its own challenges, `Basic realm="refapi lab"`, `Bearer` and '
        '`Digest realm="refapi lab", ...` (RFC 7616), whose credentials are the '
        "lab's data, never the service's (docs/lab.md).",
        {"type": "string"},
    ),
    "Set-Cookie": (
        described("Set-Cookie") + " The session cookie (HttpOnly; SameSite=Lax), set "
        "at login and cleared at logout or when a stale one is refused; in the lab, "
        "httpbin's cookies, under `/lab/` (docs/lab.md).",
        {"type": "string"},
    ),
    "Content-Disposition": (
        'Save the body as a file: `attachment; filename="endpoints.csv"`.',
        {"type": "string", "pattern": '^attachment; filename="[^"]+"$'},
    ),
    "Access-Control-Allow-Origin": (
        "To a request with an `Origin` the service allows: `*`, or that origin "
        "(then with `Vary: Origin`); see docs/api.md, CORS.",
        {
            "type": "string",
            # An allowed origin, echoed: it came in one header field, which
            # gunicorn bounds (limit_request_field_size, gunicorn.conf.py).
            "maxLength": 8190,
            "pattern": "^(\\*|[a-z][a-z0-9+.-]*://[!-~]+)$",
        },
    ),
    "Access-Control-Expose-Headers": (
        "With `Access-Control-Allow-Origin`: the response headers a script may read.",
        {"type": "string", "const": EXPOSED},
    ),
    "Access-Control-Allow-Methods": (
        "A CORS preflight's answer: the methods a script may send.",
        {"type": "string", "const": METHODS},
    ),
    "Access-Control-Allow-Headers": (
        "A CORS preflight's answer: the request headers a script may send.",
        {"type": "string", "const": REQUEST_HEADERS},
    ),
    "Access-Control-Max-Age": (
        "A CORS preflight's answer: how many seconds a browser may keep it.",
        {"type": "string", "const": "600"},
    ),
    "Content-Security-Policy": (
        "What a page may load and run (W3C CSP Level 3): only this service's "
        "files, no inline script.",
        {"type": "string"},
    ),
    "Cache-Control": (
        described("Cache-Control") + " `no-store` on every answer that carries or "
        "depends on a credential; the lab's `/lab/cache/{n}` sends `public, "
        "max-age=n`.",
        {"type": "string"},
    ),
    # The lab's bodies and ranges (docs/lab.md, "Bodies", "Ranges", "Caching").
    "Content-Encoding": (
        described("Content-Encoding") + " The lab's /lab/gzip, /lab/deflate (a zlib "
        "stream) and /lab/brotli.",
        {"type": "string", "enum": ["gzip", "deflate", "br"]},
    ),
    "Accept-Ranges": (described("Accept-Ranges"), {"type": "string", "const": "bytes"}),
    "Content-Range": (
        described("Content-Range") + " `bytes first-last/length` on a 206, `bytes "
        "*/length` on a 416.",
        {"type": "string", "pattern": r"^bytes ([0-9]+-[0-9]+|\*)/[0-9]+$"},
    ),
    "Last-Modified": (described("Last-Modified"), {"type": "string"}),
}
# How a caller proves who it is; a route that needs a credential takes any of them.
SECURITY_SCHEMES = {
    "bearerAuth": {
        "type": "http",
        "scheme": "bearer",
        # The OAuth 2.0 client-credentials token is a Bearer token too. Not an
        # "oauth2" scheme: its tokenUrl must be an absolute URL, which would mean
        # writing the request's Host into the document.
        "description": "`Authorization: Bearer <token>`: a user's token from POST "
        "/api/login, or an OAuth 2.0 client's from POST /oauth/token (client "
        "credentials, RFC 6749 section 4.4).",
    },
    "apiKeyAuth": {
        "type": "apiKey",
        "in": "header",
        "name": "X-API-Key",
        "description": "A key an admin made at POST /api/keys.",
    },
    "sessionCookie": {
        "type": "apiKey",
        "in": "cookie",
        "name": SESSION_COOKIE,
        "description": "The web UI's session; unsafe requests also need X-CSRF-Token.",
    },
}
FORM = "application/x-www-form-urlencoded"


ANY_CREDENTIAL: list[dict[str, list[str]]] = [{name: []} for name in SECURITY_SCHEMES]
# An If-Match or If-None-Match value: what a header field may hold (RFC 9110
# section 5.5: visible ASCII, spaces, tabs, obs-text as WSGI's latin-1); a value
# that is no list of entity tags matches none. Its length is the server's to bound
# (gunicorn's limit_request_field_size: 431), not the app's, so no maxLength: an
# in-process tester would expect the app to refuse a longer one
# (tools/contract/.spectral.yaml says so to Spectral).
CONDITION_SCHEMA = {"type": "string", "pattern": r"^[\t -~\u0080-\u00ff]*$"}
# What a conditional request header asks, as a parameter of the operations it fits.
CONDITIONS = {
    # An empty value lists no tag, so none matches and the condition holds.
    "If-None-Match": "Entity tags of copies the client holds: 304 if one is current. "
    "An empty value lists no tag, so none is current (the full answer).",
    # RFC 9110 section 13.1.1: If-Match is "*" or a list of entity tags (#entity-tag,
    # so possibly empty), and the condition is false when no listed tag matches.
    "If-Match": "`*`, or entity tags (of a change, the copy it is based on): 412 "
    "unless one is current. An empty value lists no tag, so it never matches (412).",
}
