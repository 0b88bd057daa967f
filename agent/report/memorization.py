"""Named beside anonymized (memorization control, ``[experiment] anonymize = true``): where a
section holds a setting twice, once with the stocks' real names in its prompts and once with
aliases (:mod:`agent.pairs.market.anonymize`), the two as a row pair and their difference. A gap
is what the backbone's prior knowledge of the names is worth to the setting (over its seeds: the
spreads say how much of it is noise)."""

from __future__ import annotations

import math
from typing import Any

from agent.report.html import Cell, fmt_pct, fmt_range, note, sharpe_cell, table
from agent.report.tables import Section, Setting

__all__ = ["ANONYMIZED_SUFFIX", "named_pairs", "memorization_table"]

#: what a setting's label carries when its runs' prompts named the stocks by aliases
ANONYMIZED_SUFFIX = " · anonymized"

_HEADERS = (
    "setting",
    "prompts name the stocks",
    "cum. return (compounded)",
    "return spread (min .. max)",
    "Sharpe ± SE",
    "max drawdown",
    "win rate",
    "action accuracy",
)


def _anonymized(setting: Setting) -> bool:
    return bool(setting.key[-1]) if setting.key else False


def named_pairs(section: Section) -> list[tuple[Setting, Setting]]:
    """(named, anonymized) settings of ``section`` that differ only in anonymization."""
    named = {s.key[:-1]: s for s in section.settings if not _anonymized(s)}
    return [(named[s.key[:-1]], s) for s in section.settings if _anonymized(s) and s.key[:-1] in named]


def _cells(s: Setting, how: str, first: bool) -> list[Cell]:
    m = s.representative.metrics
    lo, hi = s.spread("cumulative_return")
    return [
        Cell(
            s.label.removesuffix(ANONYMIZED_SUFFIX) if first else "",
            sub=f"run: {s.representative.run.run_id}",
        ),
        Cell(how),
        Cell(fmt_pct(m.cumulative_return), m.cumulative_return, "cumulative_return", "num"),
        Cell(fmt_range(lo, hi) if s.n > 1 else "–", None, "", "num"),
        sharpe_cell(m),
        Cell(fmt_pct(m.max_drawdown), m.max_drawdown, "max_drawdown", "num"),
        Cell(fmt_pct(m.win_rate, 1, signed=False), m.win_rate, "win_rate", "num"),
        Cell(fmt_pct(m.action_accuracy, 1, signed=False), m.action_accuracy, "action_accuracy", "num"),
    ]


def _gap(a: float, b: float) -> float:
    return a - b if math.isfinite(a) and math.isfinite(b) else math.nan


def memorization_table(section: Section) -> str:
    """The row pairs (named, anonymized) of the section, or "" when it has none."""
    pairs = named_pairs(section)
    if not pairs:
        return ""
    rows: list[list[Cell]] = []
    attrs: list[dict[str, Any]] = []
    gaps = []
    for named, anon in pairs:
        rows += [_cells(named, "real names", True), _cells(anon, "aliases (STOCK_A, Company A, ...)", False)]
        attrs += [
            {"setting": named.label, "prompts": "named"},
            {"setting": named.label, "prompts": "anonymized"},
        ]
        n, a = named.representative.metrics, anon.representative.metrics
        gaps.append(
            f"{named.label}: {fmt_pct(_gap(n.cumulative_return, a.cumulative_return))} return, "
            f"{_gap(n.sharpe, a.sharpe):+.2f} Sharpe"
        )
    out = table(_HEADERS, rows, cls="results memorization", row_attrs=attrs)
    return out + note(
        "Named minus anonymized (median-return runs): " + "; ".join(gaps) + ". Same data, windows and "
        "settings; only the names in the prompts differ, so a gap is what the backbone's knowledge of "
        "the names adds (or costs)."
    )
