"""Hedge ratios and half-life: OLS of one leg on the other, AR(1) of spread changes.

Series are 1-D float64 arrays indexed by session (log prices for hedge ratios). Rolling forms
accept NaN and return NaN for every window that holds one; single-window forms reject NaN.
"""

from __future__ import annotations

import math

import numpy as np

from kernels._jit_rolling import MODE_HEDGE, run_rolling
from kernels._validate import MIN_ROLLING_WINDOW, as_series, check_window
from kernels.errors import KernelInputError

__all__ = ["ols_hedge", "rolling_hedge_ratio", "half_life"]


def _same_length(y: np.ndarray, x: np.ndarray) -> None:
    if y.shape != x.shape:
        raise KernelInputError(f"y and x must have the same length, got {y.shape[0]} and {x.shape[0]}")


def ols_hedge(y: np.ndarray, x: np.ndarray) -> tuple[float, float]:
    """(alpha, beta) of the OLS fit y = alpha + beta x + e over all values (no NaN, >= 3 values).

    A constant x gives (NaN, NaN): the slope is undefined.
    """
    ys = as_series(y, "y", min_len=MIN_ROLLING_WINDOW)
    xs = as_series(x, "x", min_len=MIN_ROLLING_WINDOW)
    _same_length(ys, xs)
    if xs.min() == xs.max():
        return math.nan, math.nan
    mx = xs.mean()
    my = ys.mean()
    xc = xs - mx
    beta = float(np.dot(xc, ys - my) / np.dot(xc, xc))
    return float(my - beta * mx), beta


def rolling_hedge_ratio(y: np.ndarray, x: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
    """Rolling OLS y = alpha + beta x over the trailing ``window`` sessions (including t).

    Returns (alpha, beta), each of y's length; NaN before index window - 1, for windows holding
    a NaN, and where x is constant over the window. O(1) amortised work per session
    (see :mod:`kernels._jit_rolling`); equal to the exact per-window fit to ~1e-12 relative.
    """
    ys = as_series(y, "y", allow_nan=True)
    xs = as_series(x, "x", allow_nan=True)
    _same_length(ys, xs)
    w = check_window(window, "window", MIN_ROLLING_WINDOW, ys.shape[0])
    return run_rolling(xs, ys, w, MODE_HEDGE)


def half_life(spread: np.ndarray) -> float:
    """Mean-reversion half-life of ``spread`` in sessions.

    OLS of the change d_t = s_t - s_{t-1} on [1, s_{t-1}] over all n - 1 changes gives a slope
    b; the half-life is -ln 2 / b. Rules: b >= 0 (no reversion, or explosive) gives +inf; a
    constant spread gives NaN; b < -1 (overshooting) still gives -ln 2 / b, below 0.7 sessions.
    spread: 1-D, no NaN, at least 3 values.
    """
    s = as_series(spread, "spread", min_len=MIN_ROLLING_WINDOW)
    lagged = s[:-1]
    if lagged.min() == lagged.max():
        return math.nan
    change = np.diff(s)
    lc = lagged - lagged.mean()
    slope = float(np.dot(lc, change - change.mean()) / np.dot(lc, lc))
    if not slope < 0.0:
        return math.inf
    return -math.log(2.0) / slope
