"""Private numba kernels of the sliding Engle-Granger screen (see :mod:`kernels.sliding`).

Notation. ``z[u]`` is ticker u's log price minus a per-ticker shift, ``dl[u][t] = z[u][t+1] -
z[u][t]``. A window covers columns [s, t] (n = t - s + 1 sessions); with lag cap p its ADF rows
are j in J = [s + p, t) (window positions p .. n - 2, as :func:`kernels._jit.adf_stat`).

Per ticker u the state holds, over the rows J (b = 0..p):
  R_b = sum dl[j] dl[j-b],  L_b = sum z[j] dl[j-b],  M_b = sum dl[j-b],  S = sum z[j],
  SS = sum z[j]^2, and over the window W = [s, t]: T = sum z, TT = sum z^2.
Per pair (y = ticker i, x = ticker k), over J:
  S_b = sum (dly[j] dlx[j-b] + dlx[j] dly[j-b]),  T_0 = sum (zy[j] dlx[j] + zx[j] dly[j]),
  F = sum zy[j] zx[j],  and over W: G = sum zy zx  (p + 4 numbers).
These are linear in each leg, so for the residual e = zy - a - beta zx and its differences
d = dly - beta dlx the ADF regression's sums follow from them and the window's (beta, a):
  sum d[j] d[j-b] = Ry_b - beta S_b + beta^2 Rx_b,
  sum e[j] d[j-b] = Ly_b - beta T_b + beta^2 Lx_b - a (My_b - beta Mx_b),
  sum e[j]^2      = from S, SS, F centred on their own means,
where T_b = sum (zy[j] dlx[j-b] + zx[j] dly[j-b]) follows from T_0 and the S's: since
z[j] = z[j-1] + dl[j-1], shifting the rows by one gives, with J = [j0, j1),
  T_b = T_{b-1} + S_{b-1} + zy[j0] dlx[j0-b] + zx[j0] dly[j0-b] - zy[j1] dlx[j1-b] - zx[j1] dly[j1-b],
so only T_0 is carried (the cross sums of the level with each lag cost O(1) each to rebuild,
and a pair's state is p + 4 numbers: 31 at p = 27, 1.1 GB for 4.5 million pairs).
The rest of the lagged-difference Gram block follows from its first row by the boundary
recursion of :func:`kernels._jit._fill_gram` (2p values of d at the two ends of J). The lag
choice and the refit take the decisions of :func:`kernels._jit.ic_best_lag` and
:func:`kernels._jit.refit_stat` (the per-date kernel's) from one factorisation, eight pairs
at a time (:mod:`kernels._jit_lanes`); a block whose pairs share their first leg and take
consecutive second legs moves its sums and forms its regression sums eight lanes at a time too
(:mod:`kernels._jit_vec`), the others lane by lane. A refit at lag L < p adds the rows
[s + L, s + p) to the sums, O((p - L) L) work.

Moving a window from [s0, t0] to [s1, t1] (s1 >= s0, t1 >= t0, same p) removes rows
[s0 + p, s1 + p) from J and adds rows [t0, t1), O(p) per row; the wrapper decides when to
recompute exactly instead (see :mod:`kernels.sliding`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from kernels._jit import _dot2, _fetch_add, _sum, mackinnon_p
from kernels._jit_lanes import (
    NL,
    OP_EXACT,
    OP_PVALUE,
    OP_SLIDE,
    OP_SUMS,
    OP_TICKER,
    job_width,
    lane_sums,
    refit_job,
    refit_jobs,
    refit_lag0,
    scan,
    workspace,
)
from kernels._jit_vec import vec_slide, vec_sums
from kernels._mackinnon import PVALUE_C2

__all__ = ["NL", "ticker_width", "pair_width", "ticker_pass", "pair_pass"]


def ticker_width(p: int) -> int:
    """Length of one ticker's state for lag cap ``p``."""
    return 3 * p + 7


