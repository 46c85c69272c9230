"""httpbin's bodies: coded, fixed, decoded, random and linked.

- ``/lab/gzip``, ``/lab/deflate`` and ``/lab/brotli`` answer ``/lab/get``'s
  members, with ``method`` and ``"gzipped"``, ``"deflated"`` or ``"brotli": true``,
  in a body coded as ``Content-Encoding`` says (RFC 9110 section 8.4.1): gzip (RFC
  1952), deflate as httpbin sends it, a zlib stream (RFC 1950, which RFC 9110
  section 8.4.1.2 calls deflate), or br (RFC 7932). Whatever ``Accept-Encoding``
  says: the coding is the point.
- ``/lab/html``, ``/lab/encoding/utf8``, ``/lab/json`` and ``/lab/xml`` answer fixed
  documents (``pages.py``), ``/lab/robots.txt`` a ``robots.txt`` that disallows
  ``/lab/deny``, which answers a text that says so.
- ``/lab/base64/{value}`` answers the URL-safe base64 value (RFC 4648 section 5)
  decoded, as ``text/plain; charset=utf-8`` always: never HTML, whatever it
  holds, so the lab serves no page a link can write (docs/lab.md, "Bodies").
- ``/lab/bytes/{n}`` answers ``n`` random bytes, the same ones for the same
  ``?seed=`` (``/lab/stream-bytes/{n}`` writes them in chunks: ``slow.py``);
  ``/lab/links/{n}/{offset}`` a page of ``n`` links to its siblings.

A count is clamped, as httpbin clamps it: ``n`` bytes at most
``REFAPI_LAB_MAX_BYTES``, ``n`` links at most 200. Every URL a page names carries
the mount point (``Request.link``).
"""

from __future__ import annotations

import base64
import gzip
import html
import os
import random
import re
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING

import brotli

from ..errors import ValidationError
from ..web import Request, Response, json_response
from ..web.wsgi import positive_int
from . import pages, reflect
from .handlers import MAX_SEED

if TYPE_CHECKING:
    from ..config import Config

HTML = "text/html; charset=utf-8"
TEXT = "text/plain; charset=utf-8"
XML = "application/xml"  # as httpbin's: the document's declaration names UTF-8
OCTETS = "application/octet-stream"

# Each coding, by its name in Content-Encoding: the member that says it, and the
# function that codes a body. Levels that cost little: a reflection may be the
# size of every header field gunicorn takes (800 KB), and none is slow to code.
CODINGS: dict[str, tuple[str, Callable[[bytes], bytes]]] = {
    "gzip": ("gzipped", lambda body: gzip.compress(body, 6, mtime=0)),
    "deflate": ("deflated", lambda body: zlib.compress(body, 6)),
    "br": ("brotli", lambda body: brotli.compress(body, quality=5)),
}

# The value of /lab/base64/{value}: URL-safe base64 in whole groups, the last with
# or without its padding (RFC 4648 sections 3.2 and 5), at most BASE64_MAX
# characters; the document's pattern (lab/routes.py) is this one.
BASE64_MAX = 4096
BASE64_PATTERN = (
    r"^(?:[A-Za-z0-9_-]{4})*(?:[A-Za-z0-9_-]{2}(?:==)?|[A-Za-z0-9_-]{3}=?)?$"
)
_BASE64 = re.compile(BASE64_PATTERN)
MAX_LINKS = 200  # a page's links at most, as httpbin's


def send_gzip(request: Request) -> Response:
    return _encoded(request, "gzip")


def send_deflate(request: Request) -> Response:
    return _encoded(request, "deflate")


def send_brotli(request: Request) -> Response:
    return _encoded(request, "br")


def _encoded(request: Request, coding: str) -> Response:
    """``/lab/get``'s members and the method, coded with ``coding``."""
    said, code = CODINGS[coding]
    members = reflect.get_members(request)
    members["method"] = request.environ["REQUEST_METHOD"]
    names = ("args", "headers", "method", "origin", "url", "credentials")
    answer = json_response({**{name: members[name] for name in names}, said: True})
    answer.body = code(answer.body)
    answer.headers.append(("Content-Encoding", coding))
    return answer


def send_html(request: Request) -> Response:
    return _fixed(pages.HTML_PAGE, HTML)


def send_utf8(request: Request) -> Response:
    return _fixed(pages.UTF8_PAGE, HTML)


def send_json(request: Request) -> Response:
    return json_response(pages.SLIDESHOW)


def send_xml(request: Request) -> Response:
    return _fixed(pages.XML_DOCUMENT, XML)


def send_robots(request: Request) -> Response:
    """Rules for robots: keep out of ``/lab/deny`` (under the mount point)."""
    rules = f"User-agent: *\nDisallow: {request.link('/lab/deny')}\n"
    return _fixed(rules.encode(), TEXT)


def send_deny(request: Request) -> Response:
    return _fixed(pages.DENIED, TEXT)


def decode_base64(request: Request, value: str) -> Response:
    """The value decoded; bytes that are not UTF-8 each as U+FFFD, so the text is
    what its ``charset`` says (as a browser would show them anyway)."""
    if len(value) > BASE64_MAX or not _BASE64.fullmatch(value):
        raise ValidationError.one(
            "value",
            "must be URL-safe base64 (A-Z, a-z, 0-9, - and _, in groups of four, "
            f"the last padded with = or not) of at most {BASE64_MAX} characters",
        )
    decoded = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    return _fixed(decoded.decode("utf-8", "replace").encode(), TEXT)


def send_bytes(request: Request, config: Config, n: int) -> Response:
    """``n`` random bytes (at most ``REFAPI_LAB_MAX_BYTES``): the same ones for the
    same ``?seed=``, on any host and any Python."""
    return _fixed(random_bytes(request, min(n, config.lab_max_bytes)), OCTETS)


def random_bytes(request: Request, size: int) -> bytes:
    """``size`` random bytes: new ones, or Python's Mersenne Twister's for the
    request's ``?seed=``, the same on any host and any Python."""
    seed = request.arg("seed")
    if seed is None:
        return os.urandom(size)
    return random.Random(positive_int("seed", seed, MAX_SEED)).randbytes(size)


def send_links(request: Request, n: int, offset: int) -> Response:
    """A page of ``n`` links (at most ``MAX_LINKS``), to ``/lab/links/{n}/{i}``,
    but the one at ``offset``, which is its number alone."""
    count = min(n, MAX_LINKS)
    items = [
        str(i)
        if i == offset
        else f'<a href="{html.escape(request.link(f"/lab/links/{count}/{i}"))}">{i}</a>'
        for i in range(count)
    ]
    page = (
        "<!DOCTYPE html>\n<html><head><title>Links</title></head><body>"
        + " ".join(items)
        + "</body></html>\n"
    )
    return _fixed(page.encode(), HTML)


def _fixed(body: bytes, content_type: str) -> Response:
    return Response(body, 200, [("Content-Type", content_type)])
