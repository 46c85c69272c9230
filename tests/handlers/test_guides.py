"""The guides, served: /guides/ (the README) and /guides/{name} (docs/*.md), each
rendered to HTML under the web UI's policy, every link between them followed
(docs/api.md, "The guides")."""

from __future__ import annotations

import csv
import io
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from refapi.handlers import guides
from tests.handlers.test_ui import CSP
from tests.helpers import assert_error

ROOT = Path(__file__).resolve().parents[2]
PROD = {"SCRIPT_NAME": "/prod"}
NAMES = sorted(path.name for path in (ROOT / "docs").glob("*.md"))
# Each page's URL under /prod, and the file it is made from.
PAGES = {"/prod/guides/": "README.md"} | {
    f"/prod/guides/{n}": f"docs/{n}" for n in NAMES
}


class Html(HTMLParser):
    """The ids, links, images and elements of a page, and its text outside tags."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []  # every href, the stylesheet's included
        self.images: list[dict[str, str | None]] = []
        self.tags: list[str] = []
        self.attributes: set[str] = set()
        self.title = ""
        self._in_title = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        found = dict(attrs)
        self.tags.append(tag)
        self.attributes.update(found)
        if found.get("id"):
            self.ids.add(found["id"])
        if tag in ("a", "link") and found.get("href") is not None:
            self.links.append(found["href"])
        if tag == "img":
            self.images.append(found)
        self._in_title = tag == "title"

    def handle_endtag(self, tag):
        self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data


def anchors(name: str) -> set[str]:
    """GitHub's anchors of the headings of the repository's file ``name``."""
    headings, fenced = [], False
    for line in (ROOT / name).read_text().splitlines():
        fenced ^= line.startswith("```")
        if line.startswith("#") and not fenced:
            headings.append(line.lstrip("#").strip())
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def page(anon, url: str):
    """The page at ``url`` (under /prod), fetched as a browser would."""
    path = url.removeprefix("/prod")
    return anon.get(path, extra_environ=PROD, headers={"Accept": "text/html"})


@pytest.mark.parametrize("url", PAGES)
def test_each_guide_is_a_page_under_the_ui_policy(anon, url):
    answer = page(anon, url)
    assert answer.status_int == 200
    assert answer.headers["Content-Type"] == "text/html; charset=utf-8"
    assert answer.headers["Content-Security-Policy"] == CSP
    assert answer.headers["Cache-Control"] == "no-cache"
    assert answer.headers["ETag"].startswith('"')
    found = Html(answer.text)
    # The UI's stylesheet, under the mount point; no script, no inline style.
    assert "/prod/ui/style.css" in [urljoin(url, link) for link in found.links]
    assert "script" not in found.tags and "style" not in found.tags
    assert "style" not in found.attributes
    assert not [name for name in found.attributes if name.startswith("on")]
    heading = next(
        line[2:] for line in (ROOT / PAGES[url]).read_text().splitlines()
        if line.startswith("# ")
    )  # fmt: skip
    assert found.title == f"{heading}: refapi guides"


@pytest.mark.parametrize("url", PAGES)
def test_every_heading_has_the_id_github_gives_it(anon, url):
    # The anchors the guides and the explainer cite are GitHub's slugs.
    assert anchors(PAGES[url]) <= Html(page(anon, url).text).ids


def test_every_section_the_explainer_cites_is_an_id_of_its_served_page(anon):
    from refapi.lab.annotations import WHY_HEADER, WHY_STATUS

    for cited in {*WHY_HEADER.values(), *WHY_STATUS.values()}:
        name, _, anchor = cited.partition("#")
        url = "/prod/guides/" + name.removeprefix("docs/")
        assert anchor in Html(page(anon, url).text).ids, cited


def test_every_link_between_the_guides_leads_to_a_served_page_and_its_section(anon):
    """Followed as a browser resolves them, from each page under /prod: a link to
    a guide lands on its page, at an element with the id it names."""
    ids = {url: Html(page(anon, url).text).ids for url in PAGES}
    followed = 0
    for url in PAGES:
        for link in Html(page(anon, url).text).links:
            target = urljoin(url, link)
            if urlsplit(target).scheme:
                continue  # another site's page, as the guide wrote it
            path, _, anchor = target.partition("#")
            assert path.startswith("/prod/"), (url, link)
            if path == "/prod/ui/style.css":
                continue
            assert path in ids or path == "/prod/", (url, link)
            followed += 1
            if anchor:
                assert anchor in ids[path], (url, link)
    assert followed > 150


def test_a_link_to_a_file_that_is_not_served_is_text(anon):
    readme = page(anon, "/prod/guides/").text
    # LICENSE and CHANGELOG.md are files of the checkout, not pages of the service.
    assert "LICENSE" in readme and "CHANGELOG" in readme
    for link in Html(readme).links:
        assert not link.split("#")[0].endswith(("LICENSE", "CHANGELOG.md")), link
    assert (
        'href="https://github.com/mnot/httplint"'
        in page(anon, "/prod/guides/explain.md").text
    )


def test_fenced_blocks_and_lists_are_rendered_as_github_renders_them(anon):
    """Every fenced block is a pre with its code, whatever words follow its
    language (``sh skip``); a list right after a paragraph's line is a list, and an
    item indented by two spaces is nested: no paragraph keeps a fence or a marker."""
    for url in PAGES:
        text = page(anon, url).text
        for paragraph in re.findall(r"<p>(.*?)</p>", text, re.DOTALL):
            for line in paragraph.splitlines():
                assert not re.match(r"(```|~~~|[-*+] |\d+\. )", line), (url, line)
    explain = page(anon, "/prod/guides/explain.md").text
    shown = '<pre><code class="language-sh">curl -s &quot;$BASE/lab/explain&quot;'
    assert shown in explain
    api = page(anon, "/prod/guides/api.md").text
    assert re.search(r"<p>It never fetches itself round[^<]*</p>\s*<ul>\s*<li>", api)


def test_raw_html_in_a_guide_is_shown_as_text_but_the_readmes_chart():
    rendered = guides.render_markdown(
        'Hi <script>alert(1)</script> <b onclick="x()">b</b>\n\n'
        '<img src="docs/bench.svg" width="50%" alt="the chart">\n\n'
        '<img src="docs/bench.svg" onerror="x()" alt="a trap">\n\n'
        "[a trap](javascript:alert(1)) [here](#x) [source](../app.py)\n",
        "README.md",
    )
    assert "<script" not in rendered and "<b " not in rendered
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in rendered
    assert '<img src="bench.svg" width="50%" alt="the chart">' in rendered
    assert "onerror" not in rendered.replace("onerror=&quot;", "")
    assert "javascript:" not in rendered.replace("[a trap](javascript:", "")
    assert '<a href="#x">here</a>' in rendered and "source" in rendered
    assert "app.py" not in rendered


def test_the_readme_shows_the_chart_and_the_benchmarks_guide_too(anon):
    for url in ("/prod/guides/", "/prod/guides/benchmarks.md"):
        (image,) = Html(page(anon, url).text).images
        assert urljoin(url, image["src"] or "") == "/prod/guides/bench.svg"
        assert image["alt"]
    chart = anon.get("/guides/bench.svg")
    assert chart.headers["Content-Type"] == "image/svg+xml"
    assert chart.headers["Content-Security-Policy"] == CSP
    assert chart.body == (ROOT / "docs" / "bench.svg").read_bytes()


def test_an_aligned_table_column_needs_no_inline_style(anon):
    text = page(anon, "/prod/guides/").text
    assert "text-align" not in text and 'class="align-right"' in text


def test_guides_redirects_to_the_front_page_of_the_guides(anon):
    answer = anon.get("/guides", extra_environ=PROD, status=308)
    assert answer.headers["Location"].endswith("/prod/guides/")


@pytest.mark.parametrize(
    "path",
    [
        "/guides/nope.md",
        "/guides/README.md",
        "/guides/api",
        "/guides/API.md",
        "/guides/..%2fapp.py",
        "/guides/%2e%2e%2fpyproject.toml",
        "/guides/api.md/",
        "/guides/docs/api.md",
        "/guides//",
        "/guides/__init__.py",
    ],
)
def test_any_other_name_is_a_404_error_object(anon, path):
    assert_error(anon.get(path, status=404), 404, "NOT_FOUND")


@pytest.mark.parametrize("path", ["/guides/", "/guides/api.md", "/guides/bench.svg"])
def test_a_current_copy_is_not_sent_again_and_head_has_gets_headers(anon, path):
    got = anon.get(path)
    anon.get(path, headers={"If-None-Match": got.headers["ETag"]}, status=304)
    head = anon.head(path)
    assert head.status_int == 200 and head.body == b""
    for name in ("Content-Type", "Content-Length", "ETag", "Content-Security-Policy"):
        assert head.headers[name] == got.headers[name]


def test_the_guides_are_public_with_the_lab_off_too(make_app):
    app = make_app(anonymous=True, lab=False)
    assert app.get("/guides/lab.md").status_int == 200


def test_the_guides_are_not_api_operations(anon):
    rows = csv.DictReader(io.StringIO(anon.get("/api/download_csv.php").text))
    assert not [row for row in rows if row["endpoint"].startswith("/guides")]
    assert not [p for p in anon.get("/openapi.json").json["paths"] if "guides" in p]


def test_a_page_is_rendered_once_a_process():
    assert guides.page("api.md") is guides.page("api.md")
