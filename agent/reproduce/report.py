"""The reproduction report: ``reproduction.md`` and ``reproduction.json`` in the output folder.

Three parts: what the config reproduces and what differs from the paper (every setting whose
value is not the paper's, generated from the protocol ledger, then the config's facts); the paper's published
figures (copied from the paper, labelled as such), each with ours beside it where one of our
rows matches the figure's ``match`` fields; and every row of ours. Nothing here computes a
figure: it arranges what the runs wrote.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agent.pairs.market.metrics import RETURN_NOTE, ZERO_VARIANCE_NOTE
from agent.reproduce.spec import PaperFigure, ReproConfig

__all__ = ["OURS_METRIC", "match_figures", "write_report"]

#: Which field of our rows a paper figure's unit compares with (FinTMMBench's judged accuracy is
#: its rows' ``accuracy_pct``; FinMME's six-dimension Avg is ``finmme_avg_pct``).
OURS_METRIC = {
    "accuracy %": "accuracy_pct",
    "FinMME Avg %": "finmme_avg_pct",
    "%": "hit_rate_pct",
    "fraction": "hit_rate",  # Table 5's H_n
    "entries per query": "mean_entries",  # Table 5's E_n
    "Jaccard": "jaccard_prev",  # Table 5's J between adjacent snapshots
}


def _fmt(v: Any) -> str:
    if v is None or v == "":
        return "-"
    if isinstance(v, float):
        return f"{v:.2f}" if abs(v) < 1e4 else f"{v:,.0f}"
    return str(v)


def match_figures(figures: Sequence[PaperFigure], rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each figure with the value of the first row of ours that equals every ``match`` field
    (``None`` when there is no match clause or no such row)."""
    out = []
    for f in figures:
        ours = None
        field = OURS_METRIC.get(f.unit)
        if f.match and field:
            for r in rows:
                if field in r and all(str(r.get(k, "")) == v for k, v in f.match):
                    ours = r[field]
                    break
        out.append({"row": f.row, "column": f.column, "paper": f.value, "unit": f.unit, "ours": ours})
    return out


def _table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    if not rows:
        return ["(no rows)"]
    cols: list[str] = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(_fmt(r.get(c)) for c in cols) + " |" for r in rows]
    return lines


def write_report(
    cfg: ReproConfig,
    out_dir: Path,
    rows: Sequence[Mapping[str, Any]],
    *,
    mode: str,
    notes: Sequence[str] = (),
    extra: Mapping[str, Any] | None = None,
    tables: Sequence[tuple[str, Sequence[Mapping[str, Any]]]] = (),
) -> Path:
    """Write the report; returns the Markdown path. ``mode``: ``full``, ``smoke`` or ``rehearsal``
    (no paper figure beside the last two); ``tables``:
    further (title, rows) tables printed after ours (in the JSON under ``tables``)."""
    # a smoke run's figures come from the demo set / synthetic market: never beside the paper's
    figs = match_figures(cfg.figures, rows if mode == "full" else ())
    lines = [
        f"# Reproduction of {cfg.paper.capitalize()} {cfg.table}: {cfg.title}",
        "",
        f"Config `{cfg.name}` ({mode} run).",
    ]
    if mode == "smoke":
        lines += [
            "",
            "SMOKE RUN: the config shrunk to CPU size (synthetic market / demo QA items, the CPU model). "
            "It shows that the pipeline runs to the end; its figures say nothing about the paper's.",
        ]
    elif mode == "rehearsal":
        lines += [
            "",
            "REHEARSAL: the config at its settings on tiny random stand-ins of its models, a few items of "
            "its own datasets. It shows that every stage runs on these data; its figures say nothing "
            "about the paper's.",
        ]
    from agent.reproduce.ledger.resolve import (
        differs_section,
        provenance_counts,
        resolve_config,
        settings_json,
    )

    rows_led = resolve_config(cfg)
    section = differs_section(cfg, rows_led)
    lines += ["", "## " + section[0], *section[1:]]
    if notes:
        lines += ["", "## Notes from this run", ""] + [f"- {n}" for n in notes]
    lines += [
        "",
        "## The paper's published figures (copied from the paper) and ours",
        "",
        "`paper` is the published value; `ours` is this run's matching figure where one exists "
        "(`-`: the paper's setting is not run here, e.g. a proprietary backbone or a published baseline).",
        "",
    ]
    lines += _table(figs) if figs else ["The paper gives no figure for this table in the text we have."]
    lines += ["", "## Our figures", ""] + _table(rows)
    if any("return_pct" in r for r in rows):
        lines += ["", "`return_pct`: " + RETURN_NOTE]
    if any(r.get("sharpe_note") for r in rows):
        lines += ["", ZERO_VARIANCE_NOTE]
    for title, trows in tables:
        lines += ["", f"## {title}", ""] + _table(trows)
    md = out_dir / "reproduction.md"
    out_dir.mkdir(parents=True, exist_ok=True)
    md.write_text("\n".join(lines) + "\n", encoding="utf-8")
    doc = {
        "config": cfg.name,
        "paper": cfg.paper,
        "table": cfg.table,
        "mode": mode,
        "differs": list(cfg.differs),
        "settings": settings_json(cfg, rows_led)["settings"],
        "settings_counts": provenance_counts(rows_led),
        "notes": list(notes),
        "paper_vs_ours": figs,
        "rows": list(rows),
        **({"tables": {title: list(trows) for title, trows in tables}} if tables else {}),
        **dict(extra or {}),
    }
    (out_dir / "reproduction.json").write_text(
        json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8"
    )
    return md
