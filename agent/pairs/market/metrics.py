"""Performance metrics of a backtest, shared by Moira, the baselines and
the report.

Inputs are the settled daily returns (fractions, one per finalized transition) and, where
known, the actions held and whether each matched the counterfactual best action. Conventions:
* cumulative return = prod(1 + r) - 1; equity starts at 1 before the first settlement;
* annualised Sharpe = sqrt(252) mean(r) / std(r, ddof=1), NaN when std is 0 (or rounding noise
  of constant returns, below 1e-12 of the mean) or fewer than 2 returns (``metrics.json`` keeps
  it undefined, null; a results table shows a run whose every return is zero, FLAT throughout,
  as 0.00 with :data:`ZERO_VARIANCE_MARK` and :data:`ZERO_VARIANCE_NOTE`: :func:`table_sharpe`);
  its standard error
  follows Lo (2002) under IID returns:
  SE(SR_period) = sqrt((1 + SR_period^2 / 2) / T), annualised by sqrt(252);
* maximum drawdown = min over t of equity_t / max_{s<=t} equity_s - 1 (<= 0; the starting
  equity of 1 counts as a peak);
* annualised volatility = sqrt(252) std(r, ddof=1);
* annualised return (CAGR) = (1 + cumulative return)^(252 / T) - 1 over T returns (NaN without
  one); on a short window it extrapolates a few days to a year, hence the report's warning below
  :data:`FEW_TRANSITIONS`;
* Calmar = annualised return / |maximum drawdown| (NaN without a drawdown: a curve that never
  fell below its peak);
* Sortino = sqrt(252) mean(r) / sqrt(mean(min(r, 0)^2)) (target 0; NaN without a losing day);
* win rate = share of positive returns among the transitions with a position (not FLAT; all
  transitions when actions are not given); NaN when there is none;
* counterfactual action accuracy = share of transitions whose action matched the best one,
  counted over the transitions with a held pair when the held pairs are given (a step without a
  pair is FLAT by construction, not a decision; NaN when no pair was ever held);
* lifecycle shares (:func:`lifecycle_shares`) = share of transitions per lifecycle state of the
  held pair at the decision (HEALTHY / WARNING / BREAK, ``none`` without a pair).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from agent.pairs.market.settlement import ACTIONS, FLAT
from localfin.errors import ConfigError

__all__ = [
    "TRADING_DAYS",
    "RETURN_NOTE",
    "ZERO_VARIANCE_MARK",
    "ZERO_VARIANCE_NOTE",
    "table_sharpe",
    "Metrics",
    "equity_curve",
    "drawdown_curve",
    "cumulative_return",
    "sharpe",
    "sharpe_se",
    "max_drawdown",
    "annual_volatility",
    "annual_return",
    "calmar",
    "FEW_TRANSITIONS",
    "sortino",
    "win_rate",
    "pair_switches",
    "LIFECYCLE_STATES",
    "lifecycle_shares",
    "compute_metrics",
]

TRADING_DAYS = 252
#: What every table with a return figure says about it (the papers' tables do not).
RETURN_NOTE = (
    "Returns are cumulative over the test window and compounded: prod(1 + r) - 1 over the settled "
    "daily returns r (the policy gate's training return is their plain sum, Moira D.1)."
)
#: The mark beside a Sharpe ratio a table shows for a run whose every return is zero.
ZERO_VARIANCE_MARK = "†"
ZERO_VARIANCE_NOTE = (
    f"{ZERO_VARIANCE_MARK} every daily return of the run is zero (it held no position: FLAT "
    "throughout), so their standard deviation is zero and the Sharpe ratio 0 / 0 is undefined "
    "(metrics.json keeps it null); the table shows 0.00, as a results table prints a run that never "
    "trades: no excess return for no risk."
)


def _r(returns: Sequence[float] | np.ndarray) -> np.ndarray:
    r = np.asarray(returns, dtype=np.float64)
    if r.ndim != 1:
        raise ConfigError(f"returns must be 1-D, got shape {r.shape}")
    if not np.all(np.isfinite(r)):
        raise ConfigError("returns must be finite (settlements with missing prices earn 0, not NaN)")
    return r


def equity_curve(returns: Sequence[float] | np.ndarray) -> np.ndarray:
    """Equity after each settlement, starting from 1 (length = number of returns)."""
    return np.cumprod(1.0 + _r(returns))


def drawdown_curve(returns: Sequence[float] | np.ndarray) -> np.ndarray:
    """Drawdown after each settlement (<= 0), against the running peak including the start."""
    eq = equity_curve(returns)
    peak = np.maximum.accumulate(np.concatenate([[1.0], eq]))[1:]
    return eq / peak - 1.0


def cumulative_return(returns: Sequence[float] | np.ndarray) -> float:
    r = _r(returns)
    return float(np.prod(1.0 + r) - 1.0) if len(r) else 0.0


def _period_sharpe(r: np.ndarray) -> float:
    if len(r) < 2:
        return math.nan
    sd, mean = float(np.std(r, ddof=1)), float(np.mean(r))
    # constant returns have a std of rounding noise (1e-16 of the mean), not a dispersion
    return mean / sd if sd > 1e-12 * abs(mean) else math.nan


def table_sharpe(metrics: Any) -> tuple[float, bool]:
    """The Sharpe ratio a results table shows for ``metrics`` (a :class:`Metrics` or a
    ``metrics.json`` mapping), and whether it is the zero-variance convention: 0.0 for a run of
    at least 2 transitions whose every return is zero (cumulative return and volatility exactly
    0, the Sharpe ratio undefined); otherwise the Sharpe ratio as computed (NaN: undefined)."""

    def get(name: str) -> Any:
        return metrics.get(name) if isinstance(metrics, Mapping) else getattr(metrics, name, None)

    value = get("sharpe")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value), False
    n, cum, vol = get("n_transitions"), get("cumulative_return"), get("annual_volatility")
    flat = isinstance(n, int) and n >= 2 and cum == 0.0 and vol == 0.0
    return (0.0, True) if flat else (math.nan, False)


def sharpe(returns: Sequence[float] | np.ndarray) -> float:
    return math.sqrt(TRADING_DAYS) * _period_sharpe(_r(returns))


def sharpe_se(returns: Sequence[float] | np.ndarray) -> float:
    """Standard error of the annualised Sharpe ratio (Lo 2002, IID returns)."""
    r = _r(returns)
    sr = _period_sharpe(r)
    if not math.isfinite(sr):
        return math.nan
    return math.sqrt(TRADING_DAYS) * math.sqrt((1.0 + 0.5 * sr * sr) / len(r))


def max_drawdown(returns: Sequence[float] | np.ndarray) -> float:
    r = _r(returns)
    return float(drawdown_curve(r).min()) if len(r) else 0.0


def annual_volatility(returns: Sequence[float] | np.ndarray) -> float:
    r = _r(returns)
    return math.sqrt(TRADING_DAYS) * float(np.std(r, ddof=1)) if len(r) >= 2 else math.nan


def annual_return(returns: Sequence[float] | np.ndarray) -> float:
    """Compound annual growth rate of the returns (252 sessions a year; NaN without a return)."""
    r = _r(returns)
    if not len(r):
        return math.nan
    return float((1.0 + cumulative_return(r)) ** (TRADING_DAYS / len(r)) - 1.0)


def calmar(returns: Sequence[float] | np.ndarray) -> float:
    """Annualised return over the size of the maximum drawdown (NaN without a drawdown)."""
    r = _r(returns)
    dd = max_drawdown(r)
    if not dd < 0:
        return math.nan
    value = annual_return(r) / abs(dd)
    return value if math.isfinite(value) else math.nan


#: Fewer settled transitions than this (a quarter of a year) make the annualised figures (Sharpe,
#: Sortino, annualised return, Calmar) say little: the standard error of an annualised Sharpe
#: ratio, about sqrt(252 / T), is then 2 or more, and a few days' return is compounded to a year.
FEW_TRANSITIONS = 63


def sortino(returns: Sequence[float] | np.ndarray) -> float:
    r = _r(returns)
    if not len(r):
        return math.nan
    down = math.sqrt(float(np.mean(np.minimum(r, 0.0) ** 2)))
    return math.sqrt(TRADING_DAYS) * float(np.mean(r)) / down if down > 0 else math.nan


def win_rate(returns: Sequence[float] | np.ndarray, actions: Sequence[str] | None = None) -> float:
    r = _r(returns)
    if actions is not None:
        if len(actions) != len(r):
            raise ConfigError(f"actions has {len(actions)} entries for {len(r)} returns")
        r = r[np.array([a != FLAT for a in actions], dtype=bool)] if len(r) else r
    return float(np.mean(r > 0)) if len(r) else math.nan


def pair_switches(pairs: Sequence[str | None]) -> int:
    """Times the held pair changed from one pair to another (holding none in between counts
    the change once, when the new pair is first held; the first pair is not a switch)."""
    held = [p for p in pairs if p]
    return sum(1 for a, b in zip(held, held[1:]) if a != b)


#: Lifecycle states of a step, in the order of :func:`lifecycle_shares` (``none``: no pair held).
LIFECYCLE_STATES = ("HEALTHY", "WARNING", "BREAK", "none")


def lifecycle_shares(states: Sequence[str | None]) -> dict[str, float]:
    """Share of transitions per lifecycle state of the held pair at the decision (an empty or
    None state counts as ``none``; NaN for every state when there is no transition)."""
    keys = [s if s else "none" for s in states]
    unknown = set(keys) - set(LIFECYCLE_STATES)
    if unknown:
        allowed = ", ".join(LIFECYCLE_STATES)
        raise ConfigError(f"unknown lifecycle states {sorted(unknown)}; allowed: {allowed} (or empty)")
    n = len(keys)
    counts = Counter(keys)
    return {k: counts.get(k, 0) / n if n else math.nan for k in LIFECYCLE_STATES}


@dataclass(frozen=True)
class Metrics:
    """Every metric of one run (fractions, not percent; counts as ints; NaN where undefined)."""

    n_transitions: int
    cumulative_return: float
    sharpe: float
    sharpe_se: float
    max_drawdown: float
    annual_volatility: float
    sortino: float
    win_rate: float
    action_accuracy: float
    action_counts: dict[str, int] = field(default_factory=dict)
    pair_switches: int = 0
    annual_return: float = math.nan
    calmar: float = math.nan

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def compute_metrics(
    returns: Sequence[float] | np.ndarray,
    *,
    actions: Sequence[str] | None = None,
    matched: Sequence[bool] | None = None,
    pairs: Sequence[str | None] | None = None,
) -> Metrics:
    """All metrics of a run from its settled returns (and actions, matches, held pairs; with the
    pairs, the counterfactual accuracy counts only the transitions with a pair held)."""
    r = _r(returns)
    if matched is not None and len(matched) != len(r):
        raise ConfigError(f"matched has {len(matched)} entries for {len(r)} returns")
    if pairs is not None and len(pairs) != len(r):
        raise ConfigError(f"pairs has {len(pairs)} entries for {len(r)} returns")
    accuracy = math.nan
    if matched is not None:
        counted = [m for k, m in enumerate(matched) if pairs is None or pairs[k]]
        accuracy = float(np.mean(counted)) if counted else math.nan
    counts = Counter(actions or ())
    unknown = set(counts) - set(ACTIONS)
    if unknown:
        raise ConfigError(f"unknown actions {sorted(unknown)}; allowed: {', '.join(ACTIONS)}")
    return Metrics(
        n_transitions=len(r),
        cumulative_return=cumulative_return(r),
        sharpe=sharpe(r),
        sharpe_se=sharpe_se(r),
        max_drawdown=max_drawdown(r),
        annual_volatility=annual_volatility(r),
        sortino=sortino(r),
        win_rate=win_rate(r, actions),
        action_accuracy=accuracy,
        action_counts={a: counts.get(a, 0) for a in ACTIONS},
        pair_switches=pair_switches(pairs) if pairs is not None else 0,
        annual_return=annual_return(r),
        calmar=calmar(r),
    )
