"""XML and CSV representations (web/representations.py): of articles, todos,
items and payments, an ``Accept`` none of them serves refused (406, in JSON), and
CSV formula-safe.

A CSV cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is a
formula to a spreadsheet (OWASP "CSV Injection"); every CSV the service writes puts
a ``'`` before such a text cell, a lone ``-`` included, but for the catalogue's
"none" (a cell that is exactly ``-`` there). Numbers, which we write ourselves,
stay. Inside a cell, a formula character after a semicolon or a tab gets the ``'``
too: a spreadsheet that splits on ``;`` or a tab starts a cell there, whatever the
quotes say. After a line break, which the quotes keep in the cell, none.
"""

from __future__ import annotations

import pytest

from refapi.web.representations import csv_text
from tests.helpers import assert_error

STAMP = "2026-11-18T11:06:40Z"  # FakeClock's start
XML_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'


def pay(app, raw_amount: str):
    response = app.post(
        "/v1/payments",
        f'{{"amount": {raw_amount}, "currency": "EUR"}}',
        headers={"Idempotency-Key": raw_amount, "Content-Type": "application/json"},
        status=201,
    )
    return response.headers["Location"], response.json["id"]


@pytest.mark.parametrize(
    ("raw", "shown"),
    [("10.5", "10.5"), ("0.30", "0.3"), ("1E+2", "100"), ("12", "12")],
)
def test_a_payment_in_xml_and_csv_shows_the_json_amount(app, raw, shown):
    location, pay_id = pay(app, raw)
    assert f'"amount":{shown},' in app.get(location).text
    xml = app.get(location, headers={"Accept": "application/xml"}, status=200)
    assert xml.headers["Content-Type"] == "application/xml; charset=utf-8"
    assert xml.text == (
        f"{XML_HEAD}<payment><id>{pay_id}</id><amount>{shown}</amount>"
        f"<currency>EUR</currency><createdAt>{STAMP}</createdAt></payment>"
    )
    csv = app.get(location, headers={"Accept": "text/csv"}, status=200)
    assert csv.headers["Content-Type"] == "text/csv; charset=utf-8"
    assert (
        csv.text == f"id,amount,currency,createdAt\r\n{pay_id},{shown},EUR,{STAMP}\r\n"
    )


def test_a_payment_head_matches_its_get(app):
    location, _ = pay(app, "5")
    for accept in ("application/xml", "text/csv"):
        get = app.get(location, headers={"Accept": accept})
        head = app.head(location, headers={"Accept": accept})
        assert head.body == b""
        assert head.headers["Content-Length"] == str(len(get.body))
        assert head.headers["ETag"] == get.headers["ETag"]


@pytest.mark.parametrize(
    ("title", "cell"),
    [
        pytest.param("=1+2", "'=1+2", id="equals"),
        pytest.param("+1", "'+1", id="plus"),
        pytest.param("-1+1", "'-1+1", id="minus"),
        pytest.param("@SUM(A1)", "'@SUM(A1)", id="at"),
        pytest.param("\tx", '"\'\tx"', id="tab"),
        pytest.param(
            "Q3 report;=cmd|' /C calc'!A0;",
            "\"Q3 report;'=cmd|' /C calc'!A0;\"",
            id="a-formula-after-a-semicolon",
        ),
        pytest.param("a\t=1+2", '"a\t\'=1+2"', id="a-formula-after-a-tab"),
        pytest.param("a\n@x", '"a\n@x"', id="no-mark-after-a-line-feed"),
        pytest.param("a\r=x", '"a\r=x"', id="no-mark-after-a-carriage-return"),
        pytest.param("a;b=c", '"a;b=c"', id="no-formula-after-the-semicolon"),
        pytest.param("\rx", '"\'\rx"', id="carriage-return"),
        pytest.param('=HYPERLINK("x")', '"\'=HYPERLINK(""x"")"', id="quoted"),
        pytest.param("-", "'-", id="a-lone-minus"),
        pytest.param("a=b", "a=b", id="not-first"),
        pytest.param(" =x", " =x", id="space-first"),
    ],
)
def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised(app, title, cell):
    app.post_json("/v1/articles", {"title": title, "tags": ["=t"]}, status=201)
    for path in ("/v1/articles/1", "/v1/articles"):
        response = app.get(path, headers={"Accept": "text/csv"}, status=200)
        rows = response.text.split("\r\n", 1)[1]
        assert rows == f'1,{cell},"[""=t""]",user:1,{STAMP},{STAMP}\r\n'
    # The other representations carry the text as it is.
    assert app.get("/v1/articles/1").json["title"] == title


