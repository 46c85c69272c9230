"""The bar chart of `make bench`: requests per second, written as SVG by hand.

One group of bars per request and backend (GET and POST, SQLite and PostgreSQL),
one bar per server, refapi's in its own colour; the figures are the table's medians.
No plotting library: the chart is rectangles and text, so the benchmark needs
nothing refapi does not.
"""

from __future__ import annotations

from xml.sax.saxutils import escape

WIDTH = 720
LABEL = 250  # the width of the servers' names, left of the bars
BAR, GAP, HEADING = 18, 4, 26
COLOURS = {"refapi": "#d9480f", "baseline": "#495057", "other": "#adb5bd"}


def colour(server: str) -> str:
    if server.startswith("refapi"):
        return COLOURS["refapi"]
    return COLOURS["baseline" if server.startswith("baseline") else "other"]


def svg(title: str, groups: list[tuple[str, list[tuple[str, float]]]]) -> str:
    """``groups``: (heading, [(server, requests per second), ...]) each."""
    most = max((rps for _, bars in groups for _, rps in bars), default=1.0) or 1.0
    span = WIDTH - LABEL - 70  # room for the figure right of the longest bar
    parts, y = [], 40
    for heading, bars in groups:
        parts.append(
            f'<text x="10" y="{y + 16}" font-weight="bold">{escape(heading)}</text>'
        )
        y += HEADING
        for server, rps in bars:
            length = max(1.0, rps / most * span)
            parts += [
                f'<text x="{LABEL - 8}" y="{y + 13}" text-anchor="end">'
                f"{escape(server)}</text>",
                f'<rect x="{LABEL}" y="{y}" width="{length:.1f}" height="{BAR}"'
                f' fill="{colour(server)}"/>',
                f'<text x="{LABEL + length + 6:.1f}" y="{y + 13}">{rps:,.0f}</text>',
            ]
            y += BAR + GAP
        y += GAP * 2
    height = y + 10
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}"'
            f' height="{height}" viewBox="0 0 {WIDTH} {height}"'
            ' font-family="sans-serif" font-size="12">',
            f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>',
            f'<text x="10" y="22" font-size="14" font-weight="bold">{escape(title)}'
            "</text>",
            *parts,
            "</svg>",
            "",
        ]
    )
