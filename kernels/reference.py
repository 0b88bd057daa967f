"""Plain numpy twins of the numba kernels, written for clarity rather than speed.

Tests assert every kernel equal to its twin; statsmodels is the second oracle for the tests
(it is never imported here). The twins build the lag matrices explicitly and solve each
regression by least squares (O(window) and more per window), with the same conventions and
the same degenerate-window rules as :mod:`kernels.coint`, :mod:`kernels.ols`, :mod:`kernels.stats`.
:mod:`kernels.sliding` has the contract of the rolling Engle-Granger form, so its twin is
:func:`rolling_eg_pairs_reference`; the sums it carries from window to window have their own
twins, recomputed from scratch on each window.
"""

from __future__ import annotations

import math

import numpy as np

from kernels._mackinnon import (
    CRIT_C1,
    CRIT_C2,
    CRIT_N1,
    PVALUE_C1,
    PVALUE_C2,
    PVALUE_N1,
    mackinnon_crit,
    mackinnon_pvalue,
)

__all__ = [
    "default_maxlag",
    "adf_reference",
    "eg_reference",
    "eg_crit_reference",
    "rolling_eg_pairs_reference",
    "rolling_hedge_reference",
    "rolling_zscore_reference",
    "rolling_corr_reference",
    "half_life_reference",
    "sliding_ticker_sums_reference",
    "sliding_pair_sums_reference",
]

_NAN3 = (math.nan, math.nan, math.nan)


