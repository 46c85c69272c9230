"""docs/development.md's "Read this first": the files it names exist, in the order a
request meets them, and add up to an afternoon's reading (about 2,000 lines)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "development.md"


def reading_list() -> list[Path]:
    text = GUIDE.read_text()
    section = text.split("## Read this first", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if re.match(r"\| \d+ \|", line)]
    files = [
        name
        for row in rows
        for name in re.findall(r"`([\w/]+\.py)`", row.split("|")[2])
    ]
    return [ROOT / name for name in files]


def test_every_file_named_exists_and_the_path_starts_at_the_front_door():
    files = reading_list()
    assert files[0] == ROOT / "app.py"
    assert all(path.is_file() for path in files), files
    assert ROOT / "router.py" in files and ROOT / "storage" / "records.py" in files


def test_the_reading_is_an_afternoons():
    # 2,600 until slow work's slots and idempotent creates joined the router and
    # the article's storage (2,623 then); a request's path must not grow further
    # without a reason as good.
    lines = sum(len(path.read_text().splitlines()) for path in reading_list())
    assert 1500 <= lines <= 2650, lines
