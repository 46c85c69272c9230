"""What refapi's CORS answers name (the Fetch standard's CORS protocol).

The ``Cors`` layer (``middleware/cors.py``) answers a preflight with the methods
and the request headers a script may send, and names on every other answer the
response headers a script may read; the gunicorn worker (``serving/gunicorn.py``) names
the same on the answers it makes itself, before the app runs.
"""

from __future__ import annotations

METHODS = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
REQUEST_HEADERS = (
    "Authorization, Content-Type, Idempotency-Key, X-Request-Id, X-API-Key, "
    "X-CSRF-Token, If-Match, If-None-Match, Accept"
)
# The response headers a browser script may read: every one the API sends beyond
# the CORS-safelisted few.
EXPOSED = (
    "X-Next-Cursor, Retry-After, X-Request-Id, ETag, Location, Link, RateLimit, "
    "RateLimit-Policy, Idempotent-Replayed, WWW-Authenticate"
)
