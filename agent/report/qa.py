"""The financial-QA panel of the report: every ``qa_report.json`` under the input folder (written
by the QA demo, :func:`agent.qa.evaluation.demo.run_qa_demo`) becomes one table of the three variants:
accuracy, memory hit rate, tokens per question, engine seconds per question and wall time, with
the bank it used and a link to the demo's own Markdown report.

Only the JSON document is read (``agent.report`` imports no agent). A document that cannot be
read or lacks a field is listed with the reason instead of a table.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent.report.html import Cell, esc, fmt_int, note, table

__all__ = ["QA_FILE", "find_qa_reports", "qa_rows", "qa_section"]

log = logging.getLogger(__name__)

QA_FILE = "qa_report.json"
_LABELS = {"base": "Base", "ft": "Base+FT", "ft_fm": "Base+FT+FM"}
_SKIP = {"report", "__pycache__"}


def find_qa_reports(root: str | Path, exclude: Path | None = None) -> list[Path]:
    """Every ``qa_report.json`` at or below ``root`` (hidden folders, folders named ``report``
    and ``exclude`` skipped), sorted."""
    r = Path(root)
    ex = exclude.resolve() if exclude is not None else None
    out = []
    for dirpath, dirnames, filenames in os.walk(r):
        d = Path(dirpath)
        dirnames[:] = sorted(
            n
            for n in dirnames
            if not n.startswith(".") and n not in _SKIP and (ex is None or (d / n).resolve() != ex)
        )
        if QA_FILE in filenames:
            out.append(d / QA_FILE)
    return sorted(out)


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def qa_rows(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per variant: label, correct, n, accuracy, memory hit rate (None: no memory),
    mean tokens per question, mean engine seconds per question, wall seconds."""
    walls = doc.get("wall_s", {}) or {}
    rows = []
    for key, s in doc["variants"].items():
        rows.append(
            {
                "variant": _LABELS.get(key, key),
                "correct": int(s["correct"]),
                "n": int(s["n"]),
                "accuracy": _num(s["accuracy"]),
                "memory_hit_rate": _num(s.get("memory_hit_rate")),
                "tokens": _num(s["mean_total_tokens"]),
                "engine_s": _num(s["mean_engine_s"]),
                "wall_s": _num(walls.get(key)),
                "model_calls": int(s.get("model_calls", 0)),
                "bank_rows": s.get("bank_rows"),
                "fallbacks": sum(int(v) for v in (s.get("fallbacks") or {}).values()),
            }
        )
    return rows


def _f(x: float | None, digits: int) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _one(path: Path, page_dir: Path) -> str:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        rows = qa_rows(doc)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return note(f"{path}: cannot be read ({type(exc).__name__}: {exc})")
    body: list[list[Cell | str]] = []
    for r in rows:
        acc = "n/a" if r["accuracy"] is None else f"{r['correct']}/{r['n']} ({100 * r['accuracy']:.0f}%)"
        hit = "-" if r["memory_hit_rate"] is None else f"{100 * r['memory_hit_rate']:.0f}%"
        body.append(
            [
                r["variant"],
                Cell(acc, r["accuracy"], "accuracy", "num"),
                Cell(hit, r["memory_hit_rate"], "memory_hit_rate", "num"),
                Cell(_f(r["tokens"], 0), r["tokens"], "tokens_per_question", "num"),
                Cell(_f(r["engine_s"], 2), r["engine_s"], "engine_s_per_question", "num"),
                Cell(_f(r["wall_s"], 1), r["wall_s"], "wall_s", "num"),
                Cell(fmt_int(r["fallbacks"]), r["fallbacks"], "fallbacks", "num"),
            ]
        )
    bank = doc.get("bank") or {}
    walls = doc.get("wall_s") or {}
    md = path.with_name("qa_report.md")
    link = os.path.relpath(md, page_dir) if md.is_file() else ""
    model, sandbox = esc(doc.get("model", "?")), esc(doc.get("sandbox", "?"))
    built, total = _f(_num(walls.get("bank_build")), 0), _f(_num(walls.get("total")), 0)
    rows_in_bank = next((r["bank_rows"] for r in rows if r["bank_rows"] is not None), None)
    size = rows_in_bank if rows_in_bank is not None else bank.get("entries_added")
    meta = (
        f"Model <code>{model}</code>; bank: {fmt_int(size)} entries from "
        f"{fmt_int(bank.get('items'))} training questions, built in {built} s; QA part wall time "
        f"{total} s; Python sandbox: {sandbox}."
    )
    if rows and all(r["model_calls"] == 0 for r in rows):
        meta += " Every call of this run was answered from the journals (a rerun): times are the replay's."
    if link:
        meta += f' Details: <a href="{esc(link)}">{esc(md.name)}</a>.'
    return f'<h3>{esc(path.parent.name)}</h3><p class="small">{meta}</p>' + table(
        [
            "variant",
            "accuracy",
            "memory hit rate",
            "tokens / question",
            "engine s / question",
            "wall s",
            "fallbacks",
        ],
        body,
        cls="results qa",
    )


def qa_section(root: str | Path, page_dir: Path, exclude: Path | None = None) -> str:
    """The QA panel's HTML ("" when no ``qa_report.json`` is under ``root``); links are relative
    to ``page_dir`` (the folder of ``index.html``)."""
    found = find_qa_reports(root, exclude)
    if not found:
        return ""
    parts = [
        '<p class="small">Financial QA (FinAcumen) evaluated on the demo test split: Base (no tools, '
        "no memory), Base+FT (tools), Base+FT+FM (tools and experience memory). Accuracy is against "
        "the exactly computed gold answers; memory hit rate is the share of questions that retrieved "
        "at least one bank entry.</p>"
    ]
    parts += [_one(p, page_dir) for p in found]
    return "".join(parts)
