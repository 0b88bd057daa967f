"""Private numba kernels of the sliding Engle-Granger screen (see :mod:`kernels.sliding`).

Notation. ``z[u]`` is ticker u's log price minus a per-ticker shift, ``dl[u][t] = z[u][t+1] -
z[u][t]``. A window covers columns [s, t] (n = t - s + 1 sessions); with lag cap p its ADF rows
are j in J = [s + p, t) (window positions p .. n - 2, as :func:`kernels._jit.adf_stat`).

Per ticker u the state holds, over the rows J (b = 0..p):
  R_b = sum dl[j] dl[j-b],  L_b = sum z[j] dl[j-b],  M_b = sum dl[j-b],  S = sum z[j],
  SS = sum z[j]^2, and over the window W = [s, t]: T = sum z, TT = sum z^2.
Per pair (y = ticker i, x = ticker k), over J:
  A_b = sum dly[j] dlx[j-b],  B_b = sum dlx[j] dly[j-b],  C_b = sum zy[j] dlx[j-b],
  D_b = sum zx[j] dly[j-b],  F = sum zy[j] zx[j],  and over W: G = sum zy zx.
These are linear in each leg, so for the residual e = zy - a - beta zx and its differences
d = dly - beta dlx the ADF regression's sums follow from them and the window's (beta, a):
  sum d[j] d[j-b] = Ry_b - beta (A_b + B_b) + beta^2 Rx_b,
  sum e[j] d[j-b] = Ly_b - beta (C_b + D_b) + beta^2 Lx_b - a (My_b - beta Mx_b),
  sum e[j]^2      = from S, SS, F centred on their own means.
The rest of the lagged-difference Gram block follows from its first row by the boundary
recursion of :func:`kernels._jit._fill_gram` (2p values of d at the two ends of J). The lag
choice and the refit take the decisions of :func:`kernels._jit.ic_best_lag` and
:func:`kernels._jit.refit_stat` (the per-date kernel's) from one factorisation (see "the
regressions" below). A refit at lag L < p adds the rows [s + L, s + p) to the sums,
O((p - L) L) work.

Moving a window from [s0, t0] to [s1, t1] (s1 >= s0, t1 >= t0, same p) removes rows
[s0 + p, s1 + p) from J and adds rows [t0, t1), O(p) per row; the wrapper decides when to
recompute exactly instead (see :mod:`kernels.sliding`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from kernels._jit import IC_NONE, SQRTEPS, _dot2, _fetch_add, _sum, mackinnon_p
from kernels._mackinnon import PVALUE_C2
from kernels._simd import LANES, vcopy, vdotsub, vdotsub2, vfill, vmul, vschur, vsqrt_inv

__all__ = ["NL", "ticker_width", "pair_width", "ticker_pass", "pair_pass"]


def ticker_width(p: int) -> int:
    """Length of one ticker's state for lag cap ``p``."""
    return 3 * p + 7


def pair_width(p: int) -> int:
    """Length of one pair's state for lag cap ``p``."""
    return 4 * p + 6


@njit(cache=True)
def _can_slide(s0, t0, s1, t1, p):  # type: ignore[no-untyped-def]
    """Whether moving [s0, t0] to [s1, t1] row by row is cheaper than recomputing exactly.

    One row's update costs about as much as four rows of the exact (vectorised) sums.
    """
    if s1 < s0 or t1 < t0 or s1 + p >= t0:
        return False
    return 4 * ((s1 - s0) + (t1 - t0)) < t1 - s1 - p


# -- per ticker ----------------------------------------------------------------------------------


@njit(cache=True)
def _ticker_exact(z, dl, s, t, p, st):  # type: ignore[no-untyped-def]
    j0 = s + p
    resp = dl[j0:t]
    lev = z[j0:t]
    for b in range(p + 1):
        lagd = dl[j0 - b : t - b]
        st[b], st[p + 1 + b] = _dot2(resp, lev, lagd)
        st[2 * p + 2 + b] = _sum(lagd)
    st[3 * p + 3] = _sum(lev)
    st[3 * p + 4], _ = _dot2(lev, lev, lev)
    win = z[s : t + 1]
    st[3 * p + 5] = _sum(win)
    st[3 * p + 6], _ = _dot2(win, win, win)


