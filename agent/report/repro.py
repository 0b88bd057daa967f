"""The reproductions panel of the report: every ``reproduction.json`` under the input folder
(written by ``localfin reproduce``, :func:`agent.reproduce.report.write_report`) becomes one
part: what it reproduces and in which mode, what of the gold it reads at test time (FinAcumen's
``reads_gold`` lines, shown first and marked), the paper's figures with ours and our row's
protocol beside them, and our rows (set, arm, variant, protocol, the figure).

Only the JSON document is read (``agent.report`` imports no agent). A document that cannot be
read is listed with the reason instead.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent.report.html import esc, note, table

__all__ = ["REPRO_FILE", "find_reproductions", "repro_section"]

REPRO_FILE = "reproduction.json"
_SKIP = {"report", "__pycache__", "runs", "arms", "models", "qa_data"}
#: our row's columns shown, in order (those a document's rows have)
_ROW_COLS = ("set", "arm", "variant", "protocol", "variant_protocol", "k_max", "n", "metric",
             "accuracy_pct", "finmme_avg_pct", "ci95_low", "ci95_high")  # fmt: skip


def find_reproductions(root: str | Path, exclude: Path | None = None) -> list[Path]:
    """Every ``reproduction.json`` at or below ``root`` (hidden folders, run and arm folders,
    folders named ``report`` and ``exclude`` skipped), sorted."""
    ex = exclude.resolve() if exclude is not None else None
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        d = Path(dirpath)
        dirnames[:] = sorted(
            n for n in dirnames
            if not n.startswith(".") and n not in _SKIP and (ex is None or (d / n).resolve() != ex)
        )  # fmt: skip
        if REPRO_FILE in filenames:
            out.append(d / REPRO_FILE)
    return sorted(out)


def _fmt(v: Any) -> str:
    if v is None or v == "":
        return "-"
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


def _one(path: Path, page_dir: Path) -> str:
    try:
        doc: Mapping[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        rows = list(doc.get("rows", []))
        figs = list(doc.get("paper_vs_ours", []))
    except (OSError, ValueError, TypeError) as exc:
        return note(f"{path}: cannot be read ({type(exc).__name__}: {exc})")
    md = path.with_name("reproduction.md")
    link = os.path.relpath(md, page_dir) if md.is_file() else ""
    head = (
        f"<h3>{esc(doc.get('config', path.parent.name))}: {esc(doc.get('paper', ''))} "
        f"{esc(doc.get('table', ''))}</h3>"
    )
    meta = f"{esc(doc.get('mode', '?'))} run, in {esc(os.path.relpath(path.parent, page_dir))}"
    if link:
        meta += f'; details: <a href="{esc(link)}">{esc(md.name)}</a>'
    parts = [head, f'<p class="small">{meta}.</p>']
    gold = list(doc.get("reads_gold", []))
    if gold:
        reads = [g for g in gold if "none (" not in g]
        cls = "warn" if reads else ""
        parts.append(
            "<p><b>What reads the gold at test time</b></p><ul>"
            + "".join(f'<li class="{cls}">{esc(g)}</li>' for g in gold)
            + "</ul>"
        )
    if any(f.get("ours") is not None for f in figs):
        body = [
            [
                str(f["row"]),
                str(f["column"]),
                _fmt(f["paper"]),
                _fmt(f.get("ours")),
                str(f.get("our protocol", "-")),
            ]
            for f in figs
            if f.get("ours") is not None
        ]
        parts.append(table(["paper's row", "column", "paper", "ours", "our protocol"], body, cls="results"))
    cols = [c for c in _ROW_COLS if any(c in r for r in rows)]
    if cols:
        parts.append(table(cols, [[_fmt(r.get(c)) for c in cols] for r in rows], cls="results"))
    else:
        parts.append(note("no rows"))
    return "".join(parts)


def repro_section(root: str | Path, page_dir: Path, exclude: Path | None = None) -> str:
    """The reproductions panel's HTML ("" when no ``reproduction.json`` is under ``root``)."""
    found = find_reproductions(root, exclude)
    if not found:
        return ""
    intro = (
        '<p class="small">Each reproduction with the paper\'s figures (copied from the paper) and '
        "ours; a FinAcumen row names its protocol (<code>paper</code> or <code>authors</code>, the "
        "authors' released code) and what of the gold it reads at test time.</p>"
    )
    return intro + "".join(_one(p, page_dir) for p in found)
