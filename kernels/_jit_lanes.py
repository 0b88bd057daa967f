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
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from kernels._jit import IC_NONE, SQRTEPS
from kernels._simd import LANES, vcopy, vdotsub, vdotsub2, vfill, vmul, vschur, vsqrt_inv

__all__ = ["NL", "workspace", "lane_sums", "scan", "refit"]

NL = LANES
_PIVOT_RTOL = 1e-12


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
    sxy = ps[4 * p + 5] - tx[3 * p + 5] * my
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
    for b in range(p + 1):
        r[b, ln] = ty[b] - beta * (ps[b] + ps[p + 1 + b]) + b2 * tx[b]
        q[b, ln] = (
            ty[p + 1 + b]
            - beta * (ps[2 * p + 2 + b] + ps[3 * p + 3 + b])
            + b2 * tx[p + 1 + b]
            - a * (ty[2 * p + 2 + b] - beta * tx[2 * p + 2 + b])
        )
    m = n - 1 - p
    myj = ty[3 * p + 3] / m
    mxj = tx[3 * p + 3] / m
    cyy = ty[3 * p + 4] - ty[3 * p + 3] * myj
    cxx = tx[3 * p + 4] - tx[3 * p + 3] * mxj
    cxy = ps[4 * p + 4] - tx[3 * p + 3] * myj
    off = myj - a - beta * mxj
    sc[0, ln] = (cyy - beta * cxy) - beta * (cxy - beta * cxx) + m * off * off
    return 1


@njit(cache=True)
def _factor(lf, dg, inv, okcol, k, dim):  # type: ignore[no-untyped-def]
    """Factorise the first k (lag) columns of every lane's matrix and the two trailing rows'
    entries in them. ``okcol[ln]``: k if every pivot held, else the first failing column (-1:
    lane unused); a failed or unused lane goes on with pivot 1."""
    row = dim * NL
    i = 0
    while i < k:
        two = i + 1 < k  # rows i and i + 1 share the loads of the rows above them
        for j in range(i):
            if two:
                vdotsub2(lf, i * row + j * NL, (i + 1) * row + j * NL, lf, i * row, (i + 1) * row, lf,
                         j * row, j, NL)  # fmt: skip
                vmul(lf, (i + 1) * row + j * NL, inv, j * NL)
            else:
                vdotsub(lf, i * row + j * NL, lf, i * row, lf, j * row, j, NL)
            vmul(lf, i * row + j * NL, inv, j * NL)
        _pivot(lf, dg, inv, okcol, i, row)
        if two:
            o = (i + 1) * row + i * NL
            vdotsub(lf, o, lf, (i + 1) * row, lf, i * row, i, NL)
            vmul(lf, o, inv, i * NL)
            _pivot(lf, dg, inv, okcol, i + 1, row)
        i += 2
    for j in range(k):
        vdotsub2(lf, (dim - 2) * row + j * NL, (dim - 1) * row + j * NL, lf, (dim - 2) * row,
                 (dim - 1) * row, lf, j * row, j, NL)  # fmt: skip
        vmul(lf, (dim - 2) * row + j * NL, inv, j * NL)
        vmul(lf, (dim - 1) * row + j * NL, inv, j * NL)


@njit(cache=True)
def _pivot(lf, dg, inv, okcol, i, row):  # type: ignore[no-untyped-def]
    """Diagonal entry i: the remaining pivot, checked, then its square root and inverse."""
    o = i * row + i * NL
    vdotsub(lf, o, lf, i * row, lf, i * row, i, NL)
    for ln in range(NL):
        failed = okcol[ln] < i
        if not failed and not lf[o + ln] > _PIVOT_RTOL * dg[i * NL + ln]:
            okcol[ln] = i
            failed = True
        if failed:
            lf[o + ln] = 1.0
    vsqrt_inv(lf, o, inv, i * NL)


