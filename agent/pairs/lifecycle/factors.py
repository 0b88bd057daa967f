"""The six statistical lifecycle factors of a held pair at one session.

Rolling correlation of daily log returns, half-life of the screen spread, ADF p-value of that
spread, Engle-Granger p-value with the hedge ratio re-estimated over a recent window, z of
today's spread, and the spread-volatility ratio (recent changes vs the screening horizon), each
from :mod:`kernels` and each compared with its band in :class:`LifecycleConfig`.

Causal by construction: :func:`pair_factors` cuts the arrays at session t before anything else.
Missing closes (halts, late listings) are dropped from a window pairwise; a factor with too few
complete sessions is *unavailable*: NaN, never breached (missing data is not evidence of a
break). A spread without mean reversion (slope >= 0) has half-life +inf, which is a breach.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

import kernels  # names resolve on first use: importing this module does not load numba
from agent.pairs.lifecycle.config import BREAK, HEALTHY, WARNING, LifecycleConfig
from localfin.errors import InputError

__all__ = ["FACTOR_NAMES", "Factor", "FactorReport", "pair_factors", "statistical_level"]

#: The six statistical factors, in report order.
FACTOR_NAMES = (
    "rolling_correlation",
    "half_life",
    "adf_pvalue",
    "coint_pvalue",
    "spread_z",
    "spread_vol_ratio",
)

_MIN_TEST = 30  # kernels.MIN_TEST_NOBS, without importing numba at module import


@dataclass(frozen=True)
class Factor:
    """One statistical factor at a session.

    value: the statistic (NaN when unavailable; +inf for a half-life without mean reversion);
    low / high: the allowed band (``None``: unbounded on that side; the z band is
    [-z_abs_max, z_abs_max]); breached: value outside the band (never when unavailable);
    n_obs: complete sessions the statistic used.
    """

    name: str
    value: float
    low: float | None
    high: float | None
    breached: bool
    available: bool
    n_obs: int

    def describe(self) -> str:
        """``adf_pvalue=0.71 (allowed <= 0.5)`` style text for prompts and reasons."""
        if self.low is not None and self.high is not None:
            limit = f"{self.low:g}..{self.high:g}"
        elif self.high is not None:
            limit = f"<= {self.high:g}"
        else:
            limit = f">= {self.low:g}"
        return f"{self.name}={self.value:.3g} (allowed {limit})"


@dataclass(frozen=True)
class FactorReport:
    """The six factors of the pair at session index ``t``."""

    t: int
    factors: tuple[Factor, ...]

    @property
    def n_breached(self) -> int:
        return sum(f.breached for f in self.factors)

    @property
    def breached(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.factors if f.breached)

    def __getitem__(self, name: str) -> Factor:
        for f in self.factors:
            if f.name == name:
                return f
        raise KeyError(f"no factor {name!r}; factors: {', '.join(FACTOR_NAMES)}")

    def to_dict(self) -> dict[str, Any]:
        return {"t": self.t, "factors": [asdict(f) for f in self.factors]}


def _factor(name: str, value: float, low: float | None, high: float | None, n_obs: int, ok: bool) -> Factor:
    if not ok or math.isnan(value):
        return Factor(name, math.nan if not ok else value, low, high, False, False, n_obs)
    out = (low is not None and value < low) or (high is not None and value > high)
    return Factor(name, float(value), low, high, bool(out), True, n_obs)


def _tail(a: np.ndarray, b: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The last ``n`` sessions of both legs, rows with a missing leg dropped."""
    ta, tb = a[-n:], b[-n:]
    keep = ~(np.isnan(ta) | np.isnan(tb))
    return ta[keep], tb[keep]


