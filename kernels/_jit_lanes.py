"""Private numba kernels: the Engle-Granger regressions of the sliding screen, eight pairs at a
time (see :mod:`kernels._jit_sliding` for the sums they start from).

The lag choice needs every nested model's residual sum of squares and the statistic needs the
level's t in the chosen one. Both come from one Cholesky factorisation in the order
[lag 1, ..., lag p] with the level and the response as two trailing rows: with l_q and r_q the
level's and the response's entries in lag column q of the factor, the sums partialled on lags
1..k are E_k = E - sum_{q<k} l_q^2, c_k = Q_0 - sum_{q<k} l_q r_q, y_k = yy - sum_{q<k} r_q^2,
so model k (level + k lags) has ssr_k = y_k - c_k^2 / E_k and the level's t statistic is
c_k / sqrt(E_k ssr_k / dof_k): the refit of :func:`kernels._jit.refit_stat`, which factorises
in this order. The scan stops at a lag column whose pivot falls to _PIVOT_RTOL of its diagonal
(a refit there is NaN), at a level column that does, and at ssr_k <= 0, as
:func:`kernels._jit.ic_best_lag` does. Eight pairs (lanes) are factorised in lockstep with the
vector operations of :mod:`kernels._simd` (left-looking, so each update is a dot product held
in registers); a lane whose pivot fails carries on with pivot 1 and its results are not used.
The comparison m log(ssr_k / m) + pen_k < m log(ssr_b / m) + pen_b is made as
ssr_k < ssr_b exp((pen_b - pen_k) / m), with the exponentials computed once per window length.

The refit at a chosen lag L < p is not done in the lanes of the scan (eight pairs whose lags
differ would all pay for the longest): each one's sums over its rows [s + L, t) are stored as a
job (:func:`refit_job`) and the jobs of a block are factorised eight at a time among jobs of the
same lag (:func:`refit_jobs`), so a job of lag L costs O(L^3) whatever its neighbours chose.
A refit at lag 0 has no lag column to factorise and is solved where it is chosen
(:func:`refit_lag0`, the job's operations in the job's order).
Each lane's arithmetic is its own, so a job's result does not depend on which jobs share its
factorisation.

Operation counts. Every kernel adds the floating-point operations it performed to ``ops``
(an int64 array indexed by the ``OP_*`` constants), from its loops' actual trip counts times
the operations of the loop body as written: +, -, *, / and sqrt count one each, a
multiply-add two, exp / log / erfc one each, comparisons none. Vector operations count all
eight lanes, used or not (what the machine executed).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from kernels._jit import IC_NONE, SQRTEPS
from kernels._simd import LANES, vblock, vcopy, vdotsub, vfill, vmul, vschur, vsqrt_inv

__all__ = [
    "NL",
    "OP_NAMES",
    "job_width",
    "workspace",
    "lane_sums",
    "scan",
    "refit_job",
    "refit_lag0",
    "refit_jobs",
]

NL = LANES
_PIVOT_RTOL = 1e-12

#: what each entry of an ``ops`` array counts (see the module docstring)
OP_NAMES = (
    "ticker_sums",  # per-ticker sums: slides and exact recomputes
    "pair_slide",  # pair sums moved by the rows that leave and join the window
    "pair_exact",  # pair sums recomputed in the kernel (gaps, large moves)
    "regression_sums",  # OLS of the legs, the ADF regression's sums from the carried ones
    "gram_fill",  # the lag block from its first row (boundary recursion)
    "factor",  # Cholesky of the lag block and the level and response rows
    "schur",  # every lag order's residual sum of squares, the criterion, the t of model p
    "refit_sums",  # rows [s + L, s + p) added to the sums of a refit at lag L
    "refit_solve",  # the refit's Gram matrix, factorisation and t statistic
    "pvalue",  # MacKinnon's p-value
    "exact_blas",  # the exact start's matrix products (counted by the caller)
)
OP_TICKER, OP_SLIDE, OP_EXACT, OP_SUMS, OP_FILL, OP_FACTOR, OP_SCHUR, OP_REFIT_SUMS, OP_REFIT, OP_PVALUE = (
    range(10)
)


@njit(cache=True)
def job_width(p):  # type: ignore[no-untyped-def]
    """Length of one refit job's record: r[0..p], q[0..p], dlo[0..p), dhi[0..p), and the level
    sum of squares, the rows' count and the lag."""
    return 4 * p + 5