def default_maxlag(nobs: int, ntrend: int) -> int:
    """Schwert's cap ceil(12 (nobs/100)^(1/4)), at most nobs//2 - ntrend - 1."""
    return min(nobs // 2 - ntrend - 1, int(np.ceil(12.0 * (nobs / 100.0) ** 0.25)))


def _adf_design(x: np.ndarray, lags: int, sample_lags: int, const: bool) -> tuple[np.ndarray, np.ndarray]:
    """Response d[j] and regressors [level x[j], d[j-1..j-lags], (1)] for j >= sample_lags."""
    d = np.diff(x)
    rows = np.arange(sample_lags, d.shape[0])
    cols = [x[rows]] + [d[rows - k] for k in range(1, lags + 1)]
    if const:
        cols.append(np.ones(rows.shape[0]))
    return d[rows], np.column_stack(cols)


def _ols(resp: np.ndarray, design: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    coef, *_ = np.linalg.lstsq(design, resp, rcond=None)
    resid = resp - design @ coef
    ssr = float(resid @ resid)
    cov = np.linalg.pinv(design.T @ design)
    return coef, ssr, cov


def _adf_t(x: np.ndarray, maxlag: int, autolag: str | None, const: bool) -> tuple[float, int, int]:
    lag = maxlag
    if autolag is not None and maxlag > 0:
        crits = []
        for k in range(maxlag + 1):
            resp, design = _adf_design(x, k, maxlag, const)
            _, ssr, _ = _ols(resp, design)
            m, npar = resp.shape[0], design.shape[1]
            penalty = 2.0 * npar if autolag.lower() == "aic" else npar * math.log(m)
            crits.append(m * math.log(ssr / m) + penalty)
        lag = int(np.argmin(crits))
    resp, design = _adf_design(x, lag, lag, const)
    coef, ssr, cov = _ols(resp, design)
    dof = resp.shape[0] - design.shape[1]
    return float(coef[0] / math.sqrt(ssr / dof * cov[0, 0])), lag, resp.shape[0]


def adf_reference(
    x: np.ndarray, *, regression: str = "c", maxlag: int | None = None, autolag: str | None = "aic"
) -> tuple[float, float, tuple[float, float, float], int, int]:
    """(stat, pvalue, crit_values, lag, nobs) as :func:`kernels.coint.adf`."""
    x = np.asarray(x, dtype=np.float64)
    const = regression == "c"
    cap = default_maxlag(x.shape[0], int(const)) if maxlag is None else maxlag
    if x.min() == x.max():
        return math.nan, math.nan, _NAN3, -1, 0
    stat, lag, nobs = _adf_t(x, cap, autolag, const)
    pcoef, ccoef = (PVALUE_C1, CRIT_C1) if const else (PVALUE_N1, CRIT_N1)
    return stat, mackinnon_pvalue(stat, pcoef), mackinnon_crit(nobs, ccoef), lag, nobs


def eg_reference(
    y: np.ndarray, x: np.ndarray, *, maxlag: int | None = None, autolag: str | None = "aic"
) -> tuple[float, float, int, float, float]:
    """(stat, pvalue, lag, beta, alpha) as one cell of the Engle-Granger kernels."""
    y = np.asarray(y, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    n = y.shape[0]
    if np.isnan(y).any() or np.isnan(x).any() or y.min() == y.max() or x.min() == x.max():
        return math.nan, math.nan, -1, math.nan, math.nan
    design = np.column_stack([x, np.ones(n)])
    (beta, alpha), *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ np.array([beta, alpha])
    r2 = 1.0 - float(resid @ resid) / float(((y - y.mean()) ** 2).sum())
    if r2 >= 1.0 - 100.0 * math.sqrt(np.finfo(np.float64).eps):
        return math.nan, math.nan, -1, float(beta), float(alpha)
    cap = default_maxlag(n, 0) if maxlag is None else maxlag
    stat, lag, _ = _adf_t(resid, cap, autolag, False)
    return stat, mackinnon_pvalue(stat, PVALUE_C2), lag, float(beta), float(alpha)


def eg_crit_reference(nobs: int) -> tuple[float, float, float]:
    """Engle-Granger critical values for a window of ``nobs`` (MacKinnon 2010 at nobs - 1)."""
    return mackinnon_crit(nobs - 1, CRIT_C2)


def rolling_eg_pairs_reference(
    prices2d: np.ndarray,
    window: int,
    ends: np.ndarray,
    *,
    maxlag: int | None = None,
    autolag: str | None = "aic",
) -> dict[str, np.ndarray]:
    """Every pair i < j (y = column i, x = column j) at every window end, one test at a time."""
    ii, jj = np.triu_indices(prices2d.shape[1], k=1)
    out = {k: np.empty((len(ends), len(ii))) for k in ("stat", "pvalue", "lag", "beta", "alpha")}
    for e, end in enumerate(ends):
        win = prices2d[end - window + 1 : end + 1]
        for k, (i, j) in enumerate(zip(ii, jj)):
            cell = eg_reference(win[:, i], win[:, j], maxlag=maxlag, autolag=autolag)
            for name, value in zip(("stat", "pvalue", "lag", "beta", "alpha"), cell):
                out[name][e, k] = value
    return out


def _windows(n: int, window: int) -> range:
    return range(window - 1, n)


def rolling_hedge_reference(y: np.ndarray, x: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
    """(alpha, beta) of y on x refitted from scratch on every trailing window."""
    alpha = np.full(y.shape[0], np.nan)
    beta = np.full(y.shape[0], np.nan)
    for t in _windows(y.shape[0], window):
        ys, xs = y[t - window + 1 : t + 1], x[t - window + 1 : t + 1]
        if np.isnan(ys).any() or np.isnan(xs).any() or xs.min() == xs.max():
            continue
        xc = xs - xs.mean()
        beta[t] = (xc @ (ys - ys.mean())) / (xc @ xc)
        alpha[t] = ys.mean() - beta[t] * xs.mean()
    return alpha, beta


def rolling_zscore_reference(spread: np.ndarray, window: int) -> np.ndarray:
    """(s_t - mean) / std(ddof 1) over every trailing window, recomputed from scratch."""
    z = np.full(spread.shape[0], np.nan)
    for t in _windows(spread.shape[0], window):
        ws = spread[t - window + 1 : t + 1]
        if np.isnan(ws).any() or ws.min() == ws.max():
            continue
        z[t] = (ws[-1] - ws.mean()) / ws.std(ddof=1)
    return z


def rolling_corr_reference(a: np.ndarray, b: np.ndarray, window: int) -> np.ndarray:
    """Pearson correlation over every trailing window, recomputed from scratch."""
    r = np.full(a.shape[0], np.nan)
    for t in _windows(a.shape[0], window):
        wa, wb = a[t - window + 1 : t + 1], b[t - window + 1 : t + 1]
        if np.isnan(wa).any() or np.isnan(wb).any() or wa.min() == wa.max() or wb.min() == wb.max():
            continue
        r[t] = np.corrcoef(wa, wb)[0, 1]
    return r


def half_life_reference(spread: np.ndarray) -> float:
    """-ln 2 / slope of the least-squares fit of the spread change on [1, lagged spread]."""
    lagged = spread[:-1]
    if lagged.min() == lagged.max():
        return math.nan
    design = np.column_stack([np.ones(lagged.shape[0]), lagged])
    (_, slope), *_ = np.linalg.lstsq(design, np.diff(spread), rcond=None)
    return math.inf if slope >= 0 else -math.log(2.0) / float(slope)


def sliding_ticker_sums_reference(z: np.ndarray, s: int, t: int, p: int) -> np.ndarray:
    """One series' sums that :mod:`kernels._jit_sliding` carries, recomputed on window [s, t].

    z: the (shifted) series; with d = diff(z) and rows J = [s + p, t):
    [R_0..R_p, L_0..L_p, M_0..M_p, S, SS, T, TT] with R_b = sum_J d[j] d[j-b],
    L_b = sum_J z[j] d[j-b], M_b = sum_J d[j-b], S, SS = sum_J z, z^2 and T, TT = sum z, z^2
    over [s, t].
    """
    d = np.diff(z)
    rows = np.arange(s + p, t)
    out = []
    out += [float(np.sum(d[rows] * d[rows - b])) for b in range(p + 1)]
    out += [float(np.sum(z[rows] * d[rows - b])) for b in range(p + 1)]
    out += [float(np.sum(d[rows - b])) for b in range(p + 1)]
    win = z[s : t + 1]
    out += [float(np.sum(z[rows])), float(np.sum(z[rows] ** 2)), float(np.sum(win)), float(np.sum(win**2))]
    return np.array(out)


def sliding_pair_sums_reference(zy: np.ndarray, zx: np.ndarray, s: int, t: int, p: int) -> np.ndarray:
    """One pair's sums that :mod:`kernels._jit_sliding` carries, recomputed on window [s, t].

    With dy, dx the differences and rows J = [s + p, t): [S_0..S_p, T_0, F, G] with
    S_b = sum_J (dy[j] dx[j-b] + dx[j] dy[j-b]), T_0 = sum_J (zy[j] dx[j] + zx[j] dy[j]),
    F = sum_J zy zx and G = sum zy zx over [s, t].
    """
    dy, dx = np.diff(zy), np.diff(zx)
    rows = np.arange(s + p, t)
    out = [float(np.sum(dy[rows] * dx[rows - b]) + np.sum(dx[rows] * dy[rows - b])) for b in range(p + 1)]
    out.append(float(np.sum(zy[rows] * dx[rows]) + np.sum(zx[rows] * dy[rows])))
    out += [float(np.sum(zy[rows] * zx[rows])), float(np.sum(zy[s : t + 1] * zx[s : t + 1]))]
    return np.array(out)
