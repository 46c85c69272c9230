"""HTTP helpers shared by the router and the handlers: the request and response
objects, body reading, content negotiation, representations, conditional requests
and pagination."""

from __future__ import annotations

from .body import read_form, read_json
from .wsgi import (
    JSON_TYPE,
    Request,
    Response,
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
    "canonical_json",
    "empty_response",
    "error_response",
    "json_bytes",
    "json_response",
    "permanent_redirect",
    "read_form",
    "read_json",
]
