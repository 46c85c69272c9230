"""XML and CSV representations: payments offer them too, and CSV is formula-safe.

A CSV cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is a
formula to a spreadsheet (OWASP "CSV Injection"); every CSV the service writes puts
a ``'`` before such a text cell. A cell that is exactly ``-`` (the catalogue's
"none") stays, and so do numbers, which we write ourselves.
"""

from __future__ import annotations

import pytest

from refapi.web.representations import csv_text

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
        pytest.param("\tx", "'\tx", id="tab"),
        pytest.param("\rx", '"\'\rx"', id="carriage-return"),
        pytest.param('=HYPERLINK("x")', '"\'=HYPERLINK(""x"")"', id="quoted"),
        pytest.param("-", "-", id="a-lone-minus-stays"),
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
    assert csv_text(rows) == (
        "name,optional parameters,count\r\n'=cmd,-,-3\r\n'@x,,true\r\n"
    )