@njit(cache=True)
def workspace(p):  # type: ignore[no-untyped-def]
    d = p + 2
    return (
        np.zeros(d * d * NL),  # lf: augmented Gram matrices, then their factors (lower, by rows)
        np.zeros(d * NL),  # dg: original diagonals of the lag columns
        np.zeros(d * NL),  # inv: 1 / the factor's diagonal
        np.zeros((max(p, 1), NL)),  # dlo[c] = d[s + c]
        np.zeros((max(p, 1), NL)),  # dhi[c] = d[t - p + c]
        np.zeros((p + 1, NL)),  # r[b] = sum d[j] d[j-b]
        np.zeros((p + 1, NL)),  # q[b] = sum e[j] d[j-b]
        np.zeros((4, NL)),  # level sum of squares, beta, a, t of model p
        np.zeros((3, NL), dtype=np.int64),  # active, lag columns factorised, chosen lag
        np.zeros(p + 2),  # thresholds of the information criterion by lag difference, and m
        np.zeros(NL, dtype=np.int8),  # sums valid
        np.zeros((3, (p + 1) * NL)),  # E_k, ssr_k, c_k of every lane for k = 0..p
    )


@njit(cache=True)
def lane_sums(zy, zx, dly, dlx, s, t, p, ty, tx, ps, ln, dlo, dhi, r, q, sc):  # type: ignore[no-untyped-def]
    """OLS of the lane's pair, then the ADF regression's sums over J into column ``ln``.

    Returns 0 when the legs are collinear (beta and a still set), else 1.
    """
    n = t - s + 1
    my = ty[3 * p + 5] / n
    mx = tx[3 * p + 5] / n
    sxx = tx[3 * p + 6] - tx[3 * p + 5] * mx
    syy = ty[3 * p + 6] - ty[3 * p + 5] * my
    sxy = ps[p + 3] - tx[3 * p + 5] * my
    beta = sxy / sxx
    a = my - beta * mx
    sc[1, ln] = beta
    sc[2, ln] = a
    ssr = syy - beta * sxy
    if 1.0 - ssr / syy >= 1.0 - 100.0 * SQRTEPS:
        return 0
    for c in range(p):
        dlo[c, ln] = dly[s + c] - beta * dlx[s + c]
        dhi[c, ln] = dly[t - p + c] - beta * dlx[t - p + c]
    b2 = beta * beta
    j0 = s + p
    tb = ps[p + 1]  # T_b, rebuilt lag by lag from T_0 (see kernels._jit_sliding)
    for b in range(p + 1):
        if b > 0:
            tb += (
                ps[b - 1]
                + zy[j0] * dlx[j0 - b]
                + zx[j0] * dly[j0 - b]
                - zy[t] * dlx[t - b]
                - zx[t] * dly[t - b]
            )
        r[b, ln] = ty[b] - beta * ps[b] + b2 * tx[b]
        q[b, ln] = (
            ty[p + 1 + b]
            - beta * tb
            + b2 * tx[p + 1 + b]
            - a * (ty[2 * p + 2 + b] - beta * tx[2 * p + 2 + b])
        )
    m = n - 1 - p
    myj = ty[3 * p + 3] / m
    mxj = tx[3 * p + 3] / m
    cyy = ty[3 * p + 4] - ty[3 * p + 3] * myj
    cxx = tx[3 * p + 4] - tx[3 * p + 3] * mxj
    cxy = ps[p + 2] - tx[3 * p + 3] * myj
    off = myj - a - beta * mxj
    sc[0, ln] = (cyy - beta * cxy) - beta * (cxy - beta * cxx) + m * off * off
    return 1


