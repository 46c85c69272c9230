"""The files a visitor of the repository looks for: the changelog starts with the
release the service reports, and the contributing guide points at the developers'."""

from __future__ import annotations

import re
from pathlib import Path

from refapi.config import VERSION

ROOT = Path(__file__).resolve().parents[2]


def test_the_changelog_starts_with_the_version_healthz_reports():
    releases = re.findall(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert releases and releases[0] == VERSION


def test_contributing_points_at_the_development_guide_and_the_usual_files():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    for target in ("docs/development.md", "CHANGELOG.md", "SECURITY.md"):
        assert f"]({target})" in text
        assert (ROOT / target).exists()