@njit(cache=True)
def _ticker_row(z, dl, j, p, sign, st):  # type: ignore[no-untyped-def]
    dj = sign * dl[j]
    zj = sign * z[j]
    for b in range(p + 1):
        lagd = dl[j - b]
        st[b] += dj * lagd
        st[p + 1 + b] += zj * lagd
        st[2 * p + 2 + b] += sign * lagd
    st[3 * p + 3] += zj
    st[3 * p + 4] += zj * z[j]


@njit(cache=True)
def _ticker_slide(z, dl, s0, t0, s1, t1, p, st):  # type: ignore[no-untyped-def]
    for j in range(s0 + p, s1 + p):
        _ticker_row(z, dl, j, p, -1.0, st)
    for j in range(t0, t1):
        _ticker_row(z, dl, j, p, 1.0, st)
    for c in range(s0, s1):
        st[3 * p + 5] -= z[c]
        st[3 * p + 6] -= z[c] * z[c]
    for c in range(t0 + 1, t1 + 1):
        st[3 * p + 5] += z[c]
        st[3 * p + 6] += z[c] * z[c]


@njit(cache=True)
def ticker_pass(z, dl, nanpre, chgpre, starts, ends, p, prev_s, prev_t, tstate, tvalid, tsums, tfin, tconst):  # type: ignore[no-untyped-def]
    """Every ticker's sums at each window [starts[e], ends[e]] (into ``tsums[u, e]``).

    ``tstate[u]`` holds ticker u's sums at [prev_s, prev_t] where ``tvalid[u]``; both are left
    at the last window. ``tfin[u, e]``: the window holds no NaN; ``tconst[u, e]``: it is constant.
    """
    for u in range(z.shape[0]):
        st = tstate[u]
        valid = tvalid[u] != 0
        s0 = prev_s
        t0 = prev_t
        for e in range(starts.shape[0]):
            s1 = starts[e]
            t1 = ends[e]
            if nanpre[u, t1 + 1] - nanpre[u, s1] != 0:
                valid = False
                tfin[u, e] = 0
                tconst[u, e] = 0
                continue
            if valid and _can_slide(s0, t0, s1, t1, p):
                _ticker_slide(z[u], dl[u], s0, t0, s1, t1, p, st)
            else:
                _ticker_exact(z[u], dl[u], s1, t1, p, st)
            valid = True
            s0 = s1
            t0 = t1
            tsums[u, e, :] = st
            tfin[u, e] = 1
            tconst[u, e] = 1 if chgpre[u, t1 + 1] - chgpre[u, s1 + 1] == 0 else 0
        tvalid[u] = 1 if valid else 0


# -- per pair ------------------------------------------------------------------------------------


@njit(cache=True)
def _pair_exact(zy, zx, dly, dlx, s, t, p, st):  # type: ignore[no-untyped-def]
    j0 = s + p
    ry = dly[j0:t]
    rx = dlx[j0:t]
    ly = zy[j0:t]
    lx = zx[j0:t]
    for b in range(p + 1):
        st[b], st[2 * p + 2 + b] = _dot2(ry, ly, dlx[j0 - b : t - b])
        st[p + 1 + b], st[3 * p + 3 + b] = _dot2(rx, lx, dly[j0 - b : t - b])
    st[4 * p + 4], _ = _dot2(ly, ly, lx)
    st[4 * p + 5], _ = _dot2(zy[s : t + 1], zy[s : t + 1], zx[s : t + 1])


@njit(cache=True)
def _pair_row(zy, zx, dly, dlx, j, p, sign, st):  # type: ignore[no-untyped-def]
    a = sign * dly[j]
    bx = sign * dlx[j]
    cy = sign * zy[j]
    cx = sign * zx[j]
    for b in range(p + 1):
        lx = dlx[j - b]
        ly = dly[j - b]
        st[b] += a * lx
        st[p + 1 + b] += bx * ly
        st[2 * p + 2 + b] += cy * lx
        st[3 * p + 3 + b] += cx * ly
    st[4 * p + 4] += cy * zx[j]