def pair_width(p: int) -> int:
    """Length of one pair's state for lag cap ``p``."""
    return p + 4


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
def ticker_pass(
    z, dl, nanpre, chgpre, starts, ends, p, prev_s, prev_t, tstate, tvalid, tsums, tfin, tconst, ops
):  # type: ignore[no-untyped-def]
    """Every ticker's sums at each window [starts[e], ends[e]] (into ``tsums[e, :, u]``: by
    series, so a block's consecutive second legs are consecutive numbers).

    ``tstate[u]`` holds ticker u's sums at [prev_s, prev_t] where ``tvalid[u]``; both are left
    at the last window. ``tfin[u, e]``: the window holds no NaN; ``tconst[u, e]``: it is constant.
    Operations are added to ``ops[OP_TICKER]``.
    """
    n_ops = 0
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
                rows = (s1 - s0) + (t1 - t0)
                n_ops += rows * (6 * (p + 1) + 5) + 3 * rows
            else:
                _ticker_exact(z[u], dl[u], s1, t1, p, st)
                m = t1 - s1 - p
                n_ops += 5 * m * (p + 1) + 5 * m + 5 * (t1 - s1 + 1)
            valid = True
            s0 = s1
            t0 = t1
            tsums[e, :, u] = st
            tfin[u, e] = 1
            tconst[u, e] = 1 if chgpre[u, t1 + 1] - chgpre[u, s1 + 1] == 0 else 0
        tvalid[u] = 1 if valid else 0
    ops[OP_TICKER] += n_ops


# -- per pair ------------------------------------------------------------------------------------


@njit(cache=True)
def _pair_exact(zy, zx, dly, dlx, s, t, p, st):  # type: ignore[no-untyped-def]
    j0 = s + p
    ry = dly[j0:t]
    rx = dlx[j0:t]
    ly = zy[j0:t]
    lx = zx[j0:t]
    for b in range(p + 1):
        ab, cb = _dot2(ry, ly, dlx[j0 - b : t - b])
        bb, db = _dot2(rx, lx, dly[j0 - b : t - b])
        st[b] = ab + bb
        if b == 0:
            st[p + 1] = cb + db
    st[p + 2], _ = _dot2(ly, ly, lx)
    st[p + 3], _ = _dot2(zy[s : t + 1], zy[s : t + 1], zx[s : t + 1])


@njit(cache=True)
def _pair_row(zy, zx, dly, dlx, j, p, sign, st):  # type: ignore[no-untyped-def]
    a = sign * dly[j]
    bx = sign * dlx[j]
    for b in range(p + 1):
        st[b] += a * dlx[j - b] + bx * dly[j - b]
    st[p + 1] += sign * (zy[j] * dlx[j] + zx[j] * dly[j])
    st[p + 2] += sign * zy[j] * zx[j]


@njit(cache=True)
def _pair_slide(zy, zx, dly, dlx, s0, t0, s1, t1, p, st):  # type: ignore[no-untyped-def]
    for j in range(s0 + p, s1 + p):
        _pair_row(zy, zx, dly, dlx, j, p, -1.0, st)
    for j in range(t0, t1):
        _pair_row(zy, zx, dly, dlx, j, p, 1.0, st)
    for c in range(s0, s1):
        st[p + 3] -= zy[c] * zx[c]
    for c in range(t0 + 1, t1 + 1):
        st[p + 3] += zy[c] * zx[c]


@njit(cache=True)
def _nan_out(stat, pval, lag, beta, alpha, e, k, b, a):  # type: ignore[no-untyped-def]
    stat[e, k] = math.nan
    pval[e, k] = math.nan
    lag[e, k] = -1
    beta[e, k] = b
    alpha[e, k] = a


@njit(cache=True)
def _regular(k0, nk, ii, jj):  # type: ignore[no-untyped-def]
    """Whether the block's pairs are (i, x0), ..., (i, x0 + NL - 1) (the vector path's form)."""
    if nk != NL:
        return False
    for ln in range(NL):  # noqa: SIM110 (a loop numba compiles)
        if ii[k0 + ln] != ii[k0] or jj[k0 + ln] != jj[k0] + ln:
            return False
    return True


