"""HTML of the report: escaped tables and the page around them (numbers through :mod:`localfin.fmt`).

The page is one static file with its style inline and figures as relative ``figures/*.png``
paths: it opens offline, from any folder it is copied to with its figures. Undefined numbers
(NaN, None, infinities) are written ``n/a``. A table cell that shows a number carries it at full
precision in ``data-value`` (and the metric's name in ``data-metric``) so tests and scripts can
read the page back.
"""

from __future__ import annotations

import html
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.pairs.market.metrics import ZERO_VARIANCE_MARK, table_sharpe
from localfin.fmt import NA, fmt_int, fmt_num, fmt_pct, fmt_pm, fmt_range, is_number

__all__ = [
    "NA",
    "GENERATOR",
    "Cell",
    "sharpe_cell",
    "fmt_pct",
    "fmt_num",
    "fmt_int",
    "fmt_pm",
    "fmt_range",
    "esc",
    "names",
    "table",
    "figure",
    "png_size",
    "note",
    "page",
]

#: The generator named in the page's head (a folder holding such a page may be replaced).
GENERATOR = "localfin report"


def sharpe_cell(metrics: Any) -> Cell:
    """The Sharpe ratio ± its standard error as a results table shows it
    (:func:`agent.pairs.market.metrics.table_sharpe`: 0.00 with its mark for a run whose every
    return is zero); ``data-value`` holds the shown value."""
    if metrics is None:
        return Cell(NA, float("nan"), "sharpe", "num")
    value, flat = table_sharpe(metrics)
    se = metrics.get("sharpe_se") if isinstance(metrics, dict) else getattr(metrics, "sharpe_se", None)
    return Cell(fmt_pm(value, se) + (f" {ZERO_VARIANCE_MARK}" if flat else ""), value, "sharpe", "num")


def esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


_PLAIN_WORD = re.compile(r"[(\"'“]*(?:[A-Za-z]+|[A-Za-z][a-z]*(?:-[A-Za-z][a-z]*)+)[)\"'”,.;:!?]*")


def names(text: Any) -> str:
    """``text`` escaped for a table cell, a name in it (a run id, a path, a ticker pair: a word
    that is not a plain English one) kept whole: a run that does not wrap (``.nb``), a path
    wrapping only after a ``/``. The browser would otherwise break ``full-beta-s0`` after a
    hyphen."""
    out = []
    for token in re.split(r"(\s+)", str(text)):
        if not re.search(r"[A-Za-z][-/_]|[-/_][A-Za-z]", token) or _PLAIN_WORD.fullmatch(token):
            out.append(esc(token))  # nothing a browser would break inside (3/10, -6.36%)
            continue
        pieces = re.split(r"(?<=/)(?=.)", token) if len(token) > 16 else [token]
        out.append("<wbr>".join(f'<span class="nb">{esc(p)}</span>' for p in pieces))
    return "".join(out)


@dataclass(frozen=True)
class Cell:
    """A table cell: its text, and for a number the value and metric name written as data
    attributes; ``cls`` a CSS class (``num`` right-aligns); ``sub`` a small second line."""

    text: str
    value: Any = None
    metric: str = ""
    cls: str = ""
    sub: str = ""