@njit(cache=True)
def _pair_slide(zy, zx, dly, dlx, s0, t0, s1, t1, p, st):  # type: ignore[no-untyped-def]
    for j in range(s0 + p, s1 + p):
        _pair_row(zy, zx, dly, dlx, j, p, -1.0, st)
    for j in range(t0, t1):
        _pair_row(zy, zx, dly, dlx, j, p, 1.0, st)
    for c in range(s0, s1):
        st[4 * p + 5] -= zy[c] * zx[c]
    for c in range(t0 + 1, t1 + 1):
        st[4 * p + 5] += zy[c] * zx[c]


# -- the regressions, eight pairs at a time --------------------------------------------------------
#
# The lag choice needs every nested model's residual sum of squares and the statistic needs the
# level's t in the chosen one. Both come from one Cholesky factorisation in the order
# [lag 1, ..., lag p] with the level and the response as two trailing rows: with l_q and r_q the
# level's and the response's entries in lag column q of the factor, the sums partialled on lags
# 1..k are E_k = E - sum_{q<k} l_q^2, c_k = Q_0 - sum_{q<k} l_q r_q, y_k = yy - sum_{q<k} r_q^2,
# so model k (level + k lags) has ssr_k = y_k - c_k^2 / E_k and the level's t statistic is
# c_k / sqrt(E_k ssr_k / dof_k): the refit of :func:`kernels._jit.refit_stat`, which factorises
# in this order. The scan stops at a lag column whose pivot falls to _PIVOT_RTOL of its diagonal
# (a refit there is NaN), at a level column that does, and at ssr_k <= 0, as
# :func:`kernels._jit.ic_best_lag` does. Eight pairs (lanes) are factorised in lockstep with the
# vector operations of :mod:`kernels._simd` (left-looking, so each update is a dot product held
# in registers); a lane whose pivot fails carries on with pivot 1 and its results are not used.
# The comparison m log(ssr_k / m) + pen_k < m log(ssr_b / m) + pen_b is made as
# ssr_k < ssr_b exp((pen_b - pen_k) / m), with the exponentials computed once per window length.

NL = LANES
_PIVOT_RTOL = 1e-12


@njit(cache=True)
def _workspace(p):  # type: ignore[no-untyped-def]
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
def _lane_sums(zy, zx, dly, dlx, s, t, p, ty, tx, ps, ln, dlo, dhi, r, q, sc):  # type: ignore[no-untyped-def]
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
def _scan(p, m, ic, ws):  # type: ignore[no-untyped-def]
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
def _refit(z, ii, jj, k0, s, t, p, ws, stat_l):  # type: ignore[no-untyped-def]
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


@njit(cache=True)
def _nan_out(stat, pval, lag, beta, alpha, e, k, b, a):  # type: ignore[no-untyped-def]
    stat[e, k] = math.nan
    pval[e, k] = math.nan
    lag[e, k] = -1
    beta[e, k] = b
    alpha[e, k] = a


