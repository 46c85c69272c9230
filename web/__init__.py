"""HTTP helpers shared by the router and the handlers: the request and response
objects, body reading, content negotiation, representations, conditional requests
and pagination.

They may import the error family, the configuration and the storage interface
(``storage/base.py``), and each other; never a handler, the middleware, the
router, the app or the lab."""

from __future__ import annotations

from .body import read_form, read_json
from .wsgi import (
    JSON_TYPE,
    Request,
    Response,
    Streamed,
    canonical_json,
    empty_response,
    error_response,
    json_bytes,
    json_response,
    permanent_redirect,
)

__all__ = [
    "JSON_TYPE",
    "Request",
    "Response",
    "Streamed",
    "canonical_json",
    "empty_response",
    "error_response",
    "json_bytes",
    "json_response",
    "permanent_redirect",
    "read_form",
    "read_json",
]
