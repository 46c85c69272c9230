"""The shared row mapping (storage/rows.py): an article's tags as stored, and the
times as written (storage/base.py, ``iso``)."""

from __future__ import annotations

import datetime
import json

import pytest

from refapi.storage import rows
from refapi.storage.base import iso


@pytest.mark.parametrize(
    ("tags", "stored"),
    [
        ([], "[]"),
        (["http"], '["http"]'),
        (["a", "b"], '["a", "b"]'),
        (["ß", "日本語", "🙂"], '["ß", "日本語", "🙂"]'),
        (['say "hi"', "back\\slash"], '["say \\"hi\\"", "back\\\\slash"]'),
        (["tab\there", "\x00", "\u2028"], '["tab\\there", "\\u0000", "\u2028"]'),
    ],
    ids=["none", "one", "two", "non-ascii", "quote-backslash", "control-chars"],
)
def test_tags_text_is_the_text_rows_were_stored_as(tags, stored):
    assert rows.tags_text(tags) == stored
    # What json.dumps wrote before the encoder was made once: old rows and new agree.
    assert rows.tags_text(tags) == json.dumps(tags, ensure_ascii=False)
    assert json.loads(rows.tags_text(tags)) == tags
    row = (1, "t", rows.tags_text(tags), "c", "u", None, None)
    assert rows.article(row)["tags"] == tags


def test_iso_writes_each_second_it_is_given_whatever_came_before():
    # The text of the second last written is kept: a write of another second,
    # later or earlier (a clock stepped back), gets its own.
    seconds = [0.0, 0.999, 1.0, 1.5, 0.2, 86_399.9, 86_400.0, 1.7e9 + 0.5]
    for timestamp in seconds:
        expected = datetime.datetime.fromtimestamp(int(timestamp), datetime.UTC)
        assert iso(timestamp) == expected.strftime("%Y-%m-%dT%H:%M:%SZ")
