"""Files that ship inside the package, served as they are: the docs' and the web UI's.

Each folder is served from a fixed table (the name in the URL -> the file and its
type), so no URL can name any other file (``..``, another file of the folder). The
router gives every such answer a strong ``ETag``, so a browser revalidating its
copy gets ``304`` (RFC 9110 section 13.1.2); a file's tag is computed here once a
process, as its bytes are read once (the Swagger bundle is 1.7 MB: hashing it took
2.5 ms a request). Every answer carries its folder's
Content-Security-Policy (W3C CSP Level 3): the page that loads the file is what the
policy protects, and a file opened by itself is a page too.
"""

from __future__ import annotations

import functools
from pathlib import Path

from .conditional import etag_of
from .wsgi import Response

PACKAGE = Path(__file__).parents[1]
HTML = "text/html; charset=utf-8"
CSS = "text/css; charset=utf-8"
JAVASCRIPT = "text/javascript; charset=utf-8"
PNG = "image/png"


@functools.cache  # read once a process: the files change only with the package
def read(folder: str, path: str) -> bytes:
    """The bytes of ``path`` under the package's ``folder``."""
    return (PACKAGE / folder / path).read_bytes()


def static_response(
    body: bytes, content_type: str, cache_control: str, csp: str
) -> Response:
    response = Response(
        body,
        headers=[
            ("Content-Type", content_type),
            ("Cache-Control", cache_control),
            ("Content-Security-Policy", csp),
        ],
    )
    response.etag = _etag(body, content_type)
    return response


# Keyed by the bytes themselves: a file's are one object (``read``), whose hash
# Python keeps once computed, so a hit costs no pass over them. A page made per
# request (the docs' and the UI's, which name their mount point) is small.
@functools.lru_cache(maxsize=64)
def _etag(body: bytes, content_type: str) -> str:
    return etag_of(body, content_type)
