"""Spread statistics: z-scores, rolling correlation, volatility ratio.

Standard deviations are sample standard deviations (ddof = 1, as pandas' rolling ``std``).
Every window ends at and includes its own session t (causal). Rolling forms accept NaN and
return NaN for windows holding one; single-value forms reject NaN. Constant windows (zero
deviation) give NaN.
"""

from __future__ import annotations

import math

import numpy as np

from kernels._jit_rolling import MODE_CORR, MODE_ZSCORE, run_rolling
from kernels._validate import MIN_ROLLING_WINDOW, as_series, check_window
from kernels.errors import KernelInputError

__all__ = ["spread_zscore", "rolling_zscore", "rolling_corr", "spread_vol_ratio"]


def spread_zscore(spread: np.ndarray, window: int | None = None) -> float:
    """z of the last value against the last ``window`` values (all values if None).

    (s[-1] - mean) / std (ddof 1), both over the window including s[-1]. NaN if the window is constant.
    """
    s = as_series(spread, "spread", min_len=MIN_ROLLING_WINDOW)
    w = s.shape[0] if window is None else check_window(window, "window", MIN_ROLLING_WINDOW, s.shape[0])
    tail = s[-w:]
    if tail.min() == tail.max():
        return math.nan
    return float((tail[-1] - tail.mean()) / tail.std(ddof=1))


def rolling_zscore(spread: np.ndarray, window: int) -> np.ndarray:
    """z of each value against its trailing ``window`` values (including itself), ddof 1.

    NaN before index window - 1, for windows holding a NaN and for constant windows.
    rolling_zscore(s, w)[-1] equals spread_zscore(s, w).
    """
    s = as_series(spread, "spread", allow_nan=True)
    w = check_window(window, "window", MIN_ROLLING_WINDOW, s.shape[0])
    return run_rolling(s, s, w, MODE_ZSCORE)[0]


def rolling_corr(a: np.ndarray, b: np.ndarray, window: int) -> np.ndarray:
    """Pearson correlation of a and b over each trailing ``window`` (for returns: pass returns).

    The lifecycle monitor passes daily log returns of the two legs. NaN before index
    window - 1, for windows holding a NaN, and where either series is constant.
    """
    xa = as_series(a, "a", allow_nan=True)
    xb = as_series(b, "b", allow_nan=True)
    if xa.shape != xb.shape:
        raise KernelInputError(f"a and b must have the same length, got {xa.shape[0]} and {xb.shape[0]}")
    w = check_window(window, "window", MIN_ROLLING_WINDOW, xa.shape[0])
    return run_rolling(xa, xb, w, MODE_CORR)[0]


def spread_vol_ratio(spread: np.ndarray, recent: int, reference: int | None = None) -> float:
    """Std of the last ``recent`` spread changes over the std of the last ``reference`` changes.

    Changes are s_t - s_{t-1}; ``reference`` None means all n - 1 changes (the screening
    window when the caller passes that window's spread). Both ddof 1; the reference window
    includes the recent one. > 1 means the spread has become more volatile. NaN when the
    reference changes are all equal.
    """
    s = as_series(spread, "spread", min_len=MIN_ROLLING_WINDOW)
    changes = np.diff(s)
    n = changes.shape[0]
    r = check_window(recent, "recent", 2, n)
    ref = n if reference is None else check_window(reference, "reference", 2, n)
    base = changes[-ref:]
    if base.min() == base.max():
        return math.nan
    return float(changes[-r:].std(ddof=1) / base.std(ddof=1))
