"""The docs sections the explainer cites (lab/annotations.py, WHY_*) exist, and
what each name ``setBy`` can be is explained."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from refapi.lab.annotations import (
    LAB_WHY_HEADER,
    SETTERS,
    WHY_HEADER,
    WHY_STATUS,
    linked,
)

ROOT = Path(__file__).resolve().parents[2]


def anchors(name: str) -> set[str]:
    """The anchors of a guide's headings, as GitHub makes them."""
    headings = re.findall(r"^#+ (.+)$", (ROOT / name).read_text(), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize(
    "cited",
    sorted({*WHY_HEADER.values(), *LAB_WHY_HEADER.values(), *WHY_STATUS.values()}),
)
def test_each_docs_section_cited_exists(cited):
    name, _, anchor = cited.partition("#")
    assert anchor in anchors(name), cited


def test_conditional_requests_is_cited_as_text():
    assert WHY_HEADER["ETag"] == "docs/api.md#conditional-requests"


def test_every_name_set_by_can_be_has_a_meaning_in_stack_order(make_app):
    """The server, each layer of the stack (TrustedProxy too, behind a proxy), the
    router and the handler: nothing the annotations name goes unexplained."""
    app = make_app(anonymous=True, trust_proxy=1).app
    layers = [cls.__name__ for cls, _ in app.layers]
    assert "TrustedProxy" in layers
    assert list(SETTERS) == ["server", *layers, "router", "handler"]
    # The lab's stack is of the same classes, fewer of them, in the same order.
    lab = [cls.__name__ for cls, _ in app.lab.layers]
    assert lab == [name for name in layers if name in lab]
    assert {"TrustedProxy", "Cors", "RateLimit"} <= set(lab)
    assert not {"Authenticate", "Versioning"} & set(lab)  # docs/lab.md, "Conventions"
    for name, (meaning, docs) in SETTERS.items():
        assert meaning.endswith(".") and len(meaning) <= 200, name
        assert docs is None or docs.startswith("docs/"), name


@pytest.mark.parametrize(
    "cited", sorted({docs for _, docs in SETTERS.values() if docs is not None})
)
def test_each_docs_section_a_setter_cites_exists(cited):
    name, _, anchor = cited.partition("#")
    assert anchor in anchors(name), cited


def test_a_docs_section_is_linked_where_the_guides_lookup_serves_it():
    """``linked`` takes the guides' lookup (the front door's ``guide``): each
    section cited is linked where the lookup says, under the guides' URL."""
    answer = {
        "annotations": [
            {"part": "status", "name": "200", "setBy": "handler",
             "docs": "docs/api.md#errors"},
            {"part": "request", "name": "Host"},
        ]
    }  # fmt: skip
    asked = []

    def served(path: str) -> str:  # a lookup of its own, to see it is the one used
        asked.append(path)
        return "served/" + path.removeprefix("docs/")

    found = linked(answer, "/prod/guides/", served)
    assert found["annotations"][0]["guide"] == "/prod/guides/served/api.md#errors"
    assert "guide" not in found["annotations"][1]
    [handler] = found["setters"]
    meaning, docs = SETTERS["handler"]
    assert handler == {
        "name": "handler", "meaning": meaning, "docs": docs,
        "guide": "/prod/guides/served/" + docs.removeprefix("docs/"),
    }  # fmt: skip
    assert asked == ["docs/api.md#errors", docs]
