"""The docs sections the explainer cites (handlers/annotations.py, WHY_*) exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from refapi.handlers.annotations import WHY_HEADER, WHY_STATUS

ROOT = Path(__file__).resolve().parents[2]


def anchors(name: str) -> set[str]:
    """The anchors of a guide's headings, as GitHub makes them."""
    headings = re.findall(r"^#+ (.+)$", (ROOT / name).read_text(), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("cited", sorted({*WHY_HEADER.values(), *WHY_STATUS.values()}))
def test_each_docs_section_cited_exists(cited):
    name, _, anchor = cited.partition("#")
    assert anchor in anchors(name), cited


def test_conditional_requests_is_cited_as_text():
    assert WHY_HEADER["ETag"] == "docs/api.md#conditional-requests"
