"""Private numba kernels: the sliding screen's pair sums and regression sums eight pairs at a
time, for a block whose pairs share their first leg and take consecutive second legs
(pairs (i, x0), ..., (i, x0 + 7): every block of a row of the pair list but the row's last).

The per-lane kernels (:func:`kernels._jit_sliding._pair_slide`, :func:`kernels._jit_lanes.lane_sums`)
read each pair's two legs from the panel's rows, a few scalars at a time per lane. Here the
second legs come from the panel transposed (sessions by series), where the eight legs of a
block are eight consecutive numbers at every session, and the first leg is one number shared
by the lanes, so every step is one operation across the lanes on consecutive memory (the loops
over the lanes are eight-wide instructions, :func:`kernels._simd.vexpr`). Each lane's
arithmetic is the per-lane kernels' own, operation for operation and in the same order, so the
results are the same numbers.

A block's pair sums are held lane-interleaved, ``pst[b, ln]`` (:func:`kernels._jit_sliding.pair_width`
rows of eight), as every block's are.
"""

from __future__ import annotations

from numba import njit

from kernels._jit import SQRTEPS
from kernels._jit_lanes import NL
from kernels._simd import vexpr

__all__ = ["vec_slide", "vec_sums"]

# one line each: dst = the expression, d the destination's value, v the vectors, s the scalars
_ROW = vexpr(lambda d, v, s: d + (s[0] * v[0] + v[1] * s[1]))
_SCALE = vexpr(lambda d, v, s: s[0] * v[0])
_LEVEL = vexpr(lambda d, v, s: d + s[0] * (s[1] * v[0] + v[1] * s[2]))
_ADD = vexpr(lambda d, v, s: d + s[0] * v[0])
_SUB = vexpr(lambda d, v, s: d - s[0] * v[0])
_DIFF = vexpr(lambda d, v, s: s[0] - v[0] * v[1])
_SHIFT = vexpr(lambda d, v, s: d + ((((v[0] + s[0] * v[1]) + v[2] * s[1]) - s[2] * v[3]) - v[4] * s[3]))
_SQUARE = vexpr(lambda d, v, s: v[0] * v[0])
_R = vexpr(lambda d, v, s: (s[0] - v[0] * v[1]) + v[2] * v[3])
_Q = vexpr(lambda d, v, s: ((s[0] - v[0] * v[1]) + v[2] * v[3]) - v[4] * (s[1] - v[0] * v[5]))


@njit(cache=True)
def _vec_row(zy, dly, ztf, dltf, n_s, x0, j, p, sign, pf, bx):  # type: ignore[no-untyped-def]
    a = sign * dly[j]
    dif = j * n_s + x0
    _SCALE(bx, 0, (dltf,), (dif,), (sign,))
    for b in range(p + 1):
        _ROW(pf, b * NL, (dltf, bx), ((j - b) * n_s + x0, 0), (a, dly[j - b]))
    zj = zy[j]
    _LEVEL(pf, (p + 1) * NL, (dltf, ztf), (dif, dif), (sign, zj, dly[j]))
    _ADD(pf, (p + 2) * NL, (ztf,), (dif,), (sign * zj,))


@njit(cache=True)
def vec_slide(zy, dly, ztf, dltf, n_s, x0, s0, t0, s1, t1, p, pf, bx):  # type: ignore[no-untyped-def]
    """Move the block's sums ``pf`` (its (width, NL) sums, flat) from [s0, t0] to [s1, t1], as
    :func:`kernels._jit_sliding._pair_slide` does for one pair. zy, dly: the first leg's rows;
    ztf, dltf: the panel transposed (sessions by ``n_s`` series), flat; bx: workspace of NL."""
    for j in range(s0 + p, s1 + p):
        _vec_row(zy, dly, ztf, dltf, n_s, x0, j, p, -1.0, pf, bx)
    for j in range(t0, t1):
        _vec_row(zy, dly, ztf, dltf, n_s, x0, j, p, 1.0, pf, bx)
    for c in range(s0, s1):
        _SUB(pf, (p + 3) * NL, (ztf,), (c * n_s + x0,), (zy[c],))
    for c in range(t0 + 1, t1 + 1):
        _ADD(pf, (p + 3) * NL, (ztf,), (c * n_s + x0,), (zy[c],))


