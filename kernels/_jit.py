"""Private numba kernels for the unit-root and Engle-Granger tests.

Inputs are validated by the public wrappers in :mod:`kernels.coint`; these kernels trust their
arguments. Windows are given as (start, stop) bounds computed outside. Every kernel is
``cache=True``: numba stores the compiled code in ``__pycache__`` beside this file (or, where
that is not writable, in its user-wide cache), so a fresh clone compiles once and then reuses it.

How the ADF regression is computed. For a series ``x`` of length n with differences ``d``,
the regression of ``d[j]`` on the level ``x[j]`` and the lagged differences ``d[j-1..j-p]``
(plus a constant for the "c" case) is solved through its Gram matrix and a Cholesky
factorisation. The lagged-difference block of the Gram matrix is Toeplitz up to two boundary
terms per step, so it is filled in O(m p) for m rows and p lags instead of O(m p^2). With the
columns nested (level first, then lag 1, 2, ...), one forward substitution gives the residual
sum of squares of every lag order at once, which is how the information criterion is
scanned on the common sample. The refit at the chosen lag puts the level last, so the
t statistic is its forward-substituted coordinate divided by the residual standard error.
With a constant, each column is centred on its sample mean first (exactly equivalent, and it
keeps the Gram matrix well conditioned for price levels far from zero).
"""

from __future__ import annotations

import math

import numpy as np
from numba import config, njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from kernels._mackinnon import PVALUE_C2, mackinnon_pvalue

__all__ = [
    "chol_forward",
    "ic_best_lag",
    "refit_stat",
    "IC_NONE",
    "IC_AIC",
    "IC_BIC",
    "SQRTEPS",
    "adf_stat",
    "eg_batch_parallel",
    "eg_batch_serial",
    "PARALLEL_MIN_CELLS",
    "mackinnon_p",
]

IC_NONE = -1
IC_AIC = 0
IC_BIC = 1
SQRTEPS = math.sqrt(np.finfo(np.float64).eps)
# A Cholesky pivot below this fraction of its diagonal marks a column that is (numerically) a
# combination of the earlier ones; that lag order and longer ones are then not used.
_PIVOT_RTOL = 1e-12
# Below this many (window, pair) cells the serial kernel is used: waking the thread pool costs
# about a millisecond (more on a loaded machine), about ten 2,520-session tests.
PARALLEL_MIN_CELLS = 32


# The plain-Python formula in kernels._mackinnon, compiled once more for use inside kernels.
mackinnon_p = njit(cache=True)(mackinnon_pvalue)


# Reassociation lets LLVM vectorise the dot products (4-8x faster); it changes only the order of
# the additions, i.e. rounding at the 1e-16 relative level. No other fast-math flag is used, so
# NaN and inf keep their IEEE meaning.
_FASTMATH = {"reassoc", "contract"}


@njit(cache=True, fastmath=_FASTMATH)
def _dot2(a, b, c):  # type: ignore[no-untyped-def]
    """(a . c, b . c) for equal-length 1-D arrays, in one pass."""
    s = 0.0
    t = 0.0
    for i in range(c.shape[0]):
        ci = c[i]
        s += a[i] * ci
        t += b[i] * ci
    return s, t


@njit(cache=True, fastmath=_FASTMATH)
def _sum(a):  # type: ignore[no-untyped-def]
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
    return s


@njit(cache=True)
def _fill_gram(lev, d, start, stop, p, centered, gram, rhs):  # type: ignore[no-untyped-def]
    """Gram matrix of the regressors [lev[j], d[j-1], ..., d[j-p]] over rows j in [start, stop).

    Fills ``gram`` ((p+1, p+1), level first) and ``rhs`` (regressors' cross products with the
    response d[j]) and returns the response's sum of squares; all centred when ``centered``.
    """
    m = stop - start
    resp = d[start:stop]
    levc = lev[start:stop].copy()
    if centered:
        levc -= _sum(levc) / m
    auto = np.empty((p + 1, p + 1))
    cross = np.empty(p + 1)
    for b in range(p + 1):
        auto[0, b], cross[b] = _dot2(resp, levc, d[start - b : stop - b])
    for a in range(1, p + 1):
        for b in range(a, p + 1):
            auto[a, b] = auto[a - 1, b - 1] + d[start - a] * d[start - b] - d[stop - a] * d[stop - b]
    if centered:
        # Sums of the lagged responses: the same boundary recursion as the Gram block. The
        # level column is already centred, so its cross products need no correction.
        csum = np.empty(p + 1)
        csum[0] = _sum(resp)
        for b in range(1, p + 1):
            csum[b] = csum[b - 1] + d[start - b] - d[stop - b]
        for a in range(p + 1):
            for b in range(a, p + 1):
                auto[a, b] -= csum[a] * csum[b] / m
    ll, _ = _dot2(levc, levc, levc)
    gram[0, 0] = ll
    rhs[0] = cross[0]
    for b in range(1, p + 1):
        gram[0, b] = cross[b]
        gram[b, 0] = cross[b]
        rhs[b] = auto[0, b]
        for a in range(1, b + 1):
            gram[a, b] = auto[a, b]
            gram[b, a] = auto[a, b]
    return auto[0, 0]


