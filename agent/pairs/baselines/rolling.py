"""The non-LLM baselines over rolling yearly windows of a long history (e.g. 2005-2023).

For each pool and calendar year: the test window is the pool's sessions of that year (step 001 its
first session, the last session of the year or of the store's data the end); the training window
is the ``train_sessions`` sessions just before it (about two months at 40; EG-DDQN also trains on
its ``history_sessions`` before that); the screen uses its default causal window (2,520 sessions
ending at step 001, or all the history there is down to its ``min_sessions``). Every baseline runs
under every exposure through :func:`agent.pairs.baselines.runner.run_all`, into
``<out_dir>/<pool>/<year>/runs/<method>-<exposure>-seed<seed>/``.

:class:`RollingResult` holds one row per run, the aggregates per (pool, exposure, method) and the
years whose screen had no candidate pair; ``rolling.json`` and ``rolling.md`` (the same tables
in Markdown) are written to ``out_dir``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agent.data.store import MarketStore
from agent.pairs.baselines.common import Window
from agent.pairs.baselines.runner import DEFAULT_BASELINES, BaselineConfig, RunSettings, run_all
from agent.pairs.market.folders import write_tables
from agent.pairs.market.records import write_json
from agent.pairs.market.settlement import EXPOSURES
from localfin.errors import ConfigError
from localfin.progress import NULL_PROGRESS, Progress

__all__ = ["RollingRow", "RollingResult", "yearly_windows", "run_rolling", "aggregate", "markdown"]

#: Short column names of the methods in the Markdown tables.
_SHORT = {
    "long_short": "L-S",
    "short_long": "S-L",
    "equal_weight": "EW",
    "eg_z": "EG+Z",
    "eg_ddqn": "EG-DDQN",
}


@dataclass(frozen=True)
class RollingRow:
    """One run of the rolling study (returns and drawdowns are fractions; Sharpe annualised)."""

    pool: str
    year: int
    exposure: str
    method: str
    pair: str
    no_candidate: bool
    n_transitions: int
    cumulative_return: float
    sharpe: float
    max_drawdown: float
    run_dir: str


def yearly_windows(
    store: MarketStore, pool: Sequence[str], years: Sequence[int], train_sessions: int
) -> list[tuple[int, Window, Window]]:
    """(year, training window, test window) for each year with at least 2 pool sessions and at
    least one session before it; the training window is the ``train_sessions`` sessions before."""
    if train_sessions < 1:
        raise ConfigError(f"train_sessions={train_sessions}; allowed: >= 1 session")
    cal = store.calendar(tickers=list(pool))
    out = []
    for year in years:
        lo = int(np.searchsorted(cal, np.datetime64(f"{year}-01-01", "D")))
        hi = int(np.searchsorted(cal, np.datetime64(f"{year + 1}-01-01", "D")))
        if hi - lo < 2 or lo == 0:
            continue
        train = Window(cal[max(0, lo - train_sessions)].item(), cal[lo - 1].item())
        out.append((year, train, Window(cal[lo].item(), cal[hi - 1].item())))
    return out


def _finite(values: Sequence[float]) -> list[float]:
    return [v for v in values if v is not None and math.isfinite(v)]


def _stat(values: Sequence[float], fn: Any) -> float:
    v = _finite(values)
    return float(fn(v)) if v else math.nan


def aggregate(rows: Sequence[RollingRow]) -> list[dict[str, Any]]:
    """Per (pool, exposure, method): windows, mean / median cumulative return, the return
    compounded over the windows, mean / median Sharpe (over windows where it is defined: a window
    held FLAT throughout has none), mean and worst maximum drawdown, windows without a pair."""
    keys = sorted({(r.pool, r.exposure, r.method) for r in rows}, key=lambda k: (k[0], k[1], _order(k[2])))
    out = []
    for pool, exposure, method in keys:
        sel = [r for r in rows if (r.pool, r.exposure, r.method) == (pool, exposure, method)]
        cr = [r.cumulative_return for r in sel]
        out.append(
            {
                "pool": pool,
                "exposure": exposure,
                "method": method,
                "windows": len(sel),
                "no_candidate": sum(r.no_candidate for r in sel) if method != "equal_weight" else 0,
                "mean_return": _stat(cr, np.mean),
                "median_return": _stat(cr, np.median),
                "compounded_return": float(np.prod([1.0 + c for c in cr]) - 1.0),
                "mean_sharpe": _stat([r.sharpe for r in sel], np.mean),
                "median_sharpe": _stat([r.sharpe for r in sel], np.median),
                "sharpe_windows": len(_finite([r.sharpe for r in sel])),
                "mean_mdd": _stat([r.max_drawdown for r in sel], np.mean),
                "worst_mdd": _stat([r.max_drawdown for r in sel], np.min),
            }
        )
    return out


def _order(method: str) -> int:
    names = list(_SHORT)
    return names.index(method) if method in names else len(names)


@dataclass(frozen=True)
class RollingResult:
    """Rows of every run, their aggregates and the years without a candidate pair per pool."""

    rows: tuple[RollingRow, ...]
    aggregates: tuple[dict[str, Any], ...]
    no_candidate_years: dict[str, list[int]]
    out_dir: Path


def _pct(x: float) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{100 * x:+.2f}"


def _num(x: float) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{x:+.2f}"


def markdown(result: RollingResult) -> str:
    """Per-year tables (cumulative return %, per pool and exposure) and the aggregate table."""
    rows = result.rows
    lines: list[str] = []
    methods = sorted({r.method for r in rows}, key=_order)
    for pool in sorted({r.pool for r in rows}):
        for exposure in [e for e in EXPOSURES if any(r.exposure == e for r in rows)]:
            sel = [r for r in rows if r.pool == pool and r.exposure == exposure]
            lines += [
                f"### {pool}, {exposure}: cumulative return per year (%)",
                "",
                "| year | pair | " + " | ".join(_SHORT.get(m, m) for m in methods) + " |",
                "|---|---|" + "---|" * len(methods),
            ]
            for year in sorted({r.year for r in sel}):
                by = {r.method: r for r in sel if r.year == year}
                pair = next((r.pair for r in by.values() if r.pair), "none")
                cells = [_pct(by[m].cumulative_return) if m in by else "" for m in methods]
                lines.append(f"| {year} | {pair} | " + " | ".join(cells) + " |")
            lines.append("")
    lines += [
        "### Aggregates over the yearly windows",
        "",
        "| pool | exposure | method | windows | no pair | mean CR % | median CR % | compounded % | "
        "mean Sharpe | median Sharpe | mean MDD % | worst MDD % |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for a in result.aggregates:
        lines.append(
            f"| {a['pool']} | {a['exposure']} | {_SHORT.get(a['method'], a['method'])} | {a['windows']} | "
            f"{a['no_candidate']} | {_pct(a['mean_return'])} | {_pct(a['median_return'])} | "
            f"{_pct(a['compounded_return'])} | {_num(a['mean_sharpe'])} ({a['sharpe_windows']}) | "
            f"{_num(a['median_sharpe'])} | {_pct(a['mean_mdd'])} | {_pct(a['worst_mdd'])} |"
        )
    lines.append("")
    for pool, years in sorted(result.no_candidate_years.items()):
        lines.append(f"{pool}: {len(years)} year(s) without a candidate pair: {years or 'none'}")
    return "\n".join(lines) + "\n"


def run_rolling(
    store: MarketStore,
    pools: Mapping[str, Sequence[str]],
    *,
    years: Sequence[int],
    out_dir: str | Path,
    exposures: Sequence[str] = EXPOSURES,
    seed: int = 0,
    train_sessions: int = 40,
    configs: Sequence[BaselineConfig] = DEFAULT_BASELINES,
    settings: RunSettings | None = None,
    progress: Progress = NULL_PROGRESS,
) -> RollingResult:
    """Run every baseline on yearly test windows of each pool; write ``rolling.json`` and
    ``rolling.md`` under ``out_dir`` and return the rows and aggregates."""
    if not pools:
        raise ConfigError("pools is empty; allowed: a mapping of pool names to tickers")
    out = Path(out_dir)
    rows: list[RollingRow] = []
    no_pair: dict[str, list[int]] = {}
    plan = {name: yearly_windows(store, pool, years, train_sessions) for name, pool in pools.items()}
    with progress.task("rolling baselines", total=sum(len(w) for w in plan.values())) as task:
        for name, windows in plan.items():
            no_pair[name] = []
            for year, train, test in windows:
                results = run_all(
                    store,
                    pool=pools[name],
                    train=train,
                    test=test,
                    out_dir=out / name / str(year),
                    exposures=exposures,
                    seed=seed,
                    configs=configs,
                    settings=settings,
                )
                if any(r.extra["no_candidate"] for r in results):
                    no_pair[name].append(year)
                for r in results:
                    m = r.metrics
                    rows.append(
                        RollingRow(
                            name,
                            year,
                            r.exposure,
                            r.method,
                            r.pair,
                            bool(r.extra["no_candidate"]),
                            m.n_transitions,
                            m.cumulative_return,
                            m.sharpe,
                            m.max_drawdown,
                            str(r.run_dir),
                        )
                    )
                task.advance()
    result = RollingResult(tuple(rows), tuple(aggregate(rows)), no_pair, out)
    write_json(
        out / "rolling.json",
        {
            "pools": {k: list(v) for k, v in pools.items()},
            "years": list(years),
            "train_sessions": train_sessions,
            "seed": seed,
            "rows": [asdict(r) for r in rows],
            "aggregates": list(result.aggregates),
            "no_candidate_years": no_pair,
        },
    )
    (out / "rolling.md").write_text(markdown(result), encoding="utf-8")
    write_tables(out)  # equity curves, trades and runs.csv (agent.pairs.market.tables)
    return result
