"""Private numba kernel for rolling means and co-moments (hedge ratio, z-score, correlation).

One pass, O(1) work per step. While the window is full of valid values each step replaces the
leaving pair of values by the entering one with a Welford-style sliding update (no division);
around NaN it falls back to separate remove / add updates. Removal can leave rounding behind
(a large value leaving the window leaves its rounding residue), so every ``window`` steps the
sums are recomputed exactly from the window (two-pass): O(window) once per ``window`` steps,
i.e. O(1) amortised, bounding the drift to one window's worth of updates; an update that
cancels most of a sum of squares (a dominant value leaving) triggers the recompute at once.
Windows are checked for constancy exactly, by counting value changes inside the window, so a
constant window is reported as such instead of as a tiny rounding residue.

The kernel writes final outputs according to ``mode``: MODE_HEDGE (out1 = alpha, out2 = beta
of b on a), MODE_ZSCORE (out1 = z of the newest a, ddof 1), MODE_CORR (out1 = Pearson r).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["MODE_HEDGE", "MODE_ZSCORE", "MODE_CORR", "rolling_kernel", "run_rolling"]

MODE_HEDGE = 0
MODE_ZSCORE = 1
MODE_CORR = 2
# An update that shrinks a sum of squares below this fraction of its value triggers an exact
# recompute (that many digits of the sum were cancelled).
_SHRINK = 1e-2


@njit(cache=True)
def _exact(a, b, lo, hi):  # type: ignore[no-untyped-def]
    """Two-pass means and centred co-moments of a[lo:hi], b[lo:hi]."""
    m = hi - lo
    sa = 0.0
    sb = 0.0
    for t in range(lo, hi):
        sa += a[t]
        sb += b[t]
    ma = sa / m
    mb = sb / m
    caa = 0.0
    cbb = 0.0
    cab = 0.0
    for t in range(lo, hi):
        da = a[t] - ma
        db = b[t] - mb
        caa += da * da
        cbb += db * db
        cab += da * db
    return ma, mb, caa, cbb, cab


@njit(cache=True)
def rolling_kernel(a, b, window, mode, out1, out2):  # type: ignore[no-untyped-def]
    """Rolling statistic of a and b over each trailing window; see the module docstring.

    Output index t describes a[t - window + 1 .. t]; entries before window - 1, of windows
    holding a NaN and of degenerate windows (constant a; for MODE_CORR also constant b) are
    left as the caller initialised them (NaN).
    """
    n = a.shape[0]
    inv_w = 1.0 / window
    cnt = 0
    ma = 0.0
    mb = 0.0
    saa = 0.0
    sbb = 0.0
    sab = 0.0
    n_nan = 0
    changes_a = 0
    changes_b = 0
    since_exact = 0
    for t in range(n):
        at = a[t]
        bt = b[t]
        in_ok = not (math.isnan(at) or math.isnan(bt))
        if t >= 1:
            changes_a += at != a[t - 1]
            changes_b += bt != b[t - 1]
        if t >= window:
            o = t - window
            ao = a[o]
            bo = b[o]
            out_ok = not (math.isnan(ao) or math.isnan(bo))
            changes_a -= a[o + 1] != ao
            changes_b -= b[o + 1] != bo
        else:
            ao = bo = 0.0
            out_ok = False
        before_a = saa
        before_b = sbb
        if in_ok and out_ok and cnt == window:
            # sliding replace: means move by (in - out) / window
            na = ma + (at - ao) * inv_w
            nb = mb + (bt - bo) * inv_w
            saa += (at - ma) * (at - na) - (ao - ma) * (ao - na)
            sbb += (bt - mb) * (bt - nb) - (bo - mb) * (bo - nb)
            sab += (at - ma) * (bt - nb) - (ao - ma) * (bo - nb)
            ma = na
            mb = nb
        else:
            if t >= window:
                if not out_ok:
                    n_nan -= 1
                elif cnt == 1:
                    cnt = 0
                    ma = mb = saa = sbb = sab = 0.0
                else:
                    cnt -= 1
                    da = ao - ma
                    db = bo - mb
                    ma -= da / cnt
                    mb -= db / cnt
                    saa -= da * (ao - ma)
                    sbb -= db * (bo - mb)
                    sab -= da * (bo - mb)
            if in_ok:
                cnt += 1
                da = at - ma
                db = bt - mb
                ma += da / cnt
                mb += db / cnt
                saa += da * (at - ma)
                sbb += db * (bt - mb)
                sab += da * (bt - mb)
            else:
                n_nan += 1
        if saa < _SHRINK * before_a or sbb < _SHRINK * before_b:
            since_exact = window
        since_exact += 1
        if t < window - 1 or n_nan > 0:
            continue
        if since_exact >= window:
            ma, mb, saa, sbb, sab = _exact(a, b, t - window + 1, t + 1)
            since_exact = 0
        if changes_a == 0:
            continue
        caa = max(saa, 0.0)
        if mode == MODE_HEDGE:
            beta = sab / caa
            out1[t] = mb - beta * ma
            out2[t] = beta
        elif mode == MODE_ZSCORE:
            out1[t] = (at - ma) / math.sqrt(caa / (window - 1))
        elif changes_b > 0:
            r = sab / math.sqrt(caa * max(sbb, 0.0))
            out1[t] = min(1.0, max(-1.0, r))


def run_rolling(a: np.ndarray, b: np.ndarray, window: int, mode: int) -> tuple[np.ndarray, np.ndarray]:
    """Allocate NaN outputs and run :func:`rolling_kernel`; returns (out1, out2)."""
    out1 = np.full(a.shape[0], np.nan)
    out2 = np.full(a.shape[0], np.nan) if mode == MODE_HEDGE else out1[:0]
    rolling_kernel(a, b, window, mode, out1, out2)
    return out1, out2
