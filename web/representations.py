"""Content negotiation (RFC 9110 section 12.5.1) and the XML and CSV representations.

JSON is the default and the only form of errors and writes. A GET of a resource or a
collection may also be asked for as ``application/xml`` or ``text/csv``:

- XML: one root element named for the resource (a collection: a plural root holding
  one element per record), each field a child element, array values repeating their
  element: ``<article><id>1</id><tags>a</tags><tags>b</tags></article>``.
- CSV (RFC 4180): a header row of field names, one row per record, arrays and
  objects written as JSON text.

An ``Accept`` that none of the offered types satisfies is ``406 NOT_ACCEPTABLE``.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape

from werkzeug.datastructures import MIMEAccept
from werkzeug.http import parse_accept_header

from ..errors import NotAcceptable
from .wsgi import Response, json_bytes

JSON = "application/json"
XML = "application/xml"
CSV = "text/csv"
VENDOR = "application/vnd.refapi+json"

JSON_ONLY = (JSON, VENDOR)
ALL = (JSON, VENDOR, XML, CSV)

_COMMON = frozenset(
    ("", "*/*", JSON, "application/json, */*", "application/json, text/plain, */*")
)
# XML 1.0 cannot carry most control characters, even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


@dataclass(frozen=True)
class Resource:
    """How a resource is named and laid out in XML and CSV."""

    singular: str
    plural: str
    fields: tuple[str, ...]


def negotiate(accept: str, offers: tuple[str, ...]) -> str:
    """The offered media type that best satisfies ``accept``; 406 when none does."""
    if accept in _COMMON or VENDOR in accept:
        # The vendor type's version was already checked by the versioning layer.
        return JSON
    best = parse_accept_header(accept, MIMEAccept).best_match(offers)
    if best is None:
        raise NotAcceptable(details={"available": list(offers)})
    return JSON if best == VENDOR else best


def render(response: Response, media_type: str, resource: Resource) -> Response:
    """Re-render a JSON response's data as XML or CSV."""
    data = response.data
    records = data["data"] if "data" in data else [data]
    if media_type == XML:
        if "data" in data:
            inner = "".join(_xml_element(resource.singular, r) for r in records)
            body = f"<{resource.plural}>{inner}</{resource.plural}>"
        else:
            body = _xml_element(resource.singular, data)
        text = '<?xml version="1.0" encoding="UTF-8"?>\n' + body
        content_type = "application/xml; charset=utf-8"
    else:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow(resource.fields)
        for record in records:
            writer.writerow(_csv_cell(record.get(name)) for name in resource.fields)
        text = out.getvalue()
        content_type = "text/csv; charset=utf-8"
    headers = [(k, v) for k, v in response.headers if k != "Content-Type"]
    headers.append(("Content-Type", content_type))
    return Response(text.encode(), response.status, headers, data)


def _xml_element(name: str, value: Any) -> str:
    if isinstance(value, list):
        return "".join(_xml_element(name, item) for item in value)
    if isinstance(value, dict):
        inner = "".join(_xml_element(key, item) for key, item in value.items())
        return f"<{name}>{inner}</{name}>"
    if value is None:
        return f"<{name}/>"
    if isinstance(value, bool):
        text = "true" if value else "false"
    else:
        text = _NOT_XML.sub("\ufffd", escape(str(value)))
    return f"<{name}>{text}</{name}>"


def _csv_cell(value: Any) -> Any:
    if isinstance(value, (list, dict)):
        return json_bytes(value).decode()
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else value
