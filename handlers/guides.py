"""The guides, served: ``GET /guides/`` (the README, their front page) and
``GET /guides/{name}`` (``api.md``, ``operating.md``, ... and the chart they show,
``bench.svg``), so a link to a section works from any deployment: a wheel, the
container image, a checkout (docs/api.md, "The guides").

The pages are made from the Markdown files the package ships (the README and
``docs/``, which ``refapi check`` runs too), rendered once a process by
markdown-it-py, a CommonMark parser with GitHub's tables: the guides are written
for GitHub, and CommonMark is what it renders. Each heading gets the id GitHub
gives it (its slug), so the sections the guides and the explainer cite
(``docs/api.md#pagination``) are the fragments of their pages. A link between
guides becomes a link between pages; a link to another file of the repository (a
source file, ``LICENSE``) is kept as its text, since the service does not serve
it. Raw HTML in a guide is shown as text, except the README's chart, an ``<img>``
of a file served here.

Every link of a page is relative (``api.md#errors``, ``../ui/style.css``): every
page is one level under ``/guides/``, so a browser resolves each under the mount
point it loaded the page from, and one page serves every mount. The pages run no
script and have no inline style: they are served under the web UI's
Content-Security-Policy and borrow its stylesheet, as the front page does. A page
is made when it is first asked for (the parser is loaded then, so a worker that
serves no guide never loads it) and kept for the life of the process.
``/guides`` answers ``308`` to ``/guides/``; any other name is ``404``.
"""

from __future__ import annotations

import functools
import html
import posixpath
import re
from collections.abc import Sequence
from string import Template
from typing import TYPE_CHECKING, Any

from ..errors import NotFound
from ..web import Request, Response, permanent_redirect
from ..web.static import HTML, PACKAGE, read, static_response
from .ui import CSP

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

# What the pages load besides the stylesheet: the name in the URL -> its type.
IMAGES = {"bench.svg": "image/svg+xml"}
# A raw <img> the README may keep (the chart beside its table): these attributes,
# plainly quoted; anything else of raw HTML is shown as text.
IMG = re.compile(r'<img((?:\s+[a-z]+="[^"<>&]*")+)\s*/?>\s*')
IMG_ATTRIBUTES = ("src", "alt", "width", "align")
ALIGNED = re.compile(r"text-align:(left|right|center)")
SCHEMES = ("http://", "https://", "mailto:")


@functools.cache  # the package's files change only with the package
def names() -> frozenset[str]:
    """The names under ``/guides/``: each guide of ``docs/`` and each image."""
    return frozenset(
        [*(path.name for path in (PACKAGE / "docs").glob("*.md")), *IMAGES]
    )


def served(path: str) -> str | None:
    """Where the repository's file ``path`` (``#fragment`` and all) is served,
    relative to ``/guides/``: ``docs/api.md#errors`` -> ``api.md#errors``, the
    README -> ``""``; None for a file the service does not serve."""
    file, mark, fragment = path.partition("#")
    if file == "README.md":
        return mark + fragment
    name = file.removeprefix("docs/")
    if file.startswith("docs/") and name in names():
        return name + mark + fragment
    return None


def get_guides(request: Request) -> Response:
    return static_response(page(""), HTML, "no-cache", CSP)


def get_guide(request: Request, name: str) -> Response:
    if name not in names():
        raise NotFound()
    if name in IMAGES:
        return static_response(read("docs", name), IMAGES[name], "no-cache", CSP)
    return static_response(page(name), HTML, "no-cache", CSP)


def redirect_to_guides(request: Request) -> Response:
    return permanent_redirect(request, "/guides/")


@functools.cache
def page(name: str) -> bytes:
    """The page of the guide ``name`` (``""``: the README), made once a process."""
    source = f"docs/{name}" if name else "README.md"
    body = render_markdown((PACKAGE / source).read_text(), source)
    heading = re.search(r"<h1[^>]*>(.*?)</h1>", body)
    title = re.sub(r"<[^>]+>", "", heading[1]) if heading else "refapi"
    made = Template(read("ui", "guide.html").decode()).substitute(
        title=title, body=body
    )
    return made.encode()


def render_markdown(text: str, source: str) -> str:
    """``text``, the Markdown of the repository's file ``source``, as HTML."""
    parser = _parser()
    tokens = parser.parse(text)
    slugs: dict[str, int] = {}
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            token.attrSet("id", _slug(tokens[index + 1].children or [], slugs))
        elif token.type in ("th_open", "td_open"):
            _align(token)
        elif token.type == "inline":
            _links(token.children or [], source)
    rendered: str = parser.renderer.render(tokens, parser.options, {"source": source})
    return rendered


@functools.cache
def _parser() -> MarkdownIt:
    # Imported when a page is first asked for: a worker that serves none never
    # loads it.
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark", {"html": True}).enable("table")
    parser.add_render_rule("html_block", _raw_html)
    parser.add_render_rule("html_inline", _raw_html)
    return parser


def _slug(children: Sequence[Token], seen: dict[str, int]) -> str:
    """GitHub's anchor of a heading: its text in lower case, every character but
    letters, digits, ``_``, ``-`` and spaces dropped, spaces made ``-``; a second
    heading of the same text gets ``-1``."""
    text = "".join(child.content for child in children).lower()
    slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
    count = seen.get(slug, 0)
    seen[slug] = count + 1
    return f"{slug}-{count}" if count else slug


def _align(token: Token) -> None:
    """A column's alignment as a class: the policy allows no ``style`` attribute."""
    found = ALIGNED.search(str(token.attrs.pop("style", "")))
    if found:
        token.attrSet("class", f"align-{found[1]}")


def _links(children: Sequence[Token], source: str) -> None:
    """Each link and image of a guide made to point where the service serves it;
    a link to a file it does not serve is left as its text, an image as its alt."""
    dropped = False  # the link open now (links do not nest) is left as text
    for child in children:
        if child.type == "link_open":
            href = _href(str(child.attrs["href"]), source)
            child.attrSet("href", href or "")
            child.hidden = dropped = href is None
        elif child.type == "link_close":
            child.hidden = dropped
        elif child.type == "image":
            src = _href(str(child.attrs["src"]), source)
            if src is None:
                child.type = "text"
                child.content = "".join(c.content for c in child.children or [])
            else:
                child.attrSet("src", src)


def _href(target: str, source: str) -> str | None:
    """``target``, written in the repository's file ``source``, as a URL relative
    to a page under ``/guides/``; None for a file the service does not serve."""
    if target.startswith("#") or target.startswith(SCHEMES):
        return target
    if ":" in target.partition("/")[0] or target.startswith("/"):
        return None
    path = posixpath.normpath(posixpath.join(posixpath.dirname(source), target))
    found = served(path) if not path.startswith("..") else None
    if found is None:
        return None
    return found if found and not found.startswith("#") else "./" + found


def _raw_html(
    renderer: Any, tokens: Sequence[Token], index: int, options: Any, env: Any
) -> str:
    """Raw HTML as text, but an ``<img>`` of a served file with plain attributes."""
    content = tokens[index].content
    found = IMG.fullmatch(content)
    attributes = re.findall(r'([a-z]+)="([^"]*)"', found[1]) if found else []
    src = dict(attributes).get("src")
    url = _href(src, env["source"]) if src else None
    if not url or any(name not in IMG_ATTRIBUTES for name, _ in attributes):
        escaped = html.escape(content)
        return f"<p>{escaped}</p>\n" if tokens[index].block else escaped
    kept = " ".join(
        f'{name}="{html.escape(url if name == "src" else value)}"'
        for name, value in attributes
    )
    return f"<img {kept}>\n"
