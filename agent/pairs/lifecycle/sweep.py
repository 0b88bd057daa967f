"""Sensitivity of the lifecycle thresholds on real pools (``localfin pairs lifecycle-sweep``).

The paper's Appendix F, which would give the factor thresholds, is missing from our copy, so the
defaults of :class:`~agent.pairs.lifecycle.config.LifecycleConfig` are ours. This module measures
how often pairs the agent could hold reach WARNING, BREAK and replacement under a grid of
thresholds, with no model call:

* selection dates: the last session of each month of the given years (as the screen sweep);
* held pairs: the screen's top ``top`` candidates of each date (the pairs the selection call
  chooses from), each held for ``hold`` sessions after its selection session (75: the paper's
  test window), its spread fixed to the screen's alpha and hedge ratio of that date, exactly as
  :class:`~agent.pairs.lifecycle.monitor.PairMonitor` opens it;
* each held session: the six factors of :func:`~agent.pairs.lifecycle.factors.pair_factors` from
  data up to that session (computed once; thresholds only decide which values are breached, so
  every grid point reuses them);
* levels and boundaries as :mod:`agent.pairs.lifecycle.machine` decides them from statistics
  alone: a session is BREAK with at least ``break_factors`` breached factors, WARNING with at
  least ``warning_factors``; a validation boundary every ``validation_period`` held sessions
  replaces the pair when at least ``break_share`` of its cycle's sessions were BREAK sessions
  (rule (b)). The news path (rules (a) and (c): a verified critical event, the break
  assessment confirmed by WARNING statistics) needs news and the model and is off here: the
  shared price files have no news, and its rates are those of a news feed, not of a threshold.

A holding ends at its first replacement; its sessions up to it are counted.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from agent.pairs.lifecycle.config import LifecycleConfig
from agent.pairs.lifecycle.factors import FACTOR_NAMES, FactorReport, pair_factors
from agent.pairs.screen.causal import ScreenConfig, read_prices
from agent.pairs.screen.rolling import RollingScreen
from localfin.errors import ConfigError, InputError
from localfin.progress import NULL_PROGRESS, Progress

__all__ = [
    "THRESHOLDS",
    "DEFAULT_GRID",
    "Holding",
    "collect_holdings",
    "breaches",
    "HoldingRates",
    "evaluate",
    "grid_configs",
    "sweep_table",
    "sweep_store",
]

#: The thresholds a grid may vary (the factor bands, the level counts, the cycle share and the
#: validation period); the windows are not among them: they change the factor values.
THRESHOLDS = (
    "corr_min",
    "half_life_min",
    "half_life_max",
    "adf_pvalue_max",
    "coint_pvalue_max",
    "z_abs_max",
    "vol_ratio_max",
    "warning_factors",
    "break_factors",
    "break_share",
    "validation_period",
)

#: One threshold at a time around the defaults (each value replaces the default alone).
DEFAULT_GRID: dict[str, tuple[float, ...]] = {
    "corr_min": (0.1, 0.2, 0.3, 0.4, 0.5),
    "half_life_max": (60.0, 120.0, 250.0, 500.0),
    "adf_pvalue_max": (0.2, 0.35, 0.5, 0.7),
    "coint_pvalue_max": (0.2, 0.35, 0.5, 0.7),
    "z_abs_max": (2.0, 2.5, 3.0, 3.5),
    "vol_ratio_max": (1.5, 2.0, 2.5, 3.0),
    "break_factors": (2, 3, 4),
    "break_share": (0.2, 0.3, 0.5),
}


@dataclass(frozen=True)
class Holding:
    """One pair held from a selection date: ``values`` / ``available`` are (sessions, 6)
    arrays of the factors (:data:`FACTOR_NAMES` order) on the held sessions after the
    selection session, from data up to each of them."""

    pool: str
    date: dt.date
    pair: str
    rank: int
    values: np.ndarray
    available: np.ndarray

    @property
    def n_sessions(self) -> int:
        return int(self.values.shape[0])


def _row(report: FactorReport) -> tuple[list[float], list[bool]]:
    return [f.value for f in report.factors], [f.available for f in report.factors]


def collect_holdings(
    store: Any,
    name: str,
    pool: Sequence[str],
    dates: Sequence[dt.date],
    *,
    top: int = 5,
    hold: int = 75,
    screen: ScreenConfig | None = None,
    lifecycle: LifecycleConfig | None = None,
    progress: Progress = NULL_PROGRESS,
) -> list[Holding]:
    """The factor paths of the top ``top`` candidates of every date of ``pool``, each held for up
    to ``hold`` sessions (fewer where the data ends)."""
    if top < 1 or hold < 1:
        raise ConfigError(f"top={top}, hold={hold}; allowed: integers >= 1")
    scfg = screen or ScreenConfig()
    lcfg = lifecycle or LifecycleConfig()
    tickers = tuple(sorted({t.strip().upper() for t in pool}))
    history = read_prices(store, tickers, end=dt.date.max, config=scfg)
    if history.n_sessions == 0:
        raise InputError(f"pool {name}: no prices in the store")
    with np.errstate(invalid="ignore", divide="ignore"):
        logp = np.log(history.values)
    col = {t: k for k, t in enumerate(history.tickers)}
    pos = {d.item(): i for i, d in enumerate(history.dates)}
    out: list[Holding] = []
    rolling = RollingScreen(history, scfg)
    with progress.task(f"lifecycle factors of {name} ({len(dates)} dates)", total=len(dates)) as task:
        for day in dates:
            res = rolling.screen(day)
            stats = {(p.ticker_a, p.ticker_b): p for p in res.pairs}
            g0 = pos[res.session]
            for c in res.candidates[:top]:
                p = stats[(c.ticker_a, c.ticker_b)]
                la, lb = logp[:, col[c.ticker_a]], logp[:, col[c.ticker_b]]
                last = min(g0 + hold, history.n_sessions - 1)
                vals, avail = [], []
                for t in range(g0 + 1, last + 1):
                    v, a = _row(pair_factors(la, lb, t, float(p.hedge_ratio), float(p.alpha), lcfg))
                    vals.append(v)
                    avail.append(a)
                out.append(
                    Holding(
                        name,
                        res.session,
                        f"{c.ticker_a}/{c.ticker_b}",
                        c.rank,
                        np.array(vals, dtype=np.float64).reshape(-1, len(FACTOR_NAMES)),
                        np.array(avail, dtype=bool).reshape(-1, len(FACTOR_NAMES)),
                    )
                )
            task.advance()
    return out


def breaches(values: np.ndarray, available: np.ndarray, config: LifecycleConfig) -> np.ndarray:
    """Which factors are breached under ``config`` ((sessions, 6) bool), by the rules of
    :func:`~agent.pairs.lifecycle.factors.pair_factors`: outside its band and available; a
    half-life of +inf (no mean reversion) always breaches."""
    v = np.asarray(values, dtype=np.float64)
    ok = np.asarray(available, dtype=bool) & ~np.isnan(v)
    c = config
    with np.errstate(invalid="ignore"):
        out = np.stack(
            [
                v[:, 0] < c.corr_min,
                (v[:, 1] < c.half_life_min) | (v[:, 1] > c.half_life_max),
                v[:, 2] > c.adf_pvalue_max,
                v[:, 3] > c.coint_pvalue_max,
                np.abs(v[:, 4]) > c.z_abs_max,
                v[:, 5] > c.vol_ratio_max,
            ],
            axis=1,
        )
    return out & ok


@dataclass(frozen=True)
class HoldingRates:
    """What one threshold setting did to the holdings (shares are fractions; NaN: no case).

    sessions: held sessions counted (each holding up to its replacement); share_warning /
    share_break: of those, the share at WARNING (not BREAK) / at BREAK; boundaries: validation
    boundaries reached; replace_rate: the share of them that replaced the pair;
    holdings_replaced: the share of holdings replaced within their hold; replaced_at: holdings
    first replaced at each boundary (held session number -> count)."""

    setting: str
    holdings: int
    sessions: int
    share_warning: float
    share_break: float
    boundaries: int
    replace_rate: float
    holdings_replaced: float
    replaced_at: dict[int, int]

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def evaluate(holdings: Sequence[Holding], config: LifecycleConfig, setting: str = "defaults") -> HoldingRates:
    """The rates of ``config`` over ``holdings`` (rules: the module docstring)."""
    period = config.validation_period
    sessions = warn = brk = bounds = replaced = 0
    at: dict[int, int] = {}
    for h in holdings:
        n = breaches(h.values, h.available, config).sum(axis=1)
        is_break = n >= config.break_factors
        is_warn = (n >= config.warning_factors) & ~is_break
        end = h.n_sessions
        for k in range(period, h.n_sessions + 1, period):
            bounds += 1
            if is_break[k - period : k].mean() >= config.break_share:
                replaced += 1
                at[k] = at.get(k, 0) + 1
                end = k
                break
        sessions += end
        warn += int(is_warn[:end].sum())
        brk += int(is_break[:end].sum())
    nan = math.nan
    return HoldingRates(
        setting,
        len(holdings),
        sessions,
        warn / sessions if sessions else nan,
        brk / sessions if sessions else nan,
        bounds,
        replaced / bounds if bounds else nan,
        replaced / len(holdings) if holdings else nan,
        dict(sorted(at.items())),
    )


def grid_configs(
    base: LifecycleConfig, grid: Mapping[str, Sequence[float]] | None = None
) -> list[tuple[str, LifecycleConfig]]:
    """``("defaults", base)`` and one config per grid value, each changing one threshold of
    ``base`` (a value that makes the config invalid, e.g. ``break_factors`` below
    ``warning_factors``, raises the config's own error naming it)."""
    out = [("defaults", base)]
    for name, values in (grid or DEFAULT_GRID).items():
        if name not in THRESHOLDS:
            raise ConfigError(f"lifecycle sweep threshold {name!r}; allowed: {', '.join(THRESHOLDS)}")
        kind = type(getattr(base, name))
        for v in values:
            value = kind(v)
            if value == getattr(base, name):
                continue
            out.append((f"{name}={value:g}", replace(base, **{name: value})))
    return out


def sweep_table(rows: Sequence[tuple[str, HoldingRates]]) -> str:
    """A markdown table of ``(pool, rates)`` rows."""
    lines = [
        "| pool | setting | holdings | held sessions | WARNING | BREAK | boundaries | replaced per "
        "boundary | holdings replaced | first replaced at (session: count) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for pool, r in rows:
        at = ", ".join(f"{k}: {v}" for k, v in r.replaced_at.items()) or "-"
        lines.append(
            f"| {pool} | {r.setting} | {r.holdings} | {r.sessions} | {_pct(r.share_warning)} | "
            f"{_pct(r.share_break)} | {r.boundaries} | {_pct(r.replace_rate)} | "
            f"{_pct(r.holdings_replaced)} | {at} |"
        )
    return "\n".join(lines)


def sweep_store(
    store_path: Any,
    pools: Mapping[str, Sequence[str]],
    years: Sequence[int],
    *,
    top: int = 5,
    hold: int = 75,
    screen: ScreenConfig | None = None,
    base: LifecycleConfig | None = None,
    grid: Mapping[str, Sequence[float]] | None = None,
    progress: Progress = NULL_PROGRESS,
) -> list[tuple[str, HoldingRates]]:
    """Every pool's holdings on the month-end sessions of ``years``, evaluated under ``base``
    and each grid point (``(pool, rates)`` rows, pools in order, ``defaults`` first)."""
    from agent.data.store import MarketStore
    from agent.pairs.screen.evaluate import month_end_sessions

    cfg = base or LifecycleConfig()
    configs = grid_configs(cfg, grid)
    rows: list[tuple[str, HoldingRates]] = []
    with MarketStore(store_path, create=False) as db:
        for name, tickers in pools.items():
            days = month_end_sessions(db.calendar(tickers=[t.strip().upper() for t in tickers]), years)
            if not days:
                raise InputError(f"pool {name}: no session in the years {min(years)}-{max(years)}")
            held = collect_holdings(
                db, name, tickers, days, top=top, hold=hold, screen=screen, lifecycle=cfg, progress=progress
            )
            rows += [(name, evaluate(held, c, label)) for label, c in configs]
    return rows


def _pct(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{100 * x:.1f}%"
