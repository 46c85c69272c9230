"""The web UI: ``GET /ui/``, one HTML page, and the two files it loads.

The page is a small single-page application: its screens (login, user list, user
detail, edit, register, delete, and Explore: docs/explain.md) are ``<template>``
elements that ``app.js`` shows by the URL's fragment (``/ui/#/users/3``), each
calling the API as docs/authentication.md, "The web UI", maps it. It logs in with
the session cookie (``HttpOnly``, so no script can read it) and keeps the CSRF
token only in memory.

Everything comes from this service, and every answer carries a strict
Content-Security-Policy: scripts, styles and connections only to this origin, no
inline script or style, forms posting only here, no ``<base>``, and no framing by
another page (clickjacking). The page names its files and the API by absolute
paths carrying the mount point (``/prod/ui/app.js``, ``data-api="/prod/api"``,
``data-lab="/prod/lab"``), so the same files work under any mount. ``/ui/`` is
the page's one URL; ``/ui``, the URL a person types, is a row of its own that
answers ``308`` to it (the URL map redirects nothing by itself).

Every file is ``no-cache``: a browser revalidates it on each load (a ``304`` while
it is current), so the page and its script never come from two versions.
"""

from __future__ import annotations

import html
from string import Template

from ..errors import NotFound
from ..web import Request, Response, permanent_redirect
from ..web.static import CSS, HTML, JAVASCRIPT, read, static_response

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
# The files the page loads: the name in the URL -> its type.
FILES = {"app.js": JAVASCRIPT, "style.css": CSS}


def get_ui(request: Request) -> Response:
    page = Template(read("ui", "index.html").decode()).substitute(
        ui=html.escape(request.link("/ui")),
        api=html.escape(request.link("/api")),
        lab=html.escape(request.link("/lab")),
    )
    return static_response(page.encode(), HTML, "no-cache", CSP)


def get_ui_file(request: Request, name: str) -> Response:
    if name not in FILES:
        raise NotFound()
    return static_response(read("ui", name), FILES[name], "no-cache", CSP)


def redirect_to_ui(request: Request) -> Response:
    return permanent_redirect(request, "/ui/")
