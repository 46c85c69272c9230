"""The answer to a request a server refuses before the app runs (a request line or
header fields over its limits): the error object, as the server's worker writes it
(``serving/gunicorn.py``) and as the explainer shows it (``lab/explain.py``), so
the two cannot say different things whichever server runs the app."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

from ..errors import ApiError
from .cors import EXPOSED
from .wsgi import JSON_TYPE, json_bytes

if TYPE_CHECKING:
    from ..config import Config


# An Expect the server cannot meet: what both servers answer (serving/).
EXPECTATION_FAILED = (417, "EXPECTATION_FAILED", "Only 100-continue is expected.")


def unmet_expectation(value: str) -> bool:
    """Whether an ``Expect`` field's value asks for more than ``100-continue``, as
    gunicorn reads it (RFC 9110 section 10.1.1: case-insensitive)."""
    return value.strip(" \t").lower() != "100-continue"


NOT_A_HOST = "the Host header field is not a host and port (RFC 9112 section 3.2)"


def server_refusal(status: int, code: str, message: str, **details: Any) -> ApiError:
    """A refusal of a server's own, not one of the app's errors: its code is the
    status's name in RFC 9110 in upper snake case (``NOT_IMPLEMENTED``)."""
    error = ApiError(message, details)
    error.status, error.code = status, code
    return error


def refusal_answer(
    error: ApiError, config: Config, request_id: str | None = None
) -> tuple[bytes, list[tuple[str, str]]]:
    """The body and the header fields of a refusal, as the worker writes them."""
    body = json_bytes(error.body())
    headers = [
        ("Content-Type", JSON_TYPE),
        ("Content-Length", str(len(body))),
        ("Connection", "close"),
        ("X-Request-Id", request_id or secrets.token_hex(16)),
        ("X-Content-Type-Options", "nosniff"),
        *error.headers,  # a 503's Retry-After
    ]
    if "*" in config.cors_origins:
        headers += [
            ("Access-Control-Allow-Origin", "*"),
            ("Access-Control-Expose-Headers", EXPOSED),
        ]
    return body, headers
