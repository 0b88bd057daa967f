"""The report page in a real browser: headless Chromium renders it to a PNG that is not blank and
shows the page's content (text at the top, figures below); the CLI's --screenshot --scale writes a
smaller copy. Skipped where Chromium is absent (`make test` installs it as root)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import report_support as rs

from agent.report.build import build_report
from agent.report.screenshot import chromium_command, find_chromium, screenshot


def _needs_chromium() -> str:
    exe = find_chromium()
    if exe is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    return exe


def test_chromium_renders_the_page(tmp_path: Path) -> None:
    _needs_chromium()
    from PIL import Image

    res = build_report(rs.experiment(tmp_path / "e"))
    png = screenshot(res.html, tmp_path / "page.png", width=1280, height=4000)
    with Image.open(png) as im:
        assert im.size == (1280, 4000)
        a = np.asarray(im.convert("L"), dtype=np.float64)
    top = a[:120]
    assert (top < 100).mean() > 0.002, "the title and the input line are drawn"
    body = a[400:4000]
    assert body.std() > 20, "figures and tables below the header"
    rows_with_ink = (a < 200).any(axis=1)
    assert rows_with_ink[3000:].mean() > 0.3, "the page fills the window (figures loaded)"


def test_cli_screenshot_with_scale(cli, tmp_path: Path) -> None:
    _needs_chromium()
    from PIL import Image

    exp = rs.experiment(tmp_path / "e", with_moira=False, exposures=("no_beta",))
    r = cli("report", exp, "--screenshot", tmp_path / "small.png", "--window", "1000x1500", "--scale", "0.5")
    assert r.code == 0, r.err
    assert r.out.splitlines() == [str(exp / "report" / "index.html"), str(tmp_path / "small.png")]
    with Image.open(tmp_path / "small.png") as im:
        assert im.size == (500, 750) and im.mode == "P"


def test_the_command_line_keeps_chromium_offline(tmp_path: Path) -> None:
    cmd = chromium_command("chromium", tmp_path / "index.html", tmp_path / "x.png", tmp_path / "p", 800, 600)
    for flag in (
        "--headless",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ):
        assert flag in cmd
    assert cmd[-1].startswith("file://") and f"--user-data-dir={tmp_path / 'p'}" in cmd
