"""The benchmark's chart (docs/bench.svg, written by `make bench`) is well-formed SVG
that a browser can show in the README; the writer escapes what it is given."""

from __future__ import annotations

import importlib.util
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SVG = "{http://www.w3.org/2000/svg}"


def load_chart():
    spec = importlib.util.spec_from_file_location("chart", ROOT / "bench" / "chart.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_chart_is_well_formed_svg_with_a_bar_a_figure():
    root = ET.parse(ROOT / "docs" / "bench.svg").getroot()
    assert root.tag == f"{SVG}svg"
    bars = root.findall(f"{SVG}rect")[1:]  # the first is the background
    assert bars, "the chart has no bars"
    texts = [text.text or "" for text in root.iter(f"{SVG}text")]
    assert any(t.startswith("refapi") for t in texts)
    assert any(t.startswith("baseline") for t in texts)


def test_names_are_escaped_and_bars_scale_with_the_figures():
    chart = load_chart()
    bars = [("a & b", 100), ("c", 50)]
    text = chart.svg("a <title> & more", [("GET & <POST>", bars)])
    root = ET.fromstring(text)
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "a <title> & more" in texts and "a & b" in texts and "GET & <POST>" in texts
    widths = [float(r.get("width")) for r in root.findall(f"{SVG}rect")[1:]]
    assert widths[0] == 2 * widths[1]