def test_csv_text_is_the_one_writer():
    rows = [
        ("name", "optional parameters", "count"),
        ("=cmd", "-", -3),
        ("@x", None, True),
    ]
    assert csv_text(rows, none="-") == (
        "name,optional parameters,count\r\n'=cmd,-,-3\r\n'@x,,true\r\n"
    )
    # Only the catalogue's "none" stays bare: in a record, "-" is text like any.
    assert csv_text(rows).splitlines()[1] == "'=cmd,'-,-3"


def test_csv_quotes_every_cell_a_spreadsheet_could_split():
    # A comma, a semicolon, a tab, a quote, CR or LF: a spreadsheet in any locale
    # reads the cell as one (docs/api.md, "Representations").
    cells = ("a,b", "a;b", "a\tb", 'a"b', "a\rb", "a\nb", "plain")
    assert csv_text([cells]) == ('"a,b","a;b","a\tb","a""b","a\rb","a\nb",plain\r\n')


ARTICLE_XML = (
    "<article><id>1</id><title>A &amp; B</title><tags>x</tags><tags>y</tags>"
    f"<author>user:1</author><createdAt>{STAMP}</createdAt><updatedAt>{STAMP}</updatedAt></article>"
)


ARTICLE_CSV = f'1,A & B,"[""x"",""y""]",user:1,{STAMP},{STAMP}\r\n'
TODO_XML = (
    "<todo><userId>1</userId><id>1</id><title>review the cursor #1</title>"
    "<completed>false</completed></todo>"
)


ITEMS_XML = "".join(
    f"<item><id>{n}</id><name>item 000{n}</name>"
    f"<createdAt>2026-01-01T00:0{n}:00Z</createdAt></item>"
    for n in (1, 2)
)


@pytest.mark.parametrize(
    ("path", "accept", "content_type", "body"),
    [
        pytest.param("/v1/articles/1", "application/xml", "application/xml",
                     XML_HEAD + ARTICLE_XML, id="article-xml"),
        pytest.param("/v1/articles", "application/xml", "application/xml",
                     f"{XML_HEAD}<articles>{ARTICLE_XML}</articles>",
                     id="articles-xml"),
        pytest.param("/v1/articles/1", "text/csv", "text/csv",
                     "id,title,tags,author,createdAt,updatedAt\r\n" + ARTICLE_CSV,
                     id="article-csv"),
        pytest.param("/v1/articles", "text/csv", "text/csv",
                     "id,title,tags,author,createdAt,updatedAt\r\n" + ARTICLE_CSV,
                     id="articles-csv"),
        pytest.param("/v1/todos/1", "application/xml", "application/xml",
                     XML_HEAD + TODO_XML, id="todo-xml"),
        pytest.param("/v1/todos/1", "text/csv", "text/csv",
                     "userId,id,title,completed\r\n1,1,review the cursor #1,false\r\n",
                     id="todo-csv"),
        pytest.param("/v1/items?limit=2", "application/xml", "application/xml",
                     f"{XML_HEAD}<items>{ITEMS_XML}</items>", id="items-xml"),
        pytest.param("/v1/items?limit=2", "text/csv", "text/csv",
                     "id,name,createdAt\r\n1,item 0001,2026-01-01T00:01:00Z\r\n"
                     "2,item 0002,2026-01-01T00:02:00Z\r\n", id="items-csv"),
        pytest.param("/v1/todos/1", "text/html, application/xml;q=0.5",
                     "application/xml", XML_HEAD + TODO_XML, id="q-values"),
    ],
)  # fmt: skip
def test_xml_and_csv_representations(article_app, path, accept, content_type, body):
    response = article_app.get(path, headers={"Accept": accept}, status=200)
    assert response.headers["Content-Type"] == f"{content_type}; charset=utf-8"
    assert response.body.decode("utf-8") == body
    assert "accept" in ",".join(response.headers.getall("Vary")).lower()
    assert response.headers["ETag"] != article_app.get(path).headers["ETag"]