@njit(cache=True)
def _factor(lf, dg, inv, okcol, k, dim, ops, cat):  # type: ignore[no-untyped-def]
    """Factorise the first k (lag) columns of every lane's matrix and the two trailing rows'
    entries in them. ``okcol[ln]``: k if every pivot held, else the first failing column (-1:
    lane unused); a failed or unused lane goes on with pivot 1. Adds its operations to
    ``ops[cat]``.

    Left-looking by register blocks: the rows in groups of four (the two trailing rows as one
    group), the columns in pairs; a block's dot products over the columns already finished run
    in registers (:func:`kernels._simd.vblock`: six loads for eight multiply-adds), then the
    pair's own two columns are finished entry by entry (the second column's term in the first,
    the pivots, the scaling by the inverse pivot)."""
    row = dim * NL
    n_ops = 0
    i0 = 0
    while i0 < k:
        nr = min(4, k - i0)
        n_ops += _group(lf, dg, inv, okcol, i0, nr, i0 + nr, row)
        i0 += nr
    n_ops += _group(lf, dg, inv, okcol, dim - 2, 2, k, row)
    ops[cat] += NL * n_ops


@njit(cache=True)
def _group(lf, dg, inv, okcol, i0, nr, ncol, row):  # type: ignore[no-untyped-def]
    """Rows i0 .. i0 + nr - 1 in the columns below ``ncol`` (the lower triangle: a row's
    entries up to its diagonal); returns the operations per lane."""
    n_ops = 0
    j0 = 0
    while j0 < ncol:
        nc = min(2, ncol - j0)
        if j0 + nc <= i0:  # below the diagonal: every row of the group, both columns
            vblock(lf, i0 * row, j0 * row, row, j0, nr, nc)
            n_ops += 2 * j0 * nr * nc
            for r in range(nr):
                o = (i0 + r) * row
                vmul(lf, o + j0 * NL, inv, j0 * NL)
                n_ops += 1
                if nc == 2:
                    vdotsub(lf, o + (j0 + 1) * NL, lf, o + j0 * NL, lf, (j0 + 1) * row + j0 * NL, 1, NL)
                    vmul(lf, o + (j0 + 1) * NL, inv, (j0 + 1) * NL)
                    n_ops += 3
        else:  # the diagonal pair (j0 = i0 + even): rows j0 .. i0 + nr - 1
            last = i0 + nr
            below = last - (j0 + 1)  # rows under the pair's first diagonal entry
            vdotsub(lf, j0 * row + j0 * NL, lf, j0 * row, lf, j0 * row, j0, NL)
            if below > 0:
                vblock(lf, (j0 + 1) * row, j0 * row, row, j0, below, nc)
            n_ops += 2 * j0 * (1 + below * nc)
            _pivot(lf, dg, inv, okcol, j0, row)
            n_ops += 2
            for i in range(j0 + 1, last):
                vmul(lf, i * row + j0 * NL, inv, j0 * NL)
                n_ops += 1
            if nc == 2 and below > 0:
                for i in range(j0 + 1, last):
                    o = i * row + (j0 + 1) * NL
                    vdotsub(lf, o, lf, i * row + j0 * NL, lf, (j0 + 1) * row + j0 * NL, 1, NL)
                    n_ops += 2
                _pivot(lf, dg, inv, okcol, j0 + 1, row)
                n_ops += 2
                for i in range(j0 + 2, last):
                    vmul(lf, i * row + (j0 + 1) * NL, inv, (j0 + 1) * NL)
                    n_ops += 1
        j0 += nc
    return n_ops