def _cell(c: Cell | str, tag: str = "td") -> str:
    if not isinstance(c, Cell):
        return f"<{tag}>{names(c)}</{tag}>"
    attrs = []
    if c.cls:
        attrs.append(f'class="{esc(c.cls)}"')
    if c.metric:
        attrs.append(f'data-metric="{esc(c.metric)}"')
    if c.value is not None:
        v = repr(float(c.value)) if is_number(c.value) else "nan"
        attrs.append(f'data-value="{esc(v)}"')
    a = (" " + " ".join(attrs)) if attrs else ""
    sub = f'<br><span class="small">{names(c.sub)}</span>' if c.sub else ""
    return f"<{tag}{a}>{names(c.text)}{sub}</{tag}>"


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Cell | str]],
    *,
    cls: str = "",
    row_attrs: Sequence[dict[str, str]] | None = None,
    caption: str = "",
) -> str:
    """An HTML table (every text escaped); ``row_attrs``: data attributes per row."""
    # in a box of its own that scrolls sideways when the table is wider than the window (a phone)
    out = ['<div class="scroll">' + (f'<table class="{esc(cls)}">' if cls else "<table>")]
    if caption:
        out.append(f"<caption>{esc(caption)}</caption>")
    out.append("<thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in headers) + "</tr></thead><tbody>")
    for i, r in enumerate(rows):
        attrs = ""
        if row_attrs is not None:
            attrs = "".join(f' data-{esc(k)}="{esc(v)}"' for k, v in row_attrs[i].items())
        out.append(f"<tr{attrs}>" + "".join(_cell(c) for c in r) + "</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out)


def png_size(path: str | Path) -> tuple[int, int] | None:
    """Width and height in pixels of a PNG file (read from its header); None when it is not one."""
    try:
        with open(path, "rb") as f:
            head = f.read(24)
    except OSError:
        return None
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    w, h = struct.unpack(">II", head[16:24])
    return int(w), int(h)


def figure(src: str, alt: str, caption: str = "", *, file: str | Path | None = None) -> str:
    """A figure with a relative image path (``figures/x.png``); ``file``: the image on disk, whose
    size is written on the tag (the page keeps its layout while images load, and a narrow window
    shows the figure at three quarters of it, scrolling sideways, instead of shrinking its axes
    out of reach)."""
    cap = f"<figcaption>{esc(caption)}</figcaption>" if caption else ""
    size = png_size(file) if file is not None else None
    dims = f' width="{size[0]}" height="{size[1]}" style="--w:{size[0]}px"' if size else ""
    return f'<figure><div class="fig"><img src="{esc(src)}" alt="{esc(alt)}"{dims}></div>{cap}</figure>'


def note(text: str) -> str:
    """A short note that stands in for a panel without input."""
    return f'<p class="note">{esc(text)}</p>'


_CSS = """
body{font-family:-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;margin:0;color:#222;
background:#fafafa;font-size:14px;line-height:1.45;overflow-wrap:break-word}
main{max-width:1240px;margin:0 auto;padding:16px 20px 40px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:2px solid #ddd;
padding-bottom:4px}h3{font-size:15px;margin:20px 0 6px}h4{font-size:13px;margin:14px 0 4px;color:#444}
.meta{color:#555;margin:0 0 10px}code{background:#eee;padding:1px 4px;border-radius:3px;font-size:12px;
overflow-wrap:anywhere}
nav{background:#fff;border:1px solid #ddd;padding:8px 12px;margin:10px 0;font-size:13px;display:flex;
flex-wrap:wrap;gap:4px 14px}nav a{white-space:nowrap}
.scroll{max-width:100%;overflow-x:auto}.scroll>table{margin:6px 0 12px}
table{border-collapse:collapse;margin:6px 0 12px;background:#fff;font-size:12.5px}
th,td{border:1px solid #ddd;padding:3px 5px;text-align:left;vertical-align:top}
th{background:#f0f0f0;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums;
white-space:nowrap}table.results td:first-child{white-space:nowrap}td.num.wrap{white-space:normal}
caption{caption-side:top;text-align:left;color:#555;padding:2px 0;font-size:12px}
figure{margin:8px 0 16px;background:#fff;border:1px solid #e3e3e3;padding:6px}
figure img{max-width:100%;height:auto;display:block}figcaption{color:#555;font-size:12px;margin-top:4px}
.note{color:#8a6d3b;background:#fcf8e3;border:1px solid #faebcc;padding:5px 9px;margin:6px 0;font-size:12.5px}
.warn{color:#a94442}details{margin:6px 0}summary{cursor:pointer;font-weight:600}
.small{font-size:12px;color:#555}ul.conv li{margin:2px 0}.nb{white-space:nowrap}
.glance{background:#fff;border:1px solid #ddd;padding:6px 12px;margin:10px 0}
.glance p{margin:6px 0}.caveat{border-left:4px solid #d9822b;background:#fff8ef;padding:4px 10px}
table.best{margin:4px 0}table.results{font-size:12px}
.garbled{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;background:#f3f3f3;
overflow-wrap:anywhere}.flag{color:#a94442;font-size:12px;font-style:italic}
pre{overflow-x:auto}
@media (max-width:760px){main{padding:10px 10px 30px}h1{font-size:20px}
.fig{overflow-x:auto}figure img[style]{max-width:none;width:calc(var(--w) * .75)}}
"""


def page(title: str, body: str) -> str:
    """The whole document: inline style, no script, no external resource."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="generator" content="{GENERATOR}">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{esc(title)}</title>'
        f"<style>{_CSS}</style></head><body><main>\n{body}\n</main></body></html>\n"
    )
