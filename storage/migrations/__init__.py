"""Migrations: numbered SQL files, one folder a dialect, and this one for both.

A backend applies, in number order, the files of its own folder
(``sqlite/migrations/``, ``postgres/migrations/``) and of this one, whose SQL both
dialects run as written (so it is written once). A number names one file: the same
number in two of the folders is a mistake, refused here rather than applied twice.
It imports nothing but the standard library.
"""

from __future__ import annotations

from pathlib import Path

SHARED = Path(__file__).parent


def numbered(folder: Path) -> list[tuple[int, Path]]:
    """The migrations of ``folder`` and the shared ones, in order of their number."""
    found: dict[int, Path] = {}
    for source in (folder, SHARED):
        for script in source.glob("[0-9][0-9][0-9]_*.sql"):
            number = int(script.name[:3])
            if number in found:
                raise ValueError(f"two migrations numbered {number}: {script}")
            found[number] = script
    return sorted(found.items())
