"""The XML and CSV representations of a resource, and the one CSV writer.

JSON is the default and the only form of errors and writes. A GET of a resource or a
collection may also be asked for (``web/negotiation.py``) as ``application/xml`` or
``text/csv``:

- XML: one root element named for the resource (a collection: a plural root holding
  one element per record), each field a child element, array values repeating their
  element: ``<article><id>1</id><tags>a</tags><tags>b</tags></article>``.
- CSV (RFC 4180): a header row of field names, one row per record, arrays and
  objects written as JSON text. A text cell starting with ``=``, ``+``, ``-``, ``@``,
  a tab or a carriage return is a formula to a spreadsheet (OWASP "CSV Injection"),
  so it is written with a leading ``'``; a cell that is exactly ``-`` (a catalogue's
  "none") stays, and so do numbers, which we write ourselves. Quoting keeps a cell
  whole only for a reader that splits on the comma: one that splits on ``;`` or a
  tab (a spreadsheet in another locale) sees a new cell after each, so inside every
  cell, JSON text included, a formula character right after a semicolon or a tab
  gets the same ``'`` (``x;=1`` is written ``x;'=1``); after a comma or a line
  break none, since both stay inside the quotes of an RFC 4180 reader.
- In both, a reference to a principal, ``{"type": "user", "id": 3}`` (an article's
  author), is the one value ``user:3``; null is an empty element or cell.

Numbers look as they do in JSON (an amount of ``1E+2`` is ``100`` everywhere).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from html import escape
from typing import Any

from .negotiation import CSV, JSON, XML, content_type
from .wsgi import Response, json_bytes

# XML 1.0 cannot carry most control characters, even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# The separators a spreadsheet in another locale splits on (docs/api.md, "CSV").
_FORMULA_INSIDE = re.compile("(?<=[;\t])(?=[=+@-])")


@dataclass(frozen=True)
class Resource:
    """How a resource is named and laid out in XML and CSV."""

    singular: str
    plural: str
    fields: tuple[str, ...]


def represent(
    response: Response, media_type: str, resource: Resource | None
) -> Response:
    """A handler's JSON answer as the negotiated media type, marked as varying."""
    if response.status == 204:
        return response
    # The body depends on Accept: caches must key on it (RFC 9110 section 12.5.5).
    response.headers.append(("Vary", "Accept"))
    if media_type == JSON:
        return response
    body = response.body  # the vendor type: the same bytes under another name
    if resource is not None and media_type in (XML, CSV):
        body = _render(response.data, media_type, resource).encode()
    headers = [(k, v) for k, v in response.headers if k != "Content-Type"]
    headers.append(("Content-Type", content_type(media_type)))
    return Response(body, response.status, headers, response.data)


def _render(data: Any, media_type: str, resource: Resource) -> str:
    """A JSON response's data as XML or CSV text."""
    records = data["data"] if "data" in data else [data]
    if media_type == CSV:
        rows = ([record.get(name) for name in resource.fields] for record in records)
        return csv_text([resource.fields, *rows])
    if "data" in data:
        inner = "".join(_xml_element(resource.singular, r) for r in records)
        body = f"<{resource.plural}>{inner}</{resource.plural}>"
    else:
        body = _xml_element(resource.singular, data)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body


def csv_text(rows: Iterable[Iterable[Any]], none: str | None = None) -> str:
    """RFC 4180 text of ``rows``, every cell made safe for a spreadsheet; a cell
    that is exactly ``none`` (the catalogue's "-") is written as it is."""
    return "".join(
        ",".join(_quoted(_csv_cell(value, none)) for value in row) + "\r\n"
        for row in rows
    )


# Written by hand, not by the csv module, whose minimal quoting leaves a semicolon
# or a tab bare: a spreadsheet that splits on either (Excel in a ";" locale, a
# tab-separated import) would start a new cell there, and a formula after it.
_SEPARATORS = re.compile('[,;\t"\r\n]')


def _quoted(cell: str) -> str:
    """``cell`` between double quotes, each inner one doubled, when it holds a
    comma, a semicolon, a tab, a quote, CR or LF (RFC 4180 section 2)."""
    if _SEPARATORS.search(cell) is None:
        return cell
    return '"' + cell.replace('"', '""') + '"'


def _reference(value: Any) -> str | None:
    """``type:id`` of a reference to a principal; None for any other value."""
    if isinstance(value, dict) and value.keys() == {"type", "id"}:
        return f"{value['type']}:{value['id']}"
    return None


def _xml_element(name: str, value: Any) -> str:
    value = _reference(value) or value
    if isinstance(value, list):
        return "".join(_xml_element(name, item) for item in value)
    if isinstance(value, dict):
        inner = "".join(_xml_element(key, item) for key, item in value.items())
        return f"<{name}>{inner}</{name}>"
    if value is None:
        return f"<{name}/>"
    # html's escape, &, < and > as xml.sax's does: xml.sax would import urllib's
    # client too, half a MiB of a worker (docs/benchmarks.md, "A worker's memory").
    # A carriage return as a reference: a parser reads a bare one as a line feed
    # (XML 1.0 section 2.11), and the text must read back as it was sent.
    text = escape(_scalar(value), quote=False).replace("\r", "&#13;")
    text = _NOT_XML.sub("\ufffd", text)
    return f"<{name}>{text}</{name}>"


def _csv_cell(value: Any, none: str | None) -> str:
    value = _reference(value) or value
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return _FORMULA_INSIDE.sub("'", json_bytes(value).decode())
    if isinstance(value, str):
        risky = value.startswith(_FORMULA_START) and value != none
        return ("'" if risky else "") + _FORMULA_INSIDE.sub("'", value)
    return _scalar(value)


def _scalar(value: Any) -> str:
    """A number or boolean as JSON writes it; text as it is."""
    if isinstance(value, (bool, int, float, Decimal)):
        return json_bytes(value).decode()
    return str(value)
