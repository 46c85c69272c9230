"""The docs sections the explainer cites (handlers/annotations.py, WHY_*) exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from refapi.handlers.annotations import SETTERS, WHY_HEADER, WHY_STATUS

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


def test_every_name_set_by_can_be_has_a_meaning_in_stack_order(make_app):
    """The server, each layer of the stack (TrustedProxy too, behind a proxy), the
    router and the handler: nothing the annotations name goes unexplained."""
    app = make_app(anonymous=True, trust_proxy=1).app
    layers = [cls.__name__ for cls, _ in app.router.layers]
    assert "TrustedProxy" in layers
    assert list(SETTERS) == ["server", *layers, "router", "handler"]
    for name, (meaning, docs) in SETTERS.items():
        assert meaning.endswith(".") and len(meaning) <= 200, name
        assert docs is None or docs.startswith("docs/"), name


@pytest.mark.parametrize(
    "cited", sorted({docs for _, docs in SETTERS.values() if docs is not None})
)
def test_each_docs_section_a_setter_cites_exists(cited):
    name, _, anchor = cited.partition("#")
    assert anchor in anchors(name), cited