@njit(cache=True)
def chol_forward(gram, rhs, order, w, low):  # type: ignore[no-untyped-def]
    """Cholesky of gram[order][:, order] with forward substitution of rhs[order] into ``w``.

    ``low`` is workspace of at least (k, k) for k = len(order) (every entry read is written
    first, so it needs no clearing). Returns how many leading columns factorised before a
    (near-)singular pivot.
    """
    k = order.shape[0]
    for i in range(k):
        oi = order[i]
        for j in range(i + 1):
            s = gram[oi, order[j]]
            for q in range(j):
                s -= low[i, q] * low[j, q]
            if i == j:
                if not s > _PIVOT_RTOL * gram[oi, oi]:
                    return i
                low[i, i] = math.sqrt(s)
            else:
                low[i, j] = s / low[j, j]
        s = rhs[oi]
        for q in range(i):
            s -= low[i, q] * w[q]
        w[i] = s / low[i, i]
    return k


@njit(cache=True)
def ic_best_lag(gram, rhs, yy, m, p, ic, ntrend, order, w, low):  # type: ignore[no-untyped-def]
    """Lag in 0..p minimising the information criterion on one common sample of ``m`` rows.

    gram / rhs: the (p+1, p+1) Gram matrix of [level, lag 1, ..., lag p] and the regressors'
    cross products with the response (level first, lags nested), yy: the response's sum of
    squares. One forward substitution gives every lag order's residual sum of squares.
    ``order`` is workspace of length >= p + 1. Returns -1 when no order can be fitted.
    """
    for i in range(p + 1):
        order[i] = i
    ok = chol_forward(gram, rhs, order[: p + 1], w, low)
    best = -1
    best_ic = math.inf
    ssr = yy
    for k in range(ok):
        ssr -= w[k] * w[k]
        if not ssr > 0.0:
            break
        npar = k + 1 + ntrend
        if ic == IC_AIC:
            val = m * math.log(ssr / m) + 2.0 * npar
        else:
            val = m * math.log(ssr / m) + npar * math.log(m)
        if val < best_ic:
            best_ic = val
            best = k
    return best


@njit(cache=True)
def refit_stat(gram, rhs, yy, m, lag, ntrend, order, w, low):  # type: ignore[no-untyped-def]
    """ADF t statistic of the level in the regression on [level, lag 1..lag] over ``m`` rows.

    gram / rhs / yy as :func:`ic_best_lag` for this sample (level at index 0, only entries up
    to ``lag`` read). The level is factorised last, so its t statistic is its
    forward-substituted coordinate over the residual standard error. NaN when singular.
    """
    for i in range(lag):
        order[i] = i + 1
    order[lag] = 0
    if chol_forward(gram, rhs, order[: lag + 1], w, low) < lag + 1:
        return math.nan
    ssr = yy
    for i in range(lag + 1):
        ssr -= w[i] * w[i]
    dof = m - (lag + 1 + ntrend)
    if not ssr > 0.0 or dof <= 0:
        return math.nan
    return w[lag] / math.sqrt(ssr / dof)


@njit(cache=True)
def adf_stat(x, maxlag, ic, centered):  # type: ignore[no-untyped-def]
    """ADF t statistic of ``x``; returns (stat, used lag, regression nobs).

    ``ic`` = IC_AIC / IC_BIC picks the lag in 0..maxlag on the common sample of the longest
    lag, then refits on all rows the chosen lag allows; IC_NONE uses ``maxlag`` itself.
    NaN statistic (and lag -1) when the regression is singular.
    """
    n = x.shape[0]
    d = np.empty(n - 1)
    for j in range(n - 1):
        d[j] = x[j + 1] - x[j]
    ntrend = 1 if centered else 0
    size = maxlag + 1
    order = np.empty(size, dtype=np.int64)
    w = np.empty(size)
    low = np.empty((size, size))
    gram = np.empty((size, size))
    rhs = np.empty(size)
    lag = maxlag
    if ic != IC_NONE and maxlag > 0:
        p = maxlag
        yy = _fill_gram(x, d, p, n - 1, p, centered, gram, rhs)
        best = ic_best_lag(gram, rhs, yy, n - 1 - p, p, ic, ntrend, order, w, low)
        if best < 0:
            return math.nan, -1, 0
        lag = best
    m = n - 1 - lag
    g = np.empty((lag + 1, lag + 1))
    yy = _fill_gram(x, d, lag, n - 1, lag, centered, g, rhs)
    stat = refit_stat(g, rhs, yy, m, lag, ntrend, order, w, low)
    if math.isnan(stat):
        return math.nan, -1, m
    return stat, lag, m