@njit(cache=True)
def _block(  # type: ignore[no-untyped-def]
    k0, nk, z, dl, flat, ii, jj, shift, starts, ends, p, ic, prev_s, prev_t, tsums, tfin, tconst,
    pstate, pvalid, counts, stat, pval, lag, beta, alpha, ws, vw, jobs, job_at, job_stat, job_order, ops, vec,
):  # fmt: skip
    """Pairs k0 .. k0 + nk - 1 (nk <= NL) over every window of the call; the refits at a lag
    below the cap are gathered as jobs and solved at the end, eight of one lag at a time.

    A regular block (:func:`_regular`, with ``vec``) moves its sums and forms its regression
    sums eight lanes at a time (:mod:`kernels._jit_vec`); any other block lane by lane. Both
    do the same arithmetic per pair."""
    _, _, _, dlo, dhi, r, q, sc, flags, _, valid, _ = ws
    tmp, want, okv, tb, b2 = vw
    nan = math.nan
    n_jobs = 0
    pst = pstate[k0 // NL]
    fast = vec != 0 and _regular(k0, nk, ii, jj)
    i0 = ii[k0]
    x0 = jj[k0]
    zt, dlt, tsf, wsf = flat
    n_s = z.shape[0]
    tw = tsums.shape[1] * n_s
    pf = pst.reshape(-1)
    zy = z[i0]
    dly = dl[i0]
    for ln in range(NL):
        valid[ln] = 1 if ln < nk and pvalid[k0 + ln] != 0 else 0
    s0 = prev_s
    t0 = prev_t
    for e in range(starts.shape[0]):
        s1 = starts[e]
        t1 = ends[e]
        slide = _can_slide(s0, t0, s1, t1, p)
        rows = (s1 - s0) + (t1 - t0)
        row_ops = rows * (4 * (p + 1) + 10) + 2 * rows
        if fast and slide:
            any_valid = False
            for ln in range(NL):
                if valid[ln] != 0:
                    any_valid = True
            if any_valid:  # every lane moves; a lane that was not valid is recomputed below
                vec_slide(zy, dly, zt, dlt, n_s, x0, s0, t0, s1, t1, p, pf, tb)
                ops[OP_SLIDE] += NL * row_ops
        any_active = False
        for ln in range(NL):
            flags[0, ln] = 0
            want[ln] = 0
            if ln >= nk:
                continue
            k = k0 + ln
            i = ii[k]
            x = jj[k]
            if tfin[i, e] == 0 or tfin[x, e] == 0:
                valid[ln] = 0
                _nan_out(stat, pval, lag, beta, alpha, e, k, nan, nan)
                continue
            if valid[ln] != 0 and slide:
                if not fast:
                    for b in range(p + 4):
                        tmp[b] = pst[b, ln]
                    _pair_slide(z[i], z[x], dl[i], dl[x], s0, t0, s1, t1, p, tmp)
                    for b in range(p + 4):
                        pst[b, ln] = tmp[b]
                    ops[OP_SLIDE] += row_ops
                counts[k, 1] += 1
            else:
                _pair_exact(z[i], z[x], dl[i], dl[x], s1, t1, p, tmp)
                for b in range(p + 4):
                    pst[b, ln] = tmp[b]
                counts[k, 0] += 1
                m = t1 - s1 - p
                ops[OP_EXACT] += 8 * (p + 1) * m + (p + 1) + 1 + 4 * m + 4 * (t1 - s1 + 1)
            valid[ln] = 1
            if tconst[i, e] != 0 or tconst[x, e] != 0:
                _nan_out(stat, pval, lag, beta, alpha, e, k, nan, nan)
                continue
            if fast:
                want[ln] = 1
                any_active = True
                continue
            for b in range(p + 4):
                tmp[b] = pst[b, ln]
            ty = tsums[e, :, i]
            tx = tsums[e, :, x]
            ok = lane_sums(z[i], z[x], dl[i], dl[x], s1, t1, p, ty, tx, tmp, ln, dlo, dhi, r, q, sc)
            if ok == 0:
                ops[OP_SUMS] += 15
                b = sc[1, ln]
                _nan_out(stat, pval, lag, beta, alpha, e, k, b, sc[2, ln] + shift[i] - b * shift[x])
                continue
            ops[OP_SUMS] += 25 * p + 48
            flags[0, ln] = 1
            any_active = True
        if fast and any_active:
            tse = tsf[e * tw : (e + 1) * tw]
            vec_sums(zy, dly, zt, dlt, n_s, x0, i0, s1, t1, p, tse, pf, want, okv, wsf, tb, b2)
            ops[OP_SUMS] += NL * (25 * p + 48)
            any_active = False
            for ln in range(NL):
                if want[ln] == 0:
                    continue
                if okv[ln] == 0:
                    k = k0 + ln
                    b = sc[1, ln]
                    al = sc[2, ln] + shift[ii[k]] - b * shift[jj[k]]
                    _nan_out(stat, pval, lag, beta, alpha, e, k, b, al)
                    continue
                flags[0, ln] = 1
                any_active = True
        s0 = s1
        t0 = t1
        if not any_active:
            continue
        scan(p, t1 - s1 - p, ic, ws, ops)
        for ln in range(NL):
            if flags[0, ln] == 0:
                continue
            k = k0 + ln
            b = sc[1, ln]
            al = sc[2, ln] + shift[ii[k]] - b * shift[jj[k]]
            lg = flags[2, ln]
            if lg == 0 and p > 0:  # no lag column to factorise: solved here
                sv = refit_lag0(z, ii[k], jj[k], s1, t1, p, ln, ws, ops)
            elif 0 <= lg < p:  # refitted with the block's other jobs below
                refit_job(z, ii[k], jj[k], s1, t1, p, ln, ws, jobs, n_jobs, ops)
                job_at[n_jobs, 0] = e
                job_at[n_jobs, 1] = k
                beta[e, k] = b
                alpha[e, k] = al
                n_jobs += 1
                continue
            else:
                sv = sc[3, ln] if lg == p else nan
            if math.isnan(sv):
                _nan_out(stat, pval, lag, beta, alpha, e, k, b, al)
                continue
            stat[e, k] = sv
            pval[e, k] = mackinnon_p(sv, PVALUE_C2)
            ops[OP_PVALUE] += 11
            lag[e, k] = lg
            beta[e, k] = b
            alpha[e, k] = al
    refit_jobs(jobs, n_jobs, p, ws, job_order, job_stat, ops)
    for n in range(n_jobs):
        e = job_at[n, 0]
        k = job_at[n, 1]
        sv = job_stat[n]
        if math.isnan(sv):
            _nan_out(stat, pval, lag, beta, alpha, e, k, beta[e, k], alpha[e, k])
            continue
        stat[e, k] = sv
        pval[e, k] = mackinnon_p(sv, PVALUE_C2)
        ops[OP_PVALUE] += 11
        lag[e, k] = int(jobs[n, 4 * p + 4])
    for ln in range(nk):
        pvalid[k0 + ln] = valid[ln]


@njit(cache=True, nogil=True)
def pair_pass(  # type: ignore[no-untyped-def]
    z, dl, zt, dlt, ii, jj, shift, starts, ends, p, ic, prev_s, prev_t, tsums, tfin, tconst, pstate, pvalid,
    counts, stat, pval, lag, beta, alpha, counter, grain, ops, vec,
):  # fmt: skip
    """Every pair over every window of the call; outputs are (n_windows, n_pairs).

    zt, dlt: z and dl transposed (sessions by series); vec: 1 to take regular blocks eight
    lanes at a time (:func:`_block`), 0 for lane by lane everywhere.
    ``pstate[k // NL, :, k % NL]`` holds pair k's sums at [prev_s, prev_t] where ``pvalid[k]``;
    both are left at the last window; ``counts[k]`` accumulates (exact recomputes, slides). Blocks of NL pairs
    are taken ``grain`` at a time from ``counter[0]`` (atomically), so several threads may run
    this on the same arguments at once (it releases the GIL) and share the pairs as they come:
    a thread whose core is busy with other work takes fewer blocks. Each pair writes only its
    own state, counts and output slots; each thread adds its operations to its own ``ops`` row.
    """
    n_pairs = ii.shape[0]
    total = (n_pairs + NL - 1) // NL
    ws = workspace(p)
    max_jobs = NL * starts.shape[0]
    jobs = np.empty((max_jobs, job_width(p)))
    job_at = np.empty((max_jobs, 2), dtype=np.int64)
    job_stat = np.empty(max_jobs)
    job_order = np.empty(max_jobs, dtype=np.int64)
    lane_flags = (np.empty(NL, dtype=np.int8), np.empty(NL, dtype=np.int8))
    vw = (np.empty(p + 4), lane_flags[0], lane_flags[1], np.empty(NL), np.empty(NL))
    _, _, _, dlo, dhi, r, q, sc, _, _, _, _ = ws
    wsf = (dlo.reshape(-1), dhi.reshape(-1), r.reshape(-1), q.reshape(-1), sc.reshape(-1))
    flat = (zt.reshape(-1), dlt.reshape(-1), tsums.reshape(-1), wsf)
    while True:
        first = _fetch_add(counter, 0, grain)
        if first >= total:
            break
        for blk in range(first, min(first + grain, total)):
            k0 = blk * NL
            _block(
                k0, min(NL, n_pairs - k0), z, dl, flat, ii, jj, shift, starts, ends, p, ic, prev_s,
                prev_t, tsums, tfin, tconst, pstate, pvalid, counts, stat, pval, lag, beta, alpha, ws, vw,
                jobs, job_at, job_stat, job_order, ops, vec,
            )  # fmt: skip
