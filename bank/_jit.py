"""numba kernels of the exact threshold search (single-threaded: on a shared 2-core machine
parallel regions ran 2-3x slower; compiled on first use and cached on disk).

The bound kernels use fastmath (their float32 rounding, ~1e-5 at most, is far inside the search
margin); the canonical float64 dot product does not, because its summation order is part of
its definition.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["dot64", "sims64", "scan_a", "scan_b", "filter32", "decide64"]

_SCAN_BLOCK = 2048  # rows per block of the column-major scan (its accumulators stay in L1)


@njit(cache=True, nogil=True)
def dot64(row: np.ndarray, q64: np.ndarray) -> float:
    """Canonical similarity of one float32 row with a float64 query: products in float64,
    eight running sums over j = 0..7 (mod 8) in index order (the remainder goes to the first),
    combined as ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)). No fastmath, so no
    reassociation or fused multiply-add: the value is the same bit pattern whatever batch,
    machine or code path computes it (plain Python included)."""
    d = row.shape[0]
    m = d - d % 8
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    for j in range(0, m, 8):
        s0 += np.float64(row[j]) * q64[j]
        s1 += np.float64(row[j + 1]) * q64[j + 1]
        s2 += np.float64(row[j + 2]) * q64[j + 2]
        s3 += np.float64(row[j + 3]) * q64[j + 3]
        s4 += np.float64(row[j + 4]) * q64[j + 4]
        s5 += np.float64(row[j + 5]) * q64[j + 5]
        s6 += np.float64(row[j + 6]) * q64[j + 6]
        s7 += np.float64(row[j + 7]) * q64[j + 7]
    for j in range(m, d):
        s0 += np.float64(row[j]) * q64[j]
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))


@njit(cache=True, nogil=True)
def sims64(x: np.ndarray, q64: np.ndarray, out: np.ndarray) -> None:
    """out[i] = dot64(x[i], q64) for every row of ``x``."""
    for i in range(x.shape[0]):
        out[i] = dot64(x[i], q64)


@njit(cache=True, nogil=True, fastmath=True)
def scan_a(
    codes_t: np.ndarray,
    qs: np.ndarray,
    err: np.ndarray,
    rho: np.ndarray,
    nq: float,
    nq_rest: float,
    t_lo: float,
    start: int,
    stop: int,
    labels: np.ndarray,
    acc_out: np.ndarray,
) -> int:
    """First stage over rows start..stop-1: codes_t (p, capacity) int8, column-major so that each
    projection dimension is one contiguous run and the loop vectorises across rows.

    For row i the bound is sum_j codes_t[j, i] * qs[j] + nq * err[i] + nq_rest * rho[i];
    rows with bound >= t_lo are written to ``labels`` (ascending) with their partial sum (the
    code part only) in ``acc_out``. Returns how many.
    """
    p = codes_t.shape[0]
    acc = np.zeros(_SCAN_BLOCK, dtype=np.float32)
    ub = np.zeros(_SCAN_BLOCK, dtype=np.float32)
    m = 0
    for lo in range(start, stop, _SCAN_BLOCK):
        hi = min(stop, lo + _SCAN_BLOCK)
        w = hi - lo
        for i in range(w):
            acc[i] = 0.0
        for j in range(p):
            qj = qs[j]
            col = codes_t[j, lo:hi]
            for i in range(w):
                acc[i] += np.float32(col[i]) * qj
        eb = err[lo:hi]
        rb = rho[lo:hi]
        for i in range(w):
            ub[i] = acc[i] + nq * eb[i] + nq_rest * rb[i]
        for i in range(w):  # a branch: kept rows are few at useful thresholds
            if ub[i] >= t_lo:
                labels[m] = lo + i
                acc_out[m] = acc[i]
                m += 1
    return m


@njit(cache=True, nogil=True, fastmath=True)
def scan_b(
    rec8: np.ndarray,
    rec: np.ndarray,
    off: int,
    w: int,
    qs: np.ndarray,
    labels: np.ndarray,
    acc: np.ndarray,
    m: int,
    nq: float,
    nq_rest: float,
    t_lo: float,
) -> int:
    """A later stage for the ``m`` rows kept so far. Each row's record is ``rec[i]`` (float32
    words) and ``rec8[i]`` (the same bytes): this stage's codes are rec8[i, off:off+len(qs)],
    its coding-error and off-prefix norms rec[i, w] and rec[i, w+1]. Adds the codes' part to
    each partial sum and keeps (in place, order kept, labels and partial sums together) the
    rows whose bound acc + nq * err + nq_rest * rho is still >= t_lo."""
    p = qs.shape[0]
    k = 0
    for r in range(m):
        i = labels[r]
        codes = rec8[i, off : off + p]
        s = acc[r]
        for j in range(p):
            s += np.float32(codes[j]) * qs[j]
        labels[k] = i
        acc[k] = s
        k += np.int64(s + nq * rec[i, w] + nq_rest * rec[i, w + 1] >= t_lo)
    return k


@njit(cache=True, nogil=True, fastmath=True)
def filter32(x: np.ndarray, labels: np.ndarray, m: int, q32: np.ndarray, lo: float) -> int:
    """Keep (in place, order kept) the first ``m`` labels whose float32 dot product with ``q32``
    is >= lo; returns how many. A filter only: its rounding is far below the search margin."""
    d = x.shape[1]
    k = 0
    for r in range(m):
        i = labels[r]
        row = x[i]
        s = np.float32(0.0)
        for j in range(d):
            s += row[j] * q32[j]
        labels[k] = i
        k += np.int64(s >= lo)
    return k


@njit(cache=True, nogil=True)
def decide64(
    x: np.ndarray,
    labels: np.ndarray,
    m: int,
    q64: np.ndarray,
    threshold: float,
    out_labels: np.ndarray,
    out_sims: np.ndarray,
) -> int:
    """Rows among the first ``m`` labels whose canonical :func:`dot64` is >= threshold go to the
    outputs; returns how many. Not fastmath, and it must not be: numba compiles a function
    called from a fastmath function with fastmath too (measured), so dot64 is only ever called
    from functions without it."""
    k = 0
    for r in range(m):
        i = labels[r]
        v = dot64(x[i], q64)
        if v >= threshold:
            out_labels[k] = i
            out_sims[k] = v
            k += 1
    return k
