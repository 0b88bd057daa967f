"""Render the report page in headless Chromium to a PNG (to look at it as a browser shows it).

Chromium runs with networking features off (no QUIC, no background networking, component
updates or sync), a throw-away profile folder and a fixed window; ``--screenshot`` captures the
window (the top ``height`` pixels of the page). Chromium's window is never narrower than
:data:`MIN_WINDOW` pixels, so a narrower page (a phone's 390) is laid out in a frame of that width
(:func:`framed`: the page's own media queries and viewport then see the frame's width, as on the
phone) and the shot is cropped to it. :func:`shrink_png` makes a small copy for the documentation
(scaled, 256-colour palette).
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import tempfile
from pathlib import Path

from localfin.errors import InputError, LocalfinError

__all__ = [
    "CHROMIUM_NAMES",
    "MIN_WINDOW",
    "find_chromium",
    "chromium_command",
    "framed",
    "screenshot",
    "shrink_png",
]

log = logging.getLogger(__name__)

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: Chromium's narrowest window in CSS pixels (a narrower --window-size is widened to it)
MIN_WINDOW = 500

_FRAME = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><style>html,body{{margin:0;background:#fff}}
iframe{{border:0;display:block;width:{width}px;height:{height}px}}</style></head>
<body><iframe src="{src}"></iframe>
<script>window.addEventListener("message", e => document.body.setAttribute("data-layout", e.data));</script>
</body></html>
"""


def framed(page: Path, width: int, height: int) -> Path:
    """A page beside ``page`` that shows it in a frame ``width`` x ``height`` pixels (the frame's
    page lays itself out at that width); a message the framed page posts to its parent is kept as
    the frame page's ``data-layout`` attribute (how a test reads a measurement back). The caller
    removes the file."""
    out = page.with_name(f".frame-{width}-{page.name}")
    out.write_text(_FRAME.format(width=width, height=height, src=page.name), encoding="utf-8")
    return out


def find_chromium() -> str | None:
    """The first Chromium-family browser on PATH, or None."""
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def chromium_command(
    browser: str, html: Path, png: Path, profile: Path, width: int, height: int
) -> list[str]:
    """The headless Chromium command line that renders ``html`` into ``png``."""
    return [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        f"--screenshot={png}",
        f"--window-size={width},{height}",
        html.resolve().as_uri(),
    ]


def screenshot(
    html: str | Path,
    png: str | Path,
    *,
    width: int = 1280,
    height: int = 4000,
    browser: str | None = None,
    timeout_s: float = 120.0,
) -> Path:
    """Render ``html`` with headless Chromium into ``png`` (``width`` x ``height`` pixels).

    Raises InputError for a missing page or bad size, LocalfinError when no browser is found or
    Chromium fails or writes no image."""
    page = Path(html)
    out = Path(png)
    if not page.is_file():
        raise InputError(f"no page at {page}")
    if not (200 <= width <= 10000 and 200 <= height <= 30000):
        raise InputError(f"window {width}x{height}; allowed: width 200..10000, height 200..30000 pixels")
    exe = browser or find_chromium()
    if exe is None:
        raise LocalfinError(
            f"no Chromium found on PATH (tried {', '.join(CHROMIUM_NAMES)}); install it, e.g. "
            "apt-get install chromium"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp_png = out.with_name(f".{out.name}.tmp.png")
    tmp_png.unlink(missing_ok=True)
    narrow = width < MIN_WINDOW
    shown = framed(page, width, height) if narrow else page
    try:
        with tempfile.TemporaryDirectory(prefix="localfin-chromium-") as profile:
            cmd = chromium_command(exe, shown, tmp_png, Path(profile), max(width, MIN_WINDOW), height)
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
            except subprocess.TimeoutExpired as exc:
                raise LocalfinError(f"Chromium did not finish within {timeout_s:.0f} s") from exc
            except OSError as exc:
                raise LocalfinError(f"cannot start {exe}: {exc}") from exc
    finally:
        if narrow:
            shown.unlink(missing_ok=True)
    if not tmp_png.is_file() or tmp_png.stat().st_size == 0:
        tail = " ".join((proc.stderr or "").split()[-40:])
        raise LocalfinError(f"Chromium wrote no screenshot (exit code {proc.returncode}): {tail}")
    log.debug("chromium: %s", proc.stderr)
    if narrow:
        _crop(tmp_png, width, height)
    tmp_png.replace(out)
    return out


def _crop(png: Path, width: int, height: int) -> None:
    """Keep the top-left ``width`` x ``height`` pixels of ``png`` (the frame of a narrow page)."""
    from PIL import Image

    with Image.open(png) as im:
        img = im.crop((0, 0, width, height))
    img.save(png, format="PNG")


def shrink_png(src: str | Path, dst: str | Path, *, scale: float = 0.5, colors: int = 256) -> Path:
    """A smaller copy of a PNG: scaled by ``scale`` (0 < scale <= 1) and reduced to ``colors``
    palette colours (2..256), written atomically."""
    from PIL import Image

    if not 0 < scale <= 1:
        raise InputError(f"scale={scale}; allowed: 0 < scale <= 1")
    if not 2 <= colors <= 256:
        raise InputError(f"colors={colors}; allowed: 2..256")
    s, d = Path(src), Path(dst)
    with Image.open(s) as im:
        img = im.convert("RGB")
        if scale < 1:
            img = img.resize(
                (max(1, round(img.width * scale)), max(1, round(img.height * scale))), Image.LANCZOS
            )
        img = img.quantize(colors=colors, method=Image.Quantize.MEDIANCUT)
    d.parent.mkdir(parents=True, exist_ok=True)
    tmp = d.with_name(f".{d.name}.tmp.png")
    img.save(tmp, format="PNG", optimize=True)
    tmp.replace(d)
    return d