@pytest.mark.parametrize(
    "text", ["\r=x", "a\r\nb", "a\nb", "tab\there", "<&>", "]]>"], ids=repr
)
def test_xml_text_reads_back_as_it_was_sent(app, text):
    # A bare CR in XML text is read as LF (XML 1.0 section 2.11): it is sent as
    # &#13;, so a parser gives back what the JSON says (docs/api.md).
    from xml.etree import ElementTree

    app.post_json("/v1/articles", {"title": text, "tags": [text]}, status=201)
    for path in ("/v1/articles/1", "/v1/articles"):
        xml = app.get(path, headers={"Accept": "application/xml"}, status=200)
        root = ElementTree.fromstring(xml.body)
        article = root if root.tag == "article" else root.find("article")
        assert article is not None
        assert article.findtext("title") == text
        assert article.findtext("tags") == text
    assert app.get("/v1/articles/1").json["title"] == text


def test_a_listed_collection_keeps_its_cursor_headers_in_xml(app):
    response = app.get("/v1/items?limit=2", headers={"Accept": "application/xml"})
    assert (
        response.headers["X-Next-Cursor"]
        == app.get("/v1/items?limit=2").json["nextCursor"]
    )
    assert 'rel="next"' in response.headers["Link"]


@pytest.mark.parametrize(
    ("method", "path", "accept"),
    [
        ("GET", "/v1/articles", "text/html"),
        ("GET", "/v1/articles/1", "text/html"),
        ("GET", "/v1/todos/1", "image/png"),
        ("GET", "/v1/items", "text/plain"),
        ("POST", "/v1/articles", "application/xml"),
        ("PATCH", "/v1/articles/1", "text/csv"),
    ],
)
def test_unservable_accept_is_406_in_json(article_app, method, path, accept):
    before = article_app.get("/v1/articles").json
    response = article_app.request(
        path,
        method=method,
        headers={"Accept": accept},
        body=b'{"title": "T"}' if method != "GET" else b"",
        content_type="application/json" if method != "GET" else None,
        expect_errors=True,
    )
    assert_error(response, 406, "NOT_ACCEPTABLE")
    assert article_app.get("/v1/articles").json == before


# What a hostile caller may put inside a cell: a formula after each separator a
# spreadsheet in some locale splits on.
INSIDE = "x;=2+5;+1;-1;@A1\t=3\t@B2"
BROKEN = "a\n;=1+1\r\t@2"


def _formula_cells(text: str) -> list[str]:
    """Cells of ``text`` that would start a formula, read three ways: as CSV on
    ``,``, and each record split on ``;`` and on a tab, as a spreadsheet in another
    locale reads it (leading tabs and line breaks ignored, as a lenient one does)."""
    import csv
    import io

    cells = [cell for row in csv.reader(io.StringIO(text)) for cell in row]
    for line in text.split("\r\n"):  # the records; a line break in a cell stays
        cells += line.split(";") + line.split("\t")
    return [
        cell
        for cell in cells
        if cell.lstrip("\t\r\n").startswith(("=", "+", "-", "@")) and cell != "-"
    ]


def test_no_csv_the_service_writes_starts_a_formula_after_a_separator(app):
    app.post_json("/v1/articles", {"title": INSIDE, "tags": [INSIDE]}, status=201)
    app.post_json("/v1/articles", {"title": BROKEN}, status=201)
    app.post_json(
        "/api/users",
        {"email": "csv@example.com", "password": "correct-horse-battery-9",
         "firstName": INSIDE, "lastName": INSIDE},
        status=201,
    )  # fmt: skip
    app.post_json("/api/demo.php?action=create", {"text": INSIDE}, status=201)
    app.post_json("/api/demo.php?action=create", {"text": BROKEN}, status=201)
    app.post_json("/api/keys", {"name": INSIDE}, status=201)
    app.post_json("/api/oauth-clients", {"name": INSIDE}, status=201)
    paths = [
        "/v1/articles", "/v1/articles/1", "/v1/articles/2", "/api/users",
        "/api/demo.php?action=list", "/api/keys", "/api/oauth-clients",
    ]  # fmt: skip
    written = {p: app.get(p, headers={"Accept": "text/csv"}).text for p in paths}
    written["catalogue"] = app.get("/api/download_csv.php").text
    assert "x;'=2+5;'+1;'-1;'@A1\t'=3\t'@B2" in written["/v1/articles/1"]
    assert {path: _formula_cells(text) for path, text in written.items()} == {
        path: [] for path in written
    }