def pair_factors(
    log_a: Sequence[float] | np.ndarray,
    log_b: Sequence[float] | np.ndarray,
    t: int,
    beta: float,
    alpha: float,
    config: LifecycleConfig = LifecycleConfig(),
) -> FactorReport:
    """The six lifecycle factors of the pair (A, B) at session index ``t``.

    log_a, log_b: log closes of the legs on one session calendar (NaN where a leg has no
    close); only indices 0..t are read, so the report cannot depend on later data. beta,
    alpha: the screen's hedge ratio and intercept (spread = log A - alpha - beta log B).
    Windows end at t; sessions with a missing leg are dropped from a window, and a factor with
    fewer than ``min_obs_fraction`` of its window (or the kernel's minimum) is unavailable.
    """
    a = np.asarray(log_a, dtype=np.float64)
    b = np.asarray(log_b, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise InputError(f"log_a and log_b must be 1-D of one length, got shapes {a.shape} and {b.shape}")
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or not 0 <= t < a.shape[0]:
        raise InputError(f"t={t!r}; allowed: a session index in [0, {a.shape[0] - 1}]")
    if not (math.isfinite(beta) and math.isfinite(alpha)):
        raise InputError(f"beta={beta}, alpha={alpha}; both must be finite")
    a, b = a[: t + 1], b[: t + 1]
    cfg = config

    def enough(n_have: int, window: int, minimum: int) -> bool:
        return n_have >= max(minimum, math.ceil(cfg.min_obs_fraction * window))

    out: list[Factor] = []
    # 1. correlation of daily log returns (returns need both closes of consecutive sessions)
    ra, rb = np.diff(a[-(cfg.corr_window + 1) :]), np.diff(b[-(cfg.corr_window + 1) :])
    keep = ~(np.isnan(ra) | np.isnan(rb))
    ra, rb = ra[keep], rb[keep]
    ok = enough(ra.size, cfg.corr_window, 3) and ra.min() != ra.max() and rb.min() != rb.max()
    corr = float(kernels.rolling_corr(ra, rb, ra.size)[-1]) if ok else math.nan
    out.append(_factor("rolling_correlation", corr, cfg.corr_min, None, int(ra.size), ok))
    # 2. half-life of the screen spread
    xa, xb = _tail(a, b, cfg.half_life_window)
    s = xa - alpha - beta * xb
    ok = enough(s.size, cfg.half_life_window, 3)
    hl = kernels.half_life(s) if ok else math.nan
    if ok and math.isinf(hl):
        out.append(Factor("half_life", hl, cfg.half_life_min, cfg.half_life_max, True, True, int(s.size)))
    else:
        out.append(_factor("half_life", hl, cfg.half_life_min, cfg.half_life_max, int(s.size), ok))
    # 3. ADF p-value of the screen spread (constant, lag by AIC)
    xa, xb = _tail(a, b, cfg.adf_window)
    s = xa - alpha - beta * xb
    ok = enough(s.size, cfg.adf_window, _MIN_TEST)
    p_adf = kernels.adf(s, regression="c").pvalue if ok else math.nan
    out.append(_factor("adf_pvalue", p_adf, None, cfg.adf_pvalue_max, int(s.size), ok))
    # 4. Engle-Granger p-value, hedge ratio re-estimated on the recent window
    xa, xb = _tail(a, b, cfg.coint_window)
    ok = enough(xa.size, cfg.coint_window, _MIN_TEST)
    p_eg = kernels.engle_granger(xa, xb).pvalue if ok else math.nan
    out.append(_factor("coint_pvalue", p_eg, None, cfg.coint_pvalue_max, int(xa.size), ok))
    # 5. z of today's spread (today's closes of both legs are required)
    xa, xb = _tail(a, b, cfg.z_window)
    s = xa - alpha - beta * xb
    ok = enough(s.size, cfg.z_window, 3) and not (np.isnan(a[-1]) or np.isnan(b[-1]))
    z = kernels.spread_zscore(s) if ok else math.nan
    out.append(_factor("spread_z", z, -cfg.z_abs_max, cfg.z_abs_max, int(s.size), ok))
    # 6. volatility of recent spread changes over the reference (screening) horizon
    xa, xb = _tail(a, b, cfg.vol_reference_window + 1)
    s = xa - alpha - beta * xb
    ok = s.size - 1 > cfg.vol_recent_window and enough(
        s.size - 1, min(cfg.vol_reference_window, max(a.size - 1, 1)), cfg.vol_recent_window + 1
    )
    vr = kernels.spread_vol_ratio(s, cfg.vol_recent_window) if ok else math.nan
    out.append(_factor("spread_vol_ratio", vr, None, cfg.vol_ratio_max, max(int(s.size) - 1, 0), ok))
    return FactorReport(int(t), tuple(out))


def statistical_level(n_breached: int, config: LifecycleConfig = LifecycleConfig()) -> str:
    """Level of one session from its count of breached factors."""
    if n_breached >= config.break_factors:
        return BREAK
    return WARNING if n_breached >= config.warning_factors else HEALTHY
