"""The API's description: ``GET /openapi.json``, the OpenAPI 3.1 document.

It is made from the route table the request was served by (``request.routes``),
with the mount point (``SCRIPT_NAME``) as its server URL, so a client generated from
it under ``/prod`` calls ``/prod/v1/...``. It is built once per table, configuration
and mount point, and kept.
"""

from __future__ import annotations

import functools
from typing import Any

from .. import openapi
from ..config import Config
from ..web import Request, Response, json_response


@functools.lru_cache(maxsize=16)  # a few apps, each under a mount point or two
def _document(routes: tuple[Any, ...], config: Config, prefix: str) -> dict:
    return openapi.document(routes, config, prefix)


def get_openapi(request: Request) -> Response:
    document = _document(request.routes, request.config, request.script_root)
    return json_response(document)
