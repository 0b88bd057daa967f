"""numba kernels of the exact threshold search (fused passes; compiled on first use, cached)."""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["bound_scan", "dot_rows"]


@njit(cache=True, nogil=True, fastmath=True)
def bound_scan(ps_head: np.ndarray, ps_rest: np.ndarray, tail: np.ndarray, q_p: np.ndarray, nq_tail: float,
               rho_cos: np.ndarray,
               rho_sin: np.ndarray, cos_psi: np.ndarray, sin_psi: np.ndarray, offsets: np.ndarray,
               clusters: np.ndarray, nq_r: float, t_lo: float, out: np.ndarray) -> int:
    """For members of ``clusters`` (positions offsets[c]..offsets[c+1]) write into ``out`` the
    positions whose upper bound on the cosine is >= t_lo; returns how many were written.

    Bound = ps[i].q_p + nq_r*rho[i]*cos(|psi[c]-alpha[i]|), the cosine expanded as
    cos(psi)cos(alpha) + sin(psi)sin(alpha) with rho_cos = rho*cos(alpha), rho_sin = rho*sin(alpha)
    precomputed per member; ps[i] = (ps_head[i], ps_rest[i]). It is first taken with the
    leading projection dims only (a separate array, so a pruned row costs little memory
    traffic), the rest bounded by nq_tail*tail[i] (Cauchy-Schwarz; tail[i] = |ps_rest[i]|), and
    completed only for rows that pass."""
    m = 0
    head = ps_head.shape[1]
    rest = ps_rest.shape[1]
    for c in clusters:
        cc = nq_r * cos_psi[c]
        sc = nq_r * sin_psi[c]
        for i in range(offsets[c], offsets[c + 1]):
            ub = cc * rho_cos[i] + sc * rho_sin[i]
            for j in range(head):
                ub += ps_head[i, j] * q_p[j]
            if ub + nq_tail * tail[i] < t_lo:
                continue
            for j in range(rest):
                ub += ps_rest[i, j] * q_p[head + j]
            if ub >= t_lo:
                out[m] = i
                m += 1
    return m


@njit(cache=True, nogil=True, fastmath=True)
def dot_rows(x: np.ndarray, rows: np.ndarray, q: np.ndarray, out: np.ndarray) -> None:
    """out[k] = x[rows[k]] . q in float32 (a filter only: exact values come from float64)."""
    d = x.shape[1]
    for k in range(rows.shape[0]):
        i = rows[k]
        s = np.float32(0.0)
        for j in range(d):
            s += x[i, j] * q[j]
        out[k] = s
