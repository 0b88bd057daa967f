"""Engle-Granger cointegration and ADF unit-root tests that match statsmodels.

Public, validating wrappers around the numba kernels in :mod:`kernels._jit`.

Conventions (the same as ``statsmodels.tsa.stattools.coint(y, x, trend='c')`` and
``adfuller``): the cointegrating regression is OLS of y on x with a constant; the residuals get
an ADF regression without constant; with ``autolag`` the lag 0..maxlag minimising AIC (or BIC)
is chosen on the common sample of the longest lag and the regression is refitted on every row
the chosen lag allows; the default cap is ceil(12 (n/100)^(1/4)). P-values are MacKinnon (1994)
for 2 series (Engle-Granger) or 1 series (ADF); critical values are MacKinnon (2010) at sample
size n - 1 (Engle-Granger, as statsmodels and Stata's egranger) or the ADF regression's nobs.

Degenerate windows (decisions, all tested):
- a constant leg, or a NaN inside a rolling / pool window: every output NaN, lag -1;
- (almost) perfectly collinear legs (R^2 >= 1 - 100 sqrt(eps)): statsmodels reports stat -inf
  and p-value 0, i.e. "certainly cointegrated". A spread that is numerically zero cannot be
  traded and its z-score is undefined, so here stat and p-value are NaN (lag -1) and the pair
  drops out of any ``pvalue < threshold`` screen; beta and alpha are still reported.
- NaN in the input of a single-window call is an error (:class:`KernelInputError`).
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from kernels import _jit
from kernels._mackinnon import (
    CRIT_C1,
    CRIT_C2,
    CRIT_N1,
    PVALUE_C1,
    PVALUE_N1,
    mackinnon_crit,
    mackinnon_pvalue,
)
from kernels._validate import (
    MIN_TEST_NOBS,
    as_panel,
    as_series,
    check_window,
    parse_autolag,
    resolve_ends,
    resolve_maxlag,
)
from kernels.errors import KernelInputError

__all__ = [
    "EGResult",
    "ADFResult",
    "PairsEG",
    "RollingEG",
    "RollingPairsEG",
    "engle_granger",
    "engle_granger_pairs",
    "rolling_engle_granger",
    "rolling_engle_granger_pairs",
    "eg_crit_values",
    "adf",
    "MIN_TEST_NOBS",
]


class EGResult(NamedTuple):
    """One Engle-Granger test of y on x.

    stat: ADF t statistic of the residuals; pvalue: MacKinnon p-value (fraction);
    crit_values: 1 %, 5 %, 10 % critical values; lag: lagged differences used (-1 if none
    were fitted); beta, alpha: OLS y = alpha + beta x + e; nobs: observations (sessions) in the window.
    """

    stat: float
    pvalue: float
    crit_values: tuple[float, float, float]
    lag: int
    beta: float
    alpha: float
    nobs: int


class ADFResult(NamedTuple):
    """One ADF test: stat, MacKinnon p-value, 1/5/10 % critical values, lag used, regression nobs."""

    stat: float
    pvalue: float
    crit_values: tuple[float, float, float]
    lag: int
    nobs: int


class PairsEG(NamedTuple):
    """Engle-Granger for every pair i < j of a pool over one window; equal-length 1-D arrays.

    y is column i, x is column j. Critical values depend only on the window length:
    ``eg_crit_values(window)``.
    """

    i: np.ndarray
    j: np.ndarray
    stat: np.ndarray
    pvalue: np.ndarray
    lag: np.ndarray
    beta: np.ndarray
    alpha: np.ndarray


class RollingEG(NamedTuple):
    """Engle-Granger of one pair over rolling windows; arrays of length n_ends.

    end: inclusive index of each window's last session.
    """

    end: np.ndarray
    stat: np.ndarray
    pvalue: np.ndarray
    lag: np.ndarray
    beta: np.ndarray
    alpha: np.ndarray


class RollingPairsEG(NamedTuple):
    """Engle-Granger of every pair over rolling windows.

    end: (n_ends,) inclusive window ends; i, j: (n_pairs,) columns (y = i, x = j);
    stat, pvalue, lag, beta, alpha: (n_ends, n_pairs).
    """

    end: np.ndarray
    i: np.ndarray
    j: np.ndarray
    stat: np.ndarray
    pvalue: np.ndarray
    lag: np.ndarray
    beta: np.ndarray
    alpha: np.ndarray


def eg_crit_values(nobs: int) -> tuple[float, float, float]:
    """Engle-Granger (2 series, constant) 1/5/10 % critical values for a window of ``nobs``."""
    return mackinnon_crit(nobs - 1, CRIT_C2)


def _run_batch(
    series: np.ndarray,
    ii: np.ndarray,
    jj: np.ndarray,
    ends: np.ndarray,
    window: int,
    maxlag: int | None,
    autolag: str | None,
) -> tuple[np.ndarray, ...]:
    ic = parse_autolag(autolag)
    lag_cap = resolve_maxlag(maxlag, window, 0)
    shape = (ends.shape[0], ii.shape[0])
    stat = np.empty(shape)
    pval = np.empty(shape)
    lag = np.empty(shape, dtype=np.int64)
    beta = np.empty(shape)
    alpha = np.empty(shape)
    if stat.size < _jit.PARALLEL_MIN_CELLS or numba.get_num_threads() == 1:
        _jit.eg_batch_serial(series, ii, jj, ends, window, lag_cap, ic, stat, pval, lag, beta, alpha)
    else:
        workers = numba.get_num_threads()
        # cells are ~20-100 us each: a grain of a few cells keeps the shared counter cold while
        # the last thread to finish waits at most a few cells for the others
        grain = int(max(1, min(16, stat.size // (workers * 64))))
        _jit.eg_batch_parallel(
            series, ii, jj, ends, window, lag_cap, ic, stat, pval, lag, beta, alpha, workers, grain
        )
    return stat, pval, lag, beta, alpha


def _pair_index(n: int) -> tuple[np.ndarray, np.ndarray]:
    ii, jj = np.triu_indices(n, k=1)
    return ii.astype(np.int64), jj.astype(np.int64)


def engle_granger(
    y: np.ndarray, x: np.ndarray, *, maxlag: int | None = None, autolag: str | None = "aic"
) -> EGResult:
    """Engle-Granger test of y on x with constant (statsmodels ``coint(y, x, trend='c')``).

    y, x: equal-length 1-D series (log prices), at least MIN_TEST_NOBS (30) values, no NaN.
    maxlag: lag cap (default ceil(12 (n/100)^(1/4))); autolag: 'aic' / 'bic' to choose the lag
    in 0..maxlag, None to use exactly ``maxlag``.
    """
    ys = as_series(y, "y", min_len=MIN_TEST_NOBS)
    xs = as_series(x, "x", min_len=MIN_TEST_NOBS)
    if ys.shape != xs.shape:
        raise KernelInputError(f"y and x must have the same length, got {ys.shape[0]} and {xs.shape[0]}")
    n = ys.shape[0]
    series = np.stack([ys, xs])
    ends = np.array([n - 1], dtype=np.int64)
    one = np.array([0], dtype=np.int64)
    stat, pval, lag, beta, alpha = _run_batch(series, one, one + 1, ends, n, maxlag, autolag)
    return EGResult(
        float(stat[0, 0]),
        float(pval[0, 0]),
        eg_crit_values(n),
        int(lag[0, 0]),
        float(beta[0, 0]),
        float(alpha[0, 0]),
        n,
    )


def engle_granger_pairs(
    prices2d: np.ndarray, *, maxlag: int | None = None, autolag: str | None = "aic"
) -> PairsEG:
    """Engle-Granger for every pair i < j of the columns of ``prices2d`` (T sessions, N series).

    One window: all T rows. A pair whose columns hold a NaN gets NaN results (lag -1).
    """
    panel = as_panel(prices2d, "prices2d")
    n_obs, n_series = panel.shape
    check_window(n_obs, "prices2d rows", MIN_TEST_NOBS, n_obs)
    ii, jj = _pair_index(n_series)
    series = np.ascontiguousarray(panel.T)
    ends = np.array([n_obs - 1], dtype=np.int64)
    stat, pval, lag, beta, alpha = _run_batch(series, ii, jj, ends, n_obs, maxlag, autolag)
    return PairsEG(ii, jj, stat[0], pval[0], lag[0], beta[0], alpha[0])


def rolling_engle_granger(
    y: np.ndarray,
    x: np.ndarray,
    window: int,
    *,
    ends: np.ndarray | None = None,
    maxlag: int | None = None,
    autolag: str | None = "aic",
) -> RollingEG:
    """Engle-Granger of y on x over the windows of ``window`` sessions ending at ``ends``.

    ends: inclusive end indices (default every index >= window - 1); each window sees only
    its own sessions (causal). NaN inside a window gives NaN results for that window.
    """
    ys = as_series(y, "y", allow_nan=True)
    xs = as_series(x, "x", allow_nan=True)
    if ys.shape != xs.shape:
        raise KernelInputError(f"y and x must have the same length, got {ys.shape[0]} and {xs.shape[0]}")
    w = check_window(window, "window", MIN_TEST_NOBS, ys.shape[0])
    end = resolve_ends(ends, w, ys.shape[0])
    one = np.array([0], dtype=np.int64)
    stat, pval, lag, beta, alpha = _run_batch(np.stack([ys, xs]), one, one + 1, end, w, maxlag, autolag)
    return RollingEG(end, stat[:, 0], pval[:, 0], lag[:, 0], beta[:, 0], alpha[:, 0])


def rolling_engle_granger_pairs(
    prices2d: np.ndarray,
    window: int,
    *,
    ends: np.ndarray | None = None,
    maxlag: int | None = None,
    autolag: str | None = "aic",
) -> RollingPairsEG:
    """Engle-Granger of every pair i < j over rolling windows: the daily re-screen.

    prices2d: (T sessions, N series) log prices, NaN allowed (windows holding one give NaN).
    window: sessions per window (>= 30). ends: inclusive window ends (default all >= window - 1).
    The (window, pair) tests run in parallel over the available cores.
    """
    panel = as_panel(prices2d, "prices2d")
    n_obs, n_series = panel.shape
    w = check_window(window, "window", MIN_TEST_NOBS, n_obs)
    end = resolve_ends(ends, w, n_obs)
    ii, jj = _pair_index(n_series)
    series = np.ascontiguousarray(panel.T)
    stat, pval, lag, beta, alpha = _run_batch(series, ii, jj, end, w, maxlag, autolag)
    return RollingPairsEG(end, ii, jj, stat, pval, lag, beta, alpha)


def adf(
    x: np.ndarray,
    *,
    regression: str = "c",
    maxlag: int | None = None,
    autolag: str | None = "aic",
) -> ADFResult:
    """Augmented Dickey-Fuller test (statsmodels ``adfuller``), regression 'c' or 'n'.

    x: 1-D series, at least MIN_TEST_NOBS (30) values, no NaN. A constant series gives NaN
    (statsmodels raises). nobs is the ADF regression's number of rows (n - 1 - lag).
    """
    xs = as_series(x, "x", min_len=MIN_TEST_NOBS)
    if regression not in ("c", "n"):
        raise KernelInputError(f"regression must be 'c' (constant) or 'n' (none), got {regression!r}")
    ntrend = 1 if regression == "c" else 0
    ic = parse_autolag(autolag)
    lag_cap = resolve_maxlag(maxlag, xs.shape[0], ntrend)
    if xs.min() == xs.max():
        return ADFResult(float("nan"), float("nan"), (float("nan"),) * 3, -1, 0)
    stat, lag, nobs = _jit.adf_stat(xs, lag_cap, ic, ntrend == 1)
    pcoef, ccoef = (PVALUE_C1, CRIT_C1) if ntrend else (PVALUE_N1, CRIT_N1)
    crit = mackinnon_crit(nobs, ccoef) if nobs > 0 else (float("nan"),) * 3
    return ADFResult(float(stat), mackinnon_pvalue(float(stat), pcoef), crit, int(lag), int(nobs))
