"""Characters nobody sees: every format character (general category ``Cf``) and every
``Default_Ignorable_Code_Point``, as ranges of code points.

An email address holding one looks exactly like another address without it (a
zero-width space, a right-to-left override, a Hangul filler, a tag character), so a
schema's keyword ``x-no-invisible`` refuses them (docs/authentication.md, "Users").

Written here from Unicode 15.0.0's ``DerivedCoreProperties.txt``
(``Default_Ignorable_Code_Point``) and ``extracted/DerivedGeneralCategory.txt``
(``Cf``), merged, rather than asked of ``unicodedata``: it does not expose
``Default_Ignorable_Code_Point`` at all, and its Unicode version differs by Python
(14.0 on 3.11, 15.1 on 3.13). The default-ignorable ranges reserve code points not
yet assigned (``U+E0000`` to ``U+E0FFF``, ``U+FFF0`` to ``U+FFF8``), so what a later
Unicode assigns there is refused already; ``tests/schemas/test_invisible.py`` checks
that every ``Cf`` character of the running Python's Unicode is here.
"""

from __future__ import annotations

import re

RANGES = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)

_INVISIBLE = re.compile(
    "[" + "".join(f"\\U{first:08x}-\\U{last:08x}" for first, last in RANGES) + "]"
)


# The same table for the OpenAPI document, where a schema may only say it with a
# pattern (``not``): its characters of the Basic Multilingual Plane, as ``\\uXXXX``,
# which ECMA-262 and Python read alike. Those beyond it (``U+110BD`` and up) ECMA-262
# reads as code points only with its ``u`` flag, which not every tool sets, so the
# document's description names them instead (docs/authentication.md, "Users").
BMP_PATTERN = (
    "["
    + "".join(
        f"\\u{first:04x}-\\u{last:04x}" if last > first else f"\\u{first:04x}"
        for first, last in RANGES
        if last <= 0xFFFF
    )
    + "]"
)


def first_invisible(text: str) -> str | None:
    """The first invisible character of ``text``, if it holds one."""
    found = _INVISIBLE.search(text)
    return found.group() if found else None
