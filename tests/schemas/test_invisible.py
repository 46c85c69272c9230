"""The table of invisible characters (schemas/invisible.py) that an email may not
hold: every format character and every default-ignorable code point."""

from __future__ import annotations

import sys
import unicodedata

import pytest

from refapi.schemas.invisible import RANGES, first_invisible


def test_the_ranges_are_sorted_and_apart():
    for (_, last), (first, _) in zip(RANGES, RANGES[1:], strict=False):
        assert last + 1 < first
    assert all(first <= last <= sys.maxunicode for first, last in RANGES)


def test_every_format_character_of_this_pythons_unicode_is_in_the_table():
    # Python's Unicode may be older or newer than the table's (15.0): a newer
    # Python that adds a format character fails here, and the table is redone.
    format_characters = [
        f"U+{code:04X}"
        for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)) == "Cf" and not first_invisible(chr(code))
    ]
    assert format_characters == [], unicodedata.unidata_version


@pytest.mark.parametrize(
    "char",
    # Default-ignorable, not Cf: what category alone would let through.
    [
        "\u034f",
        "\u115f",
        "\u3164",
        "\uffa0",
        "\ufe0f",
        "\u180b",
        "\U000e0100",
        "\u2065",
        "\U000e0fff",
    ],  # fmt: skip
)
def test_default_ignorable_code_points_that_are_not_format_characters(char):
    assert unicodedata.category(char) != "Cf"
    assert first_invisible(f"a{char}b") == char


@pytest.mark.parametrize("char", ["a", " ", "\u00e9", "\u0915", "\U0001f600", "@"])
def test_what_people_see_is_not_in_the_table(char):
    assert first_invisible(char) is None
