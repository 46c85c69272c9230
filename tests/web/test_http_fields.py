"""The table of HTTP fields and statuses (web/http_fields.py), and its readers."""

from __future__ import annotations

import re

import pytest

from refapi.openapi.vocabulary import HEADERS
from refapi.web import http_fields

# What a line cites: an RFC section, an RFC, a draft, or a W3C/WHATWG document.
SPEC = re.compile(r"^(RFC \d{4}( section [\d.]+)?|draft-[a-z0-9-]+|W3C .+|WHATWG .+)$")


@pytest.mark.parametrize("name", sorted(http_fields.FIELDS))
def test_each_field_is_one_sentence_and_cites_a_specification_or_none(name):
    entry = http_fields.FIELDS[name]
    assert entry.meaning.endswith(".") and "\n" not in entry.meaning
    assert entry.spec is None or SPEC.match(entry.spec), entry.spec


@pytest.mark.parametrize("code", sorted(http_fields.STATUSES))
def test_each_status_is_one_sentence_and_cites_an_rfc(code):
    entry = http_fields.STATUSES[code]
    assert entry.meaning.endswith(".") and "\n" not in entry.meaning
    assert entry.spec is not None and SPEC.match(entry.spec)


@pytest.mark.parametrize(
    ("code", "spec"),
    [(304, "RFC 9110 section 15.4.5"), (299, "RFC 9110 section 15.3"),
     (599, "RFC 9110 section 15.6")],
)  # fmt: skip
def test_a_status_not_listed_is_read_by_its_class(code, spec):
    assert http_fields.status(code).spec == spec


def test_a_field_is_found_whatever_its_case():
    assert http_fields.field("etag") == http_fields.FIELDS["ETag"]
    assert http_fields.field("X-Unheard-Of") is None


@pytest.mark.parametrize(
    "name", ["ETag", "Location", "Retry-After", "Allow", "Vary", "Cache-Control"]
)
def test_the_openapi_document_describes_a_standard_header_by_its_line(name):
    entry = http_fields.FIELDS[name]
    description, _ = HEADERS[name]
    assert description.startswith(f"{entry.meaning[:-1]} ({entry.spec}).")


def test_every_header_the_document_describes_is_in_the_table():
    assert set(HEADERS) <= set(http_fields.FIELDS)