@njit(cache=True)
def _block(  # type: ignore[no-untyped-def]
    k0,
    nk,
    z,
    dl,
    ii,
    jj,
    shift,
    starts,
    ends,
    p,
    ic,
    prev_s,
    prev_t,
    tsums,
    tfin,
    tconst,
    pstate,
    pvalid,
    counts,
    stat,
    pval,
    lag,
    beta,
    alpha,
    ws,
    stat_l,
):
    """Pairs k0 .. k0 + nk - 1 (nk <= NL) over every window of the call."""
    _, _, _, dlo, dhi, r, q, sc, flags, _, valid, _ = ws
    nan = math.nan
    for ln in range(NL):
        valid[ln] = 1 if ln < nk and pvalid[k0 + ln] != 0 else 0
    s0 = prev_s
    t0 = prev_t
    for e in range(starts.shape[0]):
        s1 = starts[e]
        t1 = ends[e]
        any_active = False
        for ln in range(NL):
            flags[0, ln] = 0
            if ln >= nk:
                continue
            k = k0 + ln
            i = ii[k]
            x = jj[k]
            if tfin[i, e] == 0 or tfin[x, e] == 0:
                valid[ln] = 0
                _nan_out(stat, pval, lag, beta, alpha, e, k, nan, nan)
                continue
            st = pstate[k]
            if valid[ln] != 0 and _can_slide(s0, t0, s1, t1, p):
                _pair_slide(z[i], z[x], dl[i], dl[x], s0, t0, s1, t1, p, st)
                counts[k, 1] += 1
            else:
                _pair_exact(z[i], z[x], dl[i], dl[x], s1, t1, p, st)
                counts[k, 0] += 1
            valid[ln] = 1
            if tconst[i, e] != 0 or tconst[x, e] != 0:
                _nan_out(stat, pval, lag, beta, alpha, e, k, nan, nan)
                continue
            ok = _lane_sums(
                z[i], z[x], dl[i], dl[x], s1, t1, p, tsums[i, e], tsums[x, e], st, ln, dlo, dhi, r, q, sc
            )
            if ok == 0:
                b = sc[1, ln]
                _nan_out(stat, pval, lag, beta, alpha, e, k, b, sc[2, ln] + shift[i] - b * shift[x])
                continue
            flags[0, ln] = 1
            any_active = True
        s0 = s1
        t0 = t1
        if not any_active:
            continue
        _scan(p, t1 - s1 - p, ic, ws)
        _refit(z, ii, jj, k0, s1, t1, p, ws, stat_l)
        for ln in range(NL):
            if flags[0, ln] == 0:
                continue
            k = k0 + ln
            b = sc[1, ln]
            al = sc[2, ln] + shift[ii[k]] - b * shift[jj[k]]
            lg = flags[2, ln]
            sv = sc[3, ln] if lg == p else (stat_l[ln] if lg >= 0 else nan)
            if math.isnan(sv):
                _nan_out(stat, pval, lag, beta, alpha, e, k, b, al)
                continue
            stat[e, k] = sv
            pval[e, k] = mackinnon_p(sv, PVALUE_C2)
            lag[e, k] = lg
            beta[e, k] = b
            alpha[e, k] = al
    for ln in range(nk):
        pvalid[k0 + ln] = valid[ln]


@njit(cache=True, nogil=True)
def pair_pass(  # type: ignore[no-untyped-def]
    z, dl, ii, jj, shift, starts, ends, p, ic, prev_s, prev_t, tsums, tfin, tconst, pstate, pvalid,
    counts, stat, pval, lag, beta, alpha, counter, grain,
):  # fmt: skip
    """Every pair over every window of the call; outputs are (n_windows, n_pairs).

    ``pstate[k]`` holds pair k's sums at [prev_s, prev_t] where ``pvalid[k]``; both are left at
    the last window; ``counts[k]`` accumulates (exact recomputes, slides). Blocks of NL pairs
    are taken ``grain`` at a time from ``counter[0]`` (atomically), so several threads may run
    this on the same arguments at once (it releases the GIL) and share the pairs as they come:
    a thread whose core is busy with other work takes fewer blocks. Each pair writes only its
    own state, counts and output slots.
    """
    n_pairs = ii.shape[0]
    total = (n_pairs + NL - 1) // NL
    ws = _workspace(p)
    stat_l = np.empty(NL)
    while True:
        first = _fetch_add(counter, 0, grain)
        if first >= total:
            break
        for blk in range(first, min(first + grain, total)):
            k0 = blk * NL
            _block(
                k0, min(NL, n_pairs - k0), z, dl, ii, jj, shift, starts, ends, p, ic, prev_s, prev_t,
                tsums, tfin, tconst, pstate, pvalid, counts, stat, pval, lag, beta, alpha, ws, stat_l,
            )  # fmt: skip
