"""The paper-protocol row and the with-frictions row of every setting, side by side.

For each setting of a results section, two rows: *as run*, the representative (median-return)
run's metrics under the execution settings it ran with (the papers' close, no costs, unless the
experiment said otherwise), and *with frictions*, the same run's recorded decisions re-settled
under :data:`agent.pairs.market.execution.FRICTIONS` from its tape (``decisions.parquet`` +
``prices.parquet``) by :func:`agent.pairs.market.execution.resettle`: no model call is repeated,
the decisions are held fixed. The spread across seeds is each seed's own decisions re-settled.
A run without a tape (written before tapes existed) gets n/a and a note; ``localfin export``
rebuilds its tables from the store.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from agent.pairs.market.execution import FRICTIONS, ExecutionSettings, resettle
from agent.pairs.market.metrics import Metrics
from agent.pairs.market.tables import fill_metrics, run_execution
from agent.pairs.market.tape import DECISIONS_FILE, PRICES_FILE, has_tape, read_decisions, read_prices
from agent.report.html import Cell, esc, fmt_num, fmt_pct, fmt_range, note, sharpe_cell, table
from agent.report.load import RunData
from agent.report.tables import Section, Setting
from localfin.errors import LocalfinError

__all__ = ["Resettled", "resettled", "frictions_rows", "frictions_table", "FRICTION_HEADERS"]

FRICTION_HEADERS = (
    "setting",
    "settlement",
    "cum. return (compounded)",
    "return spread (min .. max)",
    "Sharpe ± SE",
    "max drawdown",
    "ann. volatility",
    "Sortino",
    "win rate",
    "costs paid",
)


@dataclass(frozen=True)
class Resettled:
    """One run's decisions settled under some execution settings: the metrics and the costs
    paid (a fraction of capital, summed over transitions)."""

    metrics: Metrics
    costs: float


@lru_cache(maxsize=4096)
def _resettle(
    path: str, stamp: tuple[int, int], settings: ExecutionSettings, counterfactual: bool
) -> Resettled:
    from pathlib import Path

    d = Path(path)
    decisions = read_decisions(d / DECISIONS_FILE)
    fills = resettle(decisions, read_prices(d / PRICES_FILE), settings)
    return Resettled(
        fill_metrics(decisions, fills, counterfactual=counterfactual), math.fsum(f.cost for f in fills)
    )


def resettled(run: RunData, settings: ExecutionSettings | None = None) -> Resettled | None:
    """``run``'s tape settled under ``settings`` (None: the settings it ran with); None when the
    folder has no tape or it cannot be settled (say, no open prices for next-open fills)."""
    if not has_tape(run.path):
        return None
    s = settings if settings is not None else run_execution(run.doc)
    # the files' modification times are part of the key: a tape written again is read again
    stamp = ((run.path / DECISIONS_FILE).stat().st_mtime_ns, (run.path / PRICES_FILE).stat().st_mtime_ns)
    try:
        return _resettle(str(run.path), stamp, s, not bool(run.extra.get("no_candidate", False)))
    except LocalfinError:
        return None


def _spread(setting: Setting, settings: ExecutionSettings) -> tuple[float, float]:
    vals = []
    for r in setting.results:
        x = resettled(r.run, settings)
        if x is not None and math.isfinite(x.metrics.cumulative_return):
            vals.append(x.metrics.cumulative_return)
    return (min(vals), max(vals)) if vals else (math.nan, math.nan)


def frictions_rows(setting: Setting, frictions: ExecutionSettings = FRICTIONS) -> list[dict[str, Any]]:
    """The two rows of a setting: as run and with ``frictions`` (None metrics: no tape)."""
    rep = setting.representative
    own = run_execution(rep.run.doc)
    ran = resettled(rep.run)
    fr = resettled(rep.run, frictions)
    lo, hi = setting.spread("cumulative_return")
    flo, fhi = _spread(setting, frictions)
    return [
        {
            "setting": setting.label,
            "run_id": rep.run.run_id,
            "settlement": f"as run ({own.label()})",
            "metrics": rep.metrics,
            "return_min": lo,
            "return_max": hi,
            "costs": ran.costs if ran is not None else math.nan,
        },
        {
            "setting": setting.label,
            "run_id": rep.run.run_id,
            "settlement": f"with frictions ({frictions.label()})",
            "metrics": fr.metrics if fr is not None else None,
            "return_min": flo,
            "return_max": fhi,
            "costs": fr.costs if fr is not None else math.nan,
        },
    ]


def _cells(row: dict[str, Any], spread: bool, first: bool) -> list[Cell]:
    m: Metrics | None = row["metrics"]
    nan = math.nan

    def g(name: str) -> float:
        return float(getattr(m, name)) if m is not None else nan

    return [
        Cell(row["setting"] if first else "", sub=f"run: {row['run_id']}" if first else ""),
        Cell(row["settlement"]),
        Cell(fmt_pct(g("cumulative_return")), g("cumulative_return"), "cumulative_return", "num"),
        Cell(fmt_range(row["return_min"], row["return_max"]) if spread else "–", None, "", "num"),
        sharpe_cell(m),
        Cell(fmt_pct(g("max_drawdown")), g("max_drawdown"), "max_drawdown", "num"),
        Cell(
            fmt_pct(g("annual_volatility"), signed=False), g("annual_volatility"), "annual_volatility", "num"
        ),
        Cell(fmt_num(g("sortino")), g("sortino"), "sortino", "num"),
        Cell(fmt_pct(g("win_rate"), 1, signed=False), g("win_rate"), "win_rate", "num"),
        Cell(fmt_pct(row["costs"], 2, signed=False), row["costs"], "costs", "num"),
    ]


def frictions_table(section: Section, frictions: ExecutionSettings = FRICTIONS) -> str:
    """The section's paper-protocol and with-frictions rows, two per setting."""
    rows, attrs, missing = [], [], []
    for s in section.settings:
        pair = frictions_rows(s, frictions)
        if pair[1]["metrics"] is None:
            missing.append(s.label)
        for k, r in enumerate(pair):
            rows.append(_cells(r, s.n > 1, k == 0))
            attrs.append(
                {"setting": s.label, "run": r["run_id"], "settlement": "as-run" if k == 0 else "frictions"}
            )
    out = table(FRICTION_HEADERS, rows, cls="results frictions", row_attrs=attrs)
    out += note(
        "With frictions: the same decisions re-settled from each run's decisions.parquet and "
        f"prices.parquet ({esc(frictions.label())}); no model call is repeated. Costs paid: fees, "
        "slippage and borrow summed over the transitions, as a fraction of capital."
    )
    if missing:
        out += note(
            "No tape (decisions.parquet, prices.parquet) for: "
            + ", ".join(missing)
            + "; written before tapes existed, or its prices lack opens for next-open fills."
        )
    return out
