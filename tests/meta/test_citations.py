"""Comments cite what a clone holds: a guide under docs/ and its heading, or an RFC;
never the design documents the project was built from, which a clone does not have
(docs/development.md, "Layout")."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Ways a comment pointed outside the repository before: "decisions section 9",
# "(decisions, section 8)", "the specification's table", a path into ../shared.
OUTSIDE = re.compile(
    r"decisions,? section|\(decisions[,:]|decisions\.md|reference-api\.md"
    r"|\.\./shared|the specification's",
    re.IGNORECASE,
)
SOURCES = ("*.py", "*.js", "*.sql", "*.toml", "*.html", "*.css", "Makefile")


def test_no_comment_cites_a_document_a_clone_does_not_have():
    listed = subprocess.run(
        ["git", "ls-files", "--", *SOURCES], cwd=ROOT, capture_output=True,
        text=True, check=True,
    ).stdout.split()  # fmt: skip
    found = [
        f"{name}:{number}: {line.strip()}"
        for name in listed
        if not name.startswith("ui/swagger/")  # vendored Swagger UI
        for number, line in enumerate((ROOT / name).read_text().splitlines(), 1)
        if OUTSIDE.search(line) and name != "tests/meta/test_citations.py"
    ]
    assert found == []


def test_the_check_finds_the_citations_it_is_for():
    for line in (
        "# decisions section 9: the names are fixed",
        "// The retry policy (decisions, section 8): at most",
        "calling the API as the specification's table of screens maps it.",
        "-- Users (decisions: authentication).",
        "see ../shared/spec/decisions.md",
    ):
        assert OUTSIDE.search(line), line
    assert not OUTSIDE.search('docs/api.md, "Choices the specification leaves open"')
