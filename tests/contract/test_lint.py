"""Redocly's recommended rules and Spectral's OpenAPI and OWASP rulesets find
nothing in either document (the core's, the lab's) that is not explained.

What a rule asks that is not true of refapi is switched off, with the reason, in
``tools/contract/redocly.yaml`` or ``tools/contract/.spectral.yaml``; anything else
they report fails here (docs/development.md, "The contract tools").
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.contract.conftest import DOCUMENTS, TOOLS, node_tool, run_tool


def test_redocly_recommended_finds_nothing(documents: dict[str, Path]):
    redocly = node_tool("redocly")
    result = run_tool(
        [
            redocly,
            "lint",
            "--config",
            TOOLS / "redocly.yaml",
            "--format",
            "stylish",
            "--max-problems",
            "1000",
            *(documents[served] for served in DOCUMENTS),
        ]
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # A warning does not fail redocly lint; its stylish line does fail here. Read
    # by the line's form, so a banner of Node.js's or Redocly's saying "warning"
    # (a deprecation) is not taken for one.
    found = re.findall(r"^\s*\d+:\d+\s+warning\s.*$", result.stdout, re.MULTILINE)
    assert not found, result.stdout


def test_spectral_oas_and_owasp_find_nothing(documents: dict[str, Path]):
    spectral = node_tool("spectral")
    result = run_tool(
        [
            spectral,
            "lint",
            "--ruleset",
            TOOLS / ".spectral.yaml",
            "--fail-severity",
            "hint",
            "--format",
            "text",
            # Both in one run: the tool's start, not the documents, is most of it.
            *(documents[served] for served in DOCUMENTS),
        ]
    )
    assert result.returncode == 0, result.stdout + result.stderr
