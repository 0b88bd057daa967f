"""The report on a desktop, on a phone and on its first screen, in headless Chromium (skipped where
it is absent; `make test` installs it as root): in a 1280-pixel window the page is no wider than
the window, every table (the results table of 17 columns first) keeps within it, and no name in a
table (a run id, a trace file's path) is broken over two lines; at 390 pixels (a phone) the page
is no wider than the screen, every table and the navigation bar keep within it (a wide table
scrolls in its own box, the bar wraps), and every figure keeps three quarters of its size (its
axes stay readable; it scrolls sideways); the best-run line and what the model can show are on the
first screen of a phone and of a desktop."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import report_support as rs

from agent.report.build import build_report
from agent.report.screenshot import screenshot

#: a phone's screen in CSS pixels (an iPhone 14: 390 x 844)
PHONE = (390, 844)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    return build_report(rs.experiment(tmp_path_factory.mktemp("phone") / "e")).html


def test_the_report_fits_a_1280_pixel_window(page: Path, page_layout) -> None:
    got = page_layout(page, width=1280)
    results = [t for t in got["tables"] if t["cls"] == "results"]
    assert results, "the page has results tables"
    assert got["page"] <= got["width"], f"the page is {got['page']} px wide in a {got['width']} px window"
    wide = [(t["cls"], t["head"], t["right"]) for t in got["tables"] if t["right"] > got["width"]]
    assert wide == []
    assert got["names"] == []


def test_the_report_reads_on_a_390_pixel_phone(page: Path, page_layout) -> None:
    got = page_layout(page, *PHONE)
    width = got["width"]
    assert width == PHONE[0]
    assert got["page"] <= width, f"the page is {got['page']} px wide on a {width} px screen"
    assert {t["cls"] for t in got["tables"]} >= {"results", "happened", "runs", "best"}
    for t in got["tables"]:
        # a table wider than the screen scrolls inside a box that keeps within it
        assert t["box"] <= width, t
        assert t["right"] <= width or t["scrolls"], t
    assert got["nav"] and all(n["right"] <= width for n in got["nav"])
    assert got["nav"][0]["height"] > 30, "the navigation bar wraps onto more lines"
    assert got["figures"], "the page has figures"
    for f in got["figures"]:
        assert f["box"] <= width, f
        assert f["shown"] >= 0.74 * f["natural"], f"{f['src']}: shrunk to {f['shown']} of {f['natural']} px"


def test_a_390_pixel_screenshot_shows_the_page(page: Path, tmp_path: Path) -> None:
    from PIL import Image

    from agent.report.screenshot import find_chromium

    if find_chromium() is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    png = screenshot(page, tmp_path / "phone.png", width=PHONE[0], height=2400)
    with Image.open(png) as im:
        assert im.size == (PHONE[0], 2400)
        a = np.asarray(im.convert("L"), dtype=np.float64)
    assert (a[:80] < 100).mean() > 0.002, "the title is drawn"
    assert a[300:2400].std() > 20, "tables and figures below"
    # the text keeps off the right edge: the page's own margin stays blank there (nothing cut)
    assert (a[:, -4:] < 200).mean() < 0.02


@pytest.mark.parametrize("screen", [PHONE, (1280, 800)], ids=["phone", "desktop"])
def test_the_first_screen_names_the_best_runs_and_what_the_model_can_show(
    page: Path, page_layout, screen: tuple[int, int]
) -> None:
    got = page_layout(page, *screen)
    roles = got["roles"]
    assert {"caveat", "best"} <= set(roles), roles
    for role in ("caveat", "best"):
        assert roles[role]["top"] >= 0 and roles[role]["bottom"] <= got["height"], (
            role,
            roles[role],
            got["height"],
        )
    assert "What these numbers can show" in roles["caveat"]["text"]
    assert roles["best"]["text"].startswith("Best run per metric")
