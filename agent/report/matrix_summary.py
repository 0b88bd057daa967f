"""The matrix folder's ``summary.json`` and ``summary.md``: one row per setting across the matrix.

The rows are the report's (:mod:`agent.report.tables`), so the matrix summary and
``localfin report <matrix folder>`` agree by construction: a *setting* is every run that shares
the test window, exposure, method, variant, backbone and pool and differs only in seed; its row
shows the median-return run (a run that happened; the lower middle for an even count), the
spread (min..max) of return and Sharpe across the seeds, and the representative's Sharpe with
its standard error (Lo 2002, :mod:`agent.pairs.market.metrics`). Metrics are recomputed from each
run's ``steps.parquet``; a ``metrics.json`` that disagrees is flagged in the row.

It lives on the report side (the matrix in :mod:`agent.pairs` never imports the report): the
layer that composes a matrix run (``localfin pairs matrix``, ``localfin reproduce``) hands
:func:`write_matrix_summary` to :func:`agent.pairs.experiment.matrix.run_matrix`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent.pairs.market.metrics import RETURN_NOTE, ZERO_VARIANCE_MARK, ZERO_VARIANCE_NOTE, table_sharpe
from agent.pairs.market.records import write_json
from agent.report.frictions import frictions_rows
from agent.report.load import load_input
from agent.report.tables import build_settings, results_row, run_results
from localfin.files import write_text
from localfin.fmt import fmt_num, fmt_pct

__all__ = ["matrix_settings", "write_matrix_summary", "summary_markdown"]


def matrix_settings(out_dir: str | Path) -> list[dict[str, Any]]:
    """The results rows of every setting found under ``out_dir`` (report order)."""
    data = load_input(out_dir)
    rows = []
    for s in build_settings(run_results(data.runs)):
        row = results_row(s)
        row["exposure"] = s.exposure
        row["window"] = list(s.window)
        row["folders"] = sorted({r.run.group for r in s.results})
        row["seeds"] = list(row["seeds"])
        row["mismatches"] = list(row["mismatches"])
        row["frictions"] = _frictions(s)
        rows.append(row)
    return rows


def _frictions(setting: Any) -> dict[str, Any]:
    """The setting's with-frictions row (:mod:`agent.report.frictions`): the representative run's
    decisions re-settled with frictions (None figures: the run has no tape)."""
    fr = frictions_rows(setting)[1]
    m = fr["metrics"]
    names = ("cumulative_return", "sharpe", "sharpe_se", "max_drawdown")
    shown, flat = table_sharpe(m) if m is not None else (None, False)
    return {
        "settlement": fr["settlement"],
        **{k: (getattr(m, k) if m is not None else None) for k in names},
        "sharpe_shown": shown,
        "sharpe_zero_variance": flat,
        "return_min": fr["return_min"],
        "return_max": fr["return_max"],
        "costs": fr["costs"],
    }


def summary_markdown(name: str, cells: Sequence[Any], rows: Sequence[dict[str, Any]]) -> str:
    """The matrix summary as Markdown: experiments (calls, invalid replies) and settings."""
    lines = [
        f"# Experiment matrix `{name}`",
        "",
        "| experiment | status | runs | wall s | model calls | replayed | journal calls | invalid replies |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for c in cells:
        lines.append(
            f"| {c.folder} | {c.status} | {c.runs} | {c.wall_s:.1f} | {c.model_calls} | {c.replayed} | "
            f"{c.journal_calls} | {c.invalid_replies} |"
        )
    lines += [
        "",
        "Settings (median-return run of the seeds; spread = min..max across seeds; Sharpe ± SE); under "
        "each, the same decisions re-settled with frictions (no model call repeated). " + RETURN_NOTE,
        "",
        "| setting | exposure | test window | seeds | median run | return (compounded) | return spread "
        "| Sharpe ± SE "
        "| Sharpe spread | max DD | switches |",
        "|---|---|---|---|---|---:|---|---:|---|---:|---:|",
    ]
    for r in rows:
        flag = " (metrics.json differs)" if r["mismatches"] else ""
        lines.append(
            f"| {r['setting']} | {r['exposure']} | {r['window'][0]}..{r['window'][1]} | "
            f"{','.join(str(s) for s in r['seeds'])} | {r['run_id']}{flag} | "
            f"{fmt_pct(r['cumulative_return'])} | {fmt_pct(r['return_min'])}..{fmt_pct(r['return_max'])} | "
            f"{fmt_num(r['sharpe_shown'])}{ZERO_VARIANCE_MARK if r['sharpe_zero_variance'] else ''} ± "
            f"{fmt_num(r['sharpe_se'])} | "
            f"{fmt_num(r['sharpe_min'])}..{fmt_num(r['sharpe_max'])} | {fmt_pct(r['max_drawdown'])} | "
            f"{r['pair_switches']} |"
        )
        fr = r.get("frictions")
        if fr:
            seeds = ",".join(str(s) for s in r["seeds"])
            lines.append(
                f"| {r['setting']}, {fr['settlement']} | {r['exposure']} | "
                f"{r['window'][0]}..{r['window'][1]} | {seeds} | {r['run_id']} | "
                f"{fmt_pct(fr['cumulative_return'])} | "
                f"{fmt_pct(fr['return_min'])}..{fmt_pct(fr['return_max'])} | "
                f"{fmt_num(fr['sharpe_shown'])}{ZERO_VARIANCE_MARK if fr['sharpe_zero_variance'] else ''} ± "
                f"{fmt_num(fr['sharpe_se'])} | – | "
                f"{fmt_pct(fr['max_drawdown'])} | – |"
            )
    if any(r["sharpe_zero_variance"] or (r.get("frictions") or {}).get("sharpe_zero_variance") for r in rows):
        lines += ["", ZERO_VARIANCE_NOTE]
    return "\n".join(lines) + "\n"


def write_matrix_summary(out_dir: str | Path, name: str, cells: Sequence[Any]) -> list[dict[str, Any]]:
    """Write ``summary.json`` and ``summary.md`` into the matrix folder; returns the rows."""
    out = Path(out_dir)
    rows = matrix_settings(out)
    write_json(
        out / "summary.json",
        {"matrix": name, "experiments": [c.__dict__ for c in cells], "settings": rows},
    )
    write_text(out / "summary.md", summary_markdown(name, cells, rows))
    return rows
