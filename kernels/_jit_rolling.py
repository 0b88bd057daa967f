"""Private numba kernel for rolling means and co-moments (hedge ratio, z-score, correlation).

One pass, O(1) work per step: Welford-style updates add the entering pair of values and remove
the leaving one. Removal updates can accumulate rounding (a large value leaving the window
leaves its rounding error behind), so every ``window`` steps the sums are recomputed exactly
from the window (two-pass); that costs O(window) once per ``window`` steps, i.e. O(1)
amortised, and bounds the drift to one window's worth of updates; a removal that cancels
most of a sum of squares (a dominant value leaving) triggers the recompute at once. Windows are checked for
constancy exactly, by counting value changes inside the window, so a constant window is
reported as such instead of as a tiny rounding residue.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["rolling_comoments", "run_comoments"]

# A removal that shrinks a sum of squares below this fraction of its value triggers an exact
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
def rolling_comoments(a, b, window, mean_a, mean_b, c_aa, c_bb, c_ab, flat_a, flat_b):  # type: ignore[no-untyped-def]
    """Means and centred sums of squares / cross products of a and b over each trailing window.

    Output index t describes a[t - window + 1 .. t]; entries before window - 1 and of windows
    holding a NaN are left as the caller initialised them (NaN). ``flat_a[t]`` / ``flat_b[t]``
    are True when every value of that window of a / b is equal.
    """
    n = a.shape[0]
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
        if math.isnan(at) or math.isnan(bt):
            n_nan += 1
        else:
            cnt += 1
            da = at - ma
            db = bt - mb
            ma += da / cnt
            mb += db / cnt
            saa += da * (at - ma)
            sbb += db * (bt - mb)
            sab += da * (bt - mb)
        if t >= 1:
            changes_a += a[t] != a[t - 1]
            changes_b += b[t] != b[t - 1]
        if t >= window:
            o = t - window
            ao = a[o]
            bo = b[o]
            if math.isnan(ao) or math.isnan(bo):
                n_nan -= 1
            elif cnt == 1:
                cnt = 0
                ma = mb = saa = sbb = sab = 0.0
            else:
                before_a = saa
                before_b = sbb
                cnt -= 1
                da = ao - ma
                db = bo - mb
                ma -= da / cnt
                mb -= db / cnt
                saa -= da * (ao - ma)
                sbb -= db * (bo - mb)
                sab -= da * (bo - mb)
                if saa < _SHRINK * before_a or sbb < _SHRINK * before_b:
                    # a dominant value (outlier, jump) just left: its rounding residue would
                    # swamp the remaining sums, so recompute exactly at the next full window
                    since_exact = window
            changes_a -= a[o + 1] != a[o]
            changes_b -= b[o + 1] != b[o]
        since_exact += 1
        if t >= window - 1 and n_nan == 0:
            if since_exact >= window:
                ma, mb, saa, sbb, sab = _exact(a, b, t - window + 1, t + 1)
                since_exact = 0
            mean_a[t] = ma
            mean_b[t] = mb
            c_aa[t] = max(saa, 0.0)
            c_bb[t] = max(sbb, 0.0)
            c_ab[t] = sab
            flat_a[t] = changes_a == 0
            flat_b[t] = changes_b == 0


def run_comoments(a: np.ndarray, b: np.ndarray, window: int) -> tuple[np.ndarray, ...]:
    """Allocate NaN / False outputs and run :func:`rolling_comoments`; returns its 7 arrays."""
    n = a.shape[0]
    outs = [np.full(n, np.nan) for _ in range(5)]
    flats = [np.zeros(n, dtype=np.bool_) for _ in range(2)]
    rolling_comoments(a, b, window, *outs, *flats)
    return (*outs, *flats)
