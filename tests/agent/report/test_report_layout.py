"""The report in a 1280-pixel window (headless Chromium; skipped where it is absent): the page is
no wider than the window, every table (the results table of 15 columns first) keeps within it,
and no name in a table (a run id, a trace file's path) is broken over two lines."""

from __future__ import annotations

from pathlib import Path

import pytest
import report_support as rs

from agent.report.build import build_report

pytestmark = pytest.mark.slow


def test_the_report_fits_a_1280_pixel_window(tmp_path: Path, page_layout) -> None:
    res = build_report(rs.experiment(tmp_path / "e"))
    got = page_layout(res.html, width=1280)
    results = [t for t in got["tables"] if t["cls"] == "results"]
    assert results, "the page has results tables"
    assert got["page"] <= got["width"], f"the page is {got['page']} px wide in a {got['width']} px window"
    wide = [(t["cls"], t["head"], t["right"]) for t in got["tables"] if t["right"] > got["width"]]
    assert wide == []
    assert got["names"] == []
