"""The shared row mapping (storage/rows.py): an article's tags as stored."""

from __future__ import annotations

import json

import pytest

from refapi.storage import rows


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