@njit(cache=True)
def _pivot(lf, dg, inv, okcol, i, row):  # type: ignore[no-untyped-def]
    """Diagonal entry i, its dot product already subtracted: the remaining pivot, checked, then
    its square root and inverse."""
    o = i * row + i * NL
    for ln in range(NL):
        failed = okcol[ln] < i
        if not failed and not lf[o + ln] > _PIVOT_RTOL * dg[i * NL + ln]:
            okcol[ln] = i
            failed = True
        if failed:
            lf[o + ln] = 1.0
    vsqrt_inv(lf, o, inv, i * NL)


@njit(cache=True)
def scan(p, m, ic, ws, ops):  # type: ignore[no-untyped-def]
    """Lag choice (or the fixed lag p) of every active lane over the common sample J; sets
    flags[2] (the lag, -1 if none) and sc[3] (the t statistic of model p)."""
    lf, dg, inv, dlo, dhi, r, q, sc, flags, thr, _, sch = ws
    dim = p + 2
    row = dim * NL
    lv = p
    rs = p + 1
    # lane-wise: the Toeplitz recursion of the lag block from its first row
    dlo_f = dlo.reshape(-1)
    dhi_f = dhi.reshape(-1)
    r_f = r.reshape(-1)
    for a in range(1, p + 1):
        vfill(lf, (a - 1) * row, r_f, (a - 1) * NL, dlo_f, (p - 1) * NL, dlo_f, (p - a) * NL, dhi_f,
              (p - 1) * NL, dhi_f, (p - a) * NL)  # fmt: skip
        for b in range(2, a + 1):
            vfill(lf, (a - 1) * row + (b - 1) * NL, lf, (a - 2) * row + (b - 2) * NL, dlo_f, (p - a) * NL,
                  dlo_f, (p - b) * NL, dhi_f, (p - a) * NL, dhi_f, (p - b) * NL)  # fmt: skip
    ops[OP_FILL] += NL * 4 * (p * (p + 1) // 2)
    q_f = q.reshape(-1)
    for a in range(1, p + 1):
        vcopy(lf, lv * row + (a - 1) * NL, q_f, a * NL)
        vcopy(lf, rs * row + (a - 1) * NL, r_f, a * NL)
    vcopy(lf, lv * row + lv * NL, sc.reshape(-1), 0)
    vcopy(lf, rs * row + lv * NL, q_f, 0)
    vcopy(lf, rs * row + rs * NL, r_f, 0)
    for c in range(p):
        vcopy(dg, c * NL, lf, c * row + c * NL)
    for ln in range(NL):
        flags[1, ln] = p if flags[0, ln] != 0 else -1
        flags[2, ln] = -1
        sc[3, ln] = math.nan
    _factor(lf, dg, inv, flags[1], p, dim, ops, OP_FACTOR)
    vschur(lf, lv * row + lv * NL, rs * row + lv * NL, rs * row + rs * NL, lv * row, rs * row, p,
           sch[0], sch[1], sch[2])  # fmt: skip
    n_ops = NL * (3 * (p + 1) + 6 * p)
    if thr[p + 1] != m:  # once per window length (thr[p + 1] holds the m they are for)
        pen = 2.0 / m if ic == 0 else math.log(m) / m
        for dk in range(p + 1):
            thr[dk] = math.exp(-dk * pen)
        thr[p + 1] = m
    for ln in range(NL):
        if flags[0, ln] == 0:
            continue
        e0 = sc[0, ln]
        best = -1
        bssr = 0.0
        for k in range(flags[1, ln] + 1):
            ek = sch[0, k * NL + ln]
            ssr = sch[1, k * NL + ln]
            n_ops += 1
            if not ek > _PIVOT_RTOL * e0 or not ssr > 0.0:
                break
            if ic != IC_NONE and (best < 0 or ssr < bssr * thr[k - best]):
                best = k
                bssr = ssr
            n_ops += 1
            if k == p and m - (p + 1) > 0:
                sc[3, ln] = sch[2, k * NL + ln] / math.sqrt(ek) / math.sqrt(ssr / (m - (p + 1)))
                n_ops += 6
        flags[2, ln] = p if ic == IC_NONE else best
    ops[OP_SCHUR] += n_ops


@njit(cache=True)
def refit_job(z, iy, ix, s, t, p, ln, ws, jobs, n, ops):  # type: ignore[no-untyped-def]
    """Lane ln's sums for its refit at the chosen lag L = flags[2, ln] < p, over the rows
    [s + L, t) (the rows [s + L, s + p) added to the scan's), into the record ``jobs[n]``
    (see :func:`job_width`); the pair's legs are rows iy and ix of z. The lane's r and q are
    left as they were."""
    _, _, _, dlo, dhi, r, q, sc, flags, _, _, _ = ws
    lag = flags[2, ln]
    beta = sc[1, ln]
    a = sc[2, ln]
    for b in range(lag + 1):
        jobs[n, b] = r[b, ln]
        jobs[n, p + 1 + b] = q[b, ln]
    lev = sc[0, ln]
    for j in range(s + lag, s + p):
        dj = dlo[j - s, ln]
        ej = z[iy, j] - a - beta * z[ix, j]
        lev += ej * ej
        for b in range(lag + 1):
            dlag = dlo[j - b - s, ln]
            jobs[n, b] += dj * dlag
            jobs[n, p + 1 + b] += ej * dlag
    for c in range(p):
        jobs[n, 2 * p + 2 + c] = dlo[c, ln]
        jobs[n, 3 * p + 2 + c] = dhi[c, ln]
    jobs[n, 4 * p + 2] = lev
    jobs[n, 4 * p + 3] = (t - s - lag) - (lag + 1)  # degrees of freedom of the refit
    jobs[n, 4 * p + 4] = lag
    ops[OP_REFIT_SUMS] += (p - lag) * (5 + 4 * (lag + 1))


@njit(cache=True)
def refit_lag0(z, iy, ix, s, t, p, ln, ws, ops):  # type: ignore[no-untyped-def]
    """The t statistic of lane ln's refit at lag 0 over the rows [s, t) (NaN when singular):
    the sums of :func:`refit_job` and the solve of :func:`refit_jobs` (no lag column: the level
    and the response alone), the same operations in the same order, without the job."""
    _, _, _, dlo, _, r, q, sc, _, _, _, _ = ws
    beta = sc[1, ln]
    a = sc[2, ln]
    rr = r[0, ln]
    qq = q[0, ln]
    lev = sc[0, ln]
    for j in range(s, s + p):
        dj = dlo[j - s, ln]
        ej = z[iy, j] - a - beta * z[ix, j]
        lev += ej * ej
        dlag = dlo[j - s, ln]
        rr += dj * dlag
        qq += ej * dlag
    ops[OP_REFIT_SUMS] += p * (5 + 4)
    ssr = rr - (qq * qq) / lev
    dof = (t - s) - 1
    ops[OP_REFIT] += 3 * 1 + 6 * 0
    if lev > _PIVOT_RTOL * lev and ssr > 0.0 and dof > 0:
        ops[OP_REFIT] += 5
        return qq / math.sqrt(lev) / math.sqrt(ssr / dof)
    return math.nan


@njit(cache=True)
def _fill_job(lf, dg, dim, p, ln, job):  # type: ignore[no-untyped-def]
    """Lane ln's augmented Gram matrix of a refit job of lag dim - 2 (lower triangle, by rows):
    lags 1..L at 0..L-1, the level at L, the response at L + 1."""
    row = dim * NL
    lag = dim - 2
    lv = lag
    rs = lag + 1
    lo = 2 * p + 2
    hi = 3 * p + 2
    for a in range(1, lag + 1):
        lf[(a - 1) * row + ln] = (
            job[a - 1] + job[lo + lag - 1] * job[lo + lag - a] - job[hi + p - 1] * job[hi + p - a]
        )
        for b in range(2, a + 1):
            lf[(a - 1) * row + (b - 1) * NL + ln] = (
                lf[(a - 2) * row + (b - 2) * NL + ln]
                + job[lo + lag - a] * job[lo + lag - b]
                - job[hi + p - a] * job[hi + p - b]
            )
        lf[lv * row + (a - 1) * NL + ln] = job[p + 1 + a]
        lf[rs * row + (a - 1) * NL + ln] = job[a]
    lf[lv * row + lv * NL + ln] = job[4 * p + 2]
    lf[rs * row + lv * NL + ln] = job[p + 1]
    lf[rs * row + rs * NL + ln] = job[0]
    for c in range(dim - 2):
        dg[c * NL + ln] = lf[c * row + c * NL + ln]


@njit(cache=True)
def _fill_unit(lf, dg, dim, ln):  # type: ignore[no-untyped-def]
    """An unused lane: the identity (every pivot 1)."""
    row = dim * NL
    for i in range(dim):
        for j in range(i + 1):
            lf[i * row + j * NL + ln] = 1.0 if i == j else 0.0
    for c in range(dim - 2):
        dg[c * NL + ln] = 1.0


@njit(cache=True)
def refit_jobs(jobs, n_jobs, p, ws, order, out_stat, ops):  # type: ignore[no-untyped-def]
    """t statistic of every refit job (``out_stat[i]`` for ``jobs[i]``; NaN when singular),
    eight jobs of one lag at a time. ``order`` is int64 workspace of length >= n_jobs."""
    lf, dg, inv, _, _, _, _, _, flags, _, _, sch = ws
    # counting sort of the jobs by lag
    counts = np.zeros(p + 2, dtype=np.int64)
    for i in range(n_jobs):
        counts[int(jobs[i, 4 * p + 4]) + 1] += 1
    for lag in range(p):
        counts[lag + 1] += counts[lag]
    for i in range(n_jobs):
        lag = int(jobs[i, 4 * p + 4])
        order[counts[lag]] = i
        counts[lag] += 1
    lanes = np.empty(NL, dtype=np.int64)
    first = 0
    while first < n_jobs:
        lag = int(jobs[order[first], 4 * p + 4])
        n_lane = 0
        while n_lane < NL and first + n_lane < n_jobs and int(jobs[order[first + n_lane], 4 * p + 4]) == lag:
            lanes[n_lane] = order[first + n_lane]
            n_lane += 1
        dim = lag + 2
        row = dim * NL
        for ln in range(NL):
            if ln < n_lane:
                _fill_job(lf, dg, dim, p, ln, jobs[lanes[ln]])
                flags[1, ln] = lag
            else:
                _fill_unit(lf, dg, dim, ln)
                flags[1, ln] = -1
        _factor(lf, dg, inv, flags[1], lag, dim, ops, OP_REFIT)
        vschur(lf, lag * row + lag * NL, (lag + 1) * row + lag * NL, (lag + 1) * row + (lag + 1) * NL,
               lag * row, (lag + 1) * row, lag, sch[0], sch[1], sch[2])  # fmt: skip
        n_ops = NL * (4 * (lag * (lag + 1) // 2) + 3 * (lag + 1) + 6 * lag)
        for ln in range(n_lane):
            job = jobs[lanes[ln]]
            ek = sch[0, lag * NL + ln]
            ssr = sch[1, lag * NL + ln]
            dof = job[4 * p + 3]
            stat = math.nan
            if flags[1, ln] == lag and ek > _PIVOT_RTOL * job[4 * p + 2] and ssr > 0.0 and dof > 0:
                stat = sch[2, lag * NL + ln] / math.sqrt(ek) / math.sqrt(ssr / dof)
                n_ops += 5
            out_stat[lanes[ln]] = stat
        ops[OP_REFIT] += n_ops
        first += n_lane
