"""Request bodies: read within the size limit, typed, and parsed as JSON.

The order of refusals follows what can be known soonest: ``413`` from the
``Content-Length`` header alone (the body is never read), ``415`` from the
``Content-Type``, then ``400`` once the bytes are read and do not parse.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ..errors import InvalidJson, PayloadTooLarge, UnsupportedMediaType

if TYPE_CHECKING:
    from wsgiref.types import WSGIEnvironment


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


# Numbers with a fraction or exponent become Decimal: amounts stay exact.
_decoder = json.JSONDecoder(parse_float=Decimal, parse_constant=_reject_constant)


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any("\ud800" <= char <= "\udfff" for char in value)
    if isinstance(value, dict):
        return any(
            _has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items()
        )
    if isinstance(value, list):
        return any(_has_lone_surrogate(item) for item in value)
    return False


def read_json(
    environ: WSGIEnvironment, max_bytes: int, accepted: tuple[str, ...]
) -> Any:
    """Read and parse a JSON body: 413, then 415, then 400, in that order."""
    length = environ.get("CONTENT_LENGTH") or ""
    try:
        declared = int(length) if length else None
    except ValueError:
        declared = None
    if declared is not None and declared > max_bytes:
        # Refused from the header alone: the body is never read.
        raise PayloadTooLarge(max_bytes)
    media_type, _, params = (environ.get("CONTENT_TYPE") or "").partition(";")
    charset = params.partition("charset=")[2].strip().strip('"').lower()
    if media_type.strip().lower() not in accepted or charset not in ("", "utf-8"):
        raise UnsupportedMediaType(accepted)
    stream = environ["wsgi.input"]
    if declared is not None:
        raw = stream.read(declared) if declared > 0 else b""
    elif environ.get("wsgi.input_terminated"):
        # Chunked, no Content-Length: read one byte past the limit to detect excess.
        raw = stream.read(max_bytes + 1)
        if len(raw) > max_bytes:
            raise PayloadTooLarge(max_bytes)
    else:
        raw = b""  # PEP 3333: without a length, there is no body to read
    try:
        value = _decoder.decode(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InvalidJson(details={"reason": str(exc)[:200]}) from None
    if b"\\u" in raw and _has_lone_surrogate(value):
        raise InvalidJson(details={"reason": "a string holds an unpaired surrogate"})
    return value