@njit(cache=True)
def vec_sums(zy, dly, ztf, dltf, n_s, x0, i0, s, t, p, tsf, pf, want, ok, wsf, tb, b2):  # type: ignore[no-untyped-def]
    """:func:`kernels._jit_lanes.lane_sums` for the lanes with ``want[ln]``, eight at a time:
    ``ok[ln]`` 1 where the sums were formed, 0 where the legs are collinear (beta and a still
    set). tsf: the window's ticker sums by series, flat (``tsf[b * n_s + u]``); pf: the block's
    sums, flat; wsf: the flat views (dlo, dhi, r, q, sc) of the lane workspace; tb, b2:
    workspaces of NL. Lanes without ``want`` compute on beta = a = 0 and are not used."""
    lof, hif, rf, qf, scf = wsf
    n = t - s + 1
    w5 = (3 * p + 5) * n_s
    w6 = (3 * p + 6) * n_s
    my = tsf[w5 + i0] / n
    syy = tsf[w6 + i0] - tsf[w5 + i0] * my
    for ln in range(NL):
        ok[ln] = 0
        scf[NL + ln] = 0.0
        scf[2 * NL + ln] = 0.0
        if want[ln] == 0:
            continue
        x = x0 + ln
        mx = tsf[w5 + x] / n
        sxx = tsf[w6 + x] - tsf[w5 + x] * mx
        sxy = pf[(p + 3) * NL + ln] - tsf[w5 + x] * my
        beta = sxy / sxx
        a = my - beta * mx
        scf[NL + ln] = beta
        scf[2 * NL + ln] = a
        ssr = syy - beta * sxy
        if not 1.0 - ssr / syy >= 1.0 - 100.0 * SQRTEPS:
            ok[ln] = 1
    for c in range(p):
        _DIFF(lof, c * NL, (scf, dltf), (NL, (s + c) * n_s + x0), (dly[s + c],))
        _DIFF(hif, c * NL, (scf, dltf), (NL, (t - p + c) * n_s + x0), (dly[t - p + c],))
    j0 = s + p
    zy0 = zy[j0]
    zyt = zy[t]
    for ln in range(NL):
        tb[ln] = pf[(p + 1) * NL + ln]
    _SQUARE(b2, 0, (scf,), (NL,), (0.0,))
    for b in range(p + 1):
        if b > 0:
            _SHIFT(tb, 0, (pf, dltf, ztf, dltf, ztf),
                   ((b - 1) * NL, (j0 - b) * n_s + x0, j0 * n_s + x0, (t - b) * n_s + x0, t * n_s + x0),
                   (zy0, dly[j0 - b], zyt, dly[t - b]))  # fmt: skip
        _R(rf, b * NL, (scf, pf, b2, tsf), (NL, b * NL, 0, b * n_s + x0), (tsf[b * n_s + i0],))
        _Q(qf, b * NL, (scf, tb, b2, tsf, scf, tsf),
           (NL, 0, 0, (p + 1 + b) * n_s + x0, 2 * NL, (2 * p + 2 + b) * n_s + x0),
           (tsf[(p + 1 + b) * n_s + i0], tsf[(2 * p + 2 + b) * n_s + i0]))  # fmt: skip
    m = n - 1 - p
    w3 = (3 * p + 3) * n_s
    w4 = (3 * p + 4) * n_s
    myj = tsf[w3 + i0] / m
    cyy = tsf[w4 + i0] - tsf[w3 + i0] * myj
    for ln in range(NL):
        x = x0 + ln
        be = scf[NL + ln]
        mxj = tsf[w3 + x] / m
        cxx = tsf[w4 + x] - tsf[w3 + x] * mxj
        cxy = pf[(p + 2) * NL + ln] - tsf[w3 + x] * myj
        off = myj - scf[2 * NL + ln] - be * mxj
        scf[ln] = (cyy - be * cxy) - be * (cxy - be * cxx) + m * off * off
