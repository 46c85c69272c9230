"""The API's description: ``GET /openapi.json``, and Swagger UI over it at ``/docs``.

``/openapi.json`` is the OpenAPI 3.1 document (``openapi/``), made from the route
table the request was served by with the mount point (``SCRIPT_NAME``) as its server
URL, so a client generated from it under ``/prod`` calls ``/prod/v1/...``. It is made
here (``describe``) once per mount point and kept (the handler's ``document``).

Everything the page loads comes from this service: Swagger UI's distribution files
ship inside the package (``ui/swagger/swagger-ui/``, beside the web UI's files,
unmodified, with the ``package.json`` that names their version and their licence),
and a script file of ours (``ui/swagger/initializer.js``) starts it. So the docs
work offline, and every answer under ``/docs`` carries a Content-Security-Policy
(W3C CSP Level 3) that lets nothing in from another origin and runs no inline
script. Swagger UI sets ``style`` attributes (hence ``'unsafe-inline'``, for styles
only) and draws icons from ``data:`` URLs; ``frame-ancestors 'none'`` keeps the page
out of other sites' frames (clickjacking).

The page is made accessible by files of ours too, as the policy allows: a
stylesheet (``ui/swagger/docs.css``) darkens Swagger UI's colours to WCAG AA
contrast, and the initializer names the controls Swagger UI leaves unnamed or
names by other words than it shows, and keeps a link out of each operation's button
(docs/api.md, "Interactive docs").

``/docs`` is the page's one URL; ``/docs/`` is a row of its own that answers
``308`` to it (the URL map redirects nothing by itself). A relative URL in it
would resolve against the mount's root, so the page names its files and the
document by absolute paths that carry the mount point
(``/prod/docs/swagger-ui.css``, ``/prod/openapi.json``); the initializer reads
the document's URL from the page, so it is the same file under every mount.

``/docs/{name}`` serves the few files the page loads, looked up by name in a fixed
table: any other name (``..``, another file of the folder) is 404. The router gives
each answer a strong ``ETag``, so ``If-None-Match`` gets ``304`` (RFC 9110 section
13.1.2). The page is revalidated on every load (``no-cache``, RFC 9111 section
5.2.2.4); the files stay fresh for a day, then are revalidated too, so an upgrade
reaches every browser within a day.
"""

from __future__ import annotations

import functools
import html
from collections.abc import Callable, Sequence
from string import Template
from typing import TYPE_CHECKING, Any

from .. import openapi
from ..errors import NotFound
from ..web import Request, Response, json_response, permanent_redirect
from ..web.static import CSS, HTML, JAVASCRIPT, PNG, read, static_response

if TYPE_CHECKING:
    from ..config import Config
    from ..router.route import Route

# The documents /docs offers, by the name ``?document=`` gives: the API's, and the
# lab's while the lab is served (docs/api.md, "Interactive docs").
DOCUMENTS = {
    "api": ("/openapi.json", "The API"),
    "lab": ("/lab/openapi.json", "The learner's lab"),
}
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; frame-ancestors 'none'"
)

# The page's folder, beside the web UI's files; docs/ holds the guides.
FOLDER = "ui/swagger"
# The files the page loads: the name in the URL -> the file under FOLDER, its type.
FILES = {
    "swagger-ui.css": ("swagger-ui/swagger-ui.css", CSS),
    "docs.css": ("docs.css", CSS),
    "swagger-ui-bundle.js": ("swagger-ui/swagger-ui-bundle.js", JAVASCRIPT),
    "favicon-32x32.png": ("swagger-ui/favicon-32x32.png", PNG),
    "favicon-16x16.png": ("swagger-ui/favicon-16x16.png", PNG),
    "initializer.js": ("initializer.js", JAVASCRIPT),
}


Document = Callable[[str], dict[str, Any]]


def describe(
    route_table: tuple[Route, ...],
    config: Config,
    layers: Sequence[tuple[type, dict[str, Any]]],
) -> Document:
    """The OpenAPI document of ``route_table`` served behind ``layers``, made once
    per mount point it is asked under (an app is mounted at one or two) and kept:
    the front door hands it to the router as the handler's ``document``. (The
    layers are each a class and its options, as ``app.stack`` lists them; a handler
    imports nothing of the middleware.)"""
    made = functools.partial(openapi.document, route_table, config, layers=layers)
    return functools.lru_cache(maxsize=16)(made)


def get_openapi(request: Request, document: Document) -> Response:
    return json_response(document(request.script_root))


def get_docs(request: Request, routes: Sequence[Route]) -> Response:
    served = {route.path for route in routes}
    offered = {name: doc for name, doc in DOCUMENTS.items() if doc[0] in served}
    name = request.arg("document") or "api"
    if name not in offered:
        raise NotFound()
    docs = request.link("/docs")
    links = [
        f'<a href="{html.escape(docs + ("" if key == "api" else f"?document={key}"))}"'
        + (' aria-current="page"' if key == name else "")
        + f">{html.escape(title)}</a>"
        for key, (_, title) in offered.items()
    ]
    page = Template(read(FOLDER, "index.html").decode()).substitute(
        docs=html.escape(docs),
        openapi=html.escape(request.link(offered[name][0])),
        title=html.escape(offered[name][1]),
        documents=f'<nav class="documents" aria-label="Documents">{" ".join(links)}'
        "</nav>"
        if len(links) > 1
        else "",
    )
    return static_response(page.encode(), HTML, "no-cache", CSP)


def redirect_to_docs(request: Request) -> Response:
    return permanent_redirect(request, "/docs")


def get_docs_file(request: Request, name: str) -> Response:
    if name not in FILES:
        raise NotFound()
    path, content_type = FILES[name]
    return static_response(
        read(FOLDER, path), content_type, "public, max-age=86400", CSP
    )