@njit(cache=True)
def _eg_window(y, x, maxlag, ic):  # type: ignore[no-untyped-def]
    """Engle-Granger test of y on x (with constant) over one window.

    Returns (stat, pvalue, lag, beta, alpha). NaN everywhere (lag -1) when the window holds a
    NaN or a constant leg; NaN stat / p-value (lag -1) but finite beta / alpha when the legs
    are (almost) perfectly collinear, the case statsmodels reports as -inf.
    """
    n = y.shape[0]
    nan = math.nan
    sy = _sum(y)
    sx = _sum(x)
    if math.isnan(sy) or math.isnan(sx):
        return nan, nan, -1, nan, nan
    if y.min() == y.max() or x.min() == x.max():
        return nan, nan, -1, nan, nan
    my = sy / n
    mx = sx / n
    yc = y - my
    xc = x - mx
    sxx, sxy = _dot2(xc, yc, xc)
    syy, _ = _dot2(yc, yc, yc)
    beta = sxy / sxx
    alpha = my - beta * mx
    resid = yc - beta * xc
    ssr, _ = _dot2(resid, resid, resid)
    if 1.0 - ssr / syy >= 1.0 - 100.0 * SQRTEPS:
        return nan, nan, -1, beta, alpha
    stat, lag, _ = adf_stat(resid, maxlag, ic, False)
    return stat, mackinnon_p(stat, PVALUE_C2), lag, beta, alpha


@njit(cache=True)
def _eg_cell(series, ii, jj, ends, window, maxlag, ic, stat, pval, lag, beta, alpha, q):  # type: ignore[no-untyped-def]
    n_pairs = ii.shape[0]
    e = q // n_pairs
    k = q - e * n_pairs
    stop = ends[e] + 1
    start = stop - window
    s, p, lg, b, a = _eg_window(series[ii[k], start:stop], series[jj[k], start:stop], maxlag, ic)
    stat[e, k] = s
    pval[e, k] = p
    lag[e, k] = lg
    beta[e, k] = b
    alpha[e, k] = a


@njit(cache=True)
def eg_batch_serial(series, ii, jj, ends, window, maxlag, ic, stat, pval, lag, beta, alpha):  # type: ignore[no-untyped-def]
    """Engle-Granger of row ii[k] on row jj[k] of ``series`` (N, T) for every window end.

    Window e covers columns [ends[e] - window + 1, ends[e]]. Outputs are (n_ends, n_pairs).
    """
    for q in range(ends.shape[0] * ii.shape[0]):
        _eg_cell(series, ii, jj, ends, window, maxlag, ic, stat, pval, lag, beta, alpha, q)


if config.DISABLE_JIT:

    def _fetch_add(counter, i, step):  # type: ignore[no-untyped-def]
        """Plain twin of the atomic below (without the JIT the prange runs serially)."""
        old = counter[i]
        counter[i] = old + step
        return old

else:

    @intrinsic
    def _fetch_add(typingctx, counter, i, step):  # type: ignore[no-untyped-def]
        """Atomically add ``step`` to ``counter[i]`` (int64 array) and return the old value."""
        sig = types.int64(counter, i, step)

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            aryty = signature.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])
            return builder.atomic_rmw("add", ptr, args[2], "monotonic")

        return sig, codegen


@njit(cache=True, parallel=True)
def eg_batch_parallel(series, ii, jj, ends, window, maxlag, ic, stat, pval, lag, beta, alpha, workers, grain):  # type: ignore[no-untyped-def]
    """:func:`eg_batch_serial` with the independent (end, pair) cells spread over threads.

    Scheduling is dynamic: each of ``workers`` prange iterations (one per thread) takes the next
    ``grain`` cells from a shared atomic counter until none are left. numba's own prange split is
    static (one equal share per thread), so a thread whose core is shared with another busy
    process held the whole call back: measured here with one core kept busy, two threads took as
    long as one or longer; taking cells as they come lets the thread on the free core do most of
    the work (``localfin bench kernels``, case ``busy_core``). Each cell writes only its own
    output slots, so the results do not depend on which thread computed them.
    """
    total = ends.shape[0] * ii.shape[0]
    counter = np.zeros(1, dtype=np.int64)
    for _ in prange(workers):
        while True:
            start = _fetch_add(counter, 0, grain)
            if start >= total:
                break
            for q in range(start, min(start + grain, total)):
                _eg_cell(series, ii, jj, ends, window, maxlag, ic, stat, pval, lag, beta, alpha, q)