@njit(cache=True)
def _fill_lane(lf, dg, dim, lag, p, ln, dlo, dhi, r, q, lev):  # type: ignore[no-untyped-def]
    """Lane ln's augmented Gram matrix over rows [s + lag, t) (lower triangle, by rows): lags
    1..lag at 0..lag-1, unit columns up to dim - 3, the level at dim - 2, the response at dim - 1."""
    row = dim * NL
    lv = dim - 2
    rs = dim - 1
    for i in range(dim):
        for j in range(i + 1):
            lf[i * row + j * NL + ln] = 1.0 if i == j else 0.0
    for a in range(1, lag + 1):
        lf[(a - 1) * row + ln] = (
            r[a - 1, ln] + dlo[lag - 1, ln] * dlo[lag - a, ln] - dhi[p - 1, ln] * dhi[p - a, ln]
        )
        for b in range(2, a + 1):
            lf[(a - 1) * row + (b - 1) * NL + ln] = (
                lf[(a - 2) * row + (b - 2) * NL + ln]
                + dlo[lag - a, ln] * dlo[lag - b, ln]
                - dhi[p - a, ln] * dhi[p - b, ln]
            )
        lf[lv * row + (a - 1) * NL + ln] = q[a, ln]
        lf[rs * row + (a - 1) * NL + ln] = r[a, ln]
    lf[lv * row + lv * NL + ln] = lev
    lf[rs * row + lv * NL + ln] = q[0, ln]
    lf[rs * row + rs * NL + ln] = r[0, ln]
    for c in range(dim - 2):
        dg[c * NL + ln] = lf[c * row + c * NL + ln]


@njit(cache=True)
def scan(p, m, ic, ws):  # type: ignore[no-untyped-def]
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
    _factor(lf, dg, inv, flags[1], p, dim)
    vschur(lf, lv * row + lv * NL, rs * row + lv * NL, rs * row + rs * NL, lv * row, rs * row, p,
           sch[0], sch[1], sch[2])  # fmt: skip
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
            if not ek > _PIVOT_RTOL * e0 or not ssr > 0.0:
                break
            if ic != IC_NONE and (best < 0 or ssr < bssr * thr[k - best]):
                best = k
                bssr = ssr
            if k == p and m - (p + 1) > 0:
                sc[3, ln] = sch[2, k * NL + ln] / math.sqrt(ek) / math.sqrt(ssr / (m - (p + 1)))
        flags[2, ln] = p if ic == IC_NONE else best


@njit(cache=True)
def refit(z, ii, jj, k0, s, t, p, ws, stat_l):  # type: ignore[no-untyped-def]
    """t statistic (into ``stat_l``) of every lane whose chosen lag L < p, refitted on rows
    [s + L, t); lanes with a shorter lag than the longest get unit columns, which change nothing."""
    lf, dg, inv, dlo, dhi, r, q, sc, flags, _, _, sch = ws
    lmax = -1
    for ln in range(NL):
        stat_l[ln] = math.nan
        if flags[0, ln] != 0 and 0 <= flags[2, ln] < p:
            lmax = max(lmax, flags[2, ln])
    if lmax < 0:
        return
    dim = lmax + 2
    row = dim * NL
    lv = lmax
    rs = lmax + 1
    for ln in range(NL):
        lag = flags[2, ln]
        if flags[0, ln] == 0 or not 0 <= lag < p:
            flags[1, ln] = -1
            _fill_lane(lf, dg, dim, 0, p, ln, dlo, dhi, r, q, 1.0)
            continue
        flags[1, ln] = lmax
        i = ii[k0 + ln]
        x = jj[k0 + ln]
        beta = sc[1, ln]
        a = sc[2, ln]
        lev = sc[0, ln]
        # rows [s + lag, s + p) join the sums over J
        for j in range(s + lag, s + p):
            dj = dlo[j - s, ln]
            ej = z[i, j] - a - beta * z[x, j]
            lev += ej * ej
            for b in range(lag + 1):
                dlag = dlo[j - b - s, ln]
                r[b, ln] += dj * dlag
                q[b, ln] += ej * dlag
        sc[0, ln] = lev
        _fill_lane(lf, dg, dim, lag, p, ln, dlo, dhi, r, q, lev)
    _factor(lf, dg, inv, flags[1], lmax, dim)
    vschur(lf, lv * row + lv * NL, rs * row + lv * NL, rs * row + rs * NL, lv * row, rs * row, lmax,
           sch[0], sch[1], sch[2])  # fmt: skip
    for ln in range(NL):
        if flags[1, ln] != lmax:
            continue
        lag = flags[2, ln]
        ek = sch[0, lmax * NL + ln]
        ssr = sch[1, lmax * NL + ln]
        dof = (t - s - lag) - (lag + 1)
        if ek > _PIVOT_RTOL * sc[0, ln] and ssr > 0.0 and dof > 0:
            stat_l[ln] = sch[2, lmax * NL + ln] / math.sqrt(ek) / math.sqrt(ssr / dof)
