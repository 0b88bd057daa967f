"""numba kernels of the exact threshold search (fused, single-threaded: on a shared 2-core
machine parallel regions ran 2-3x slower; compiled on
first use and cached on disk)."""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["bound_scan", "dot_rows"]


@njit(cache=True, nogil=True, fastmath=True)
def bound_scan(ps_a: np.ndarray, ps_b: np.ndarray, ps_c: np.ndarray, tail_a: np.ndarray, tail_b: np.ndarray,
               q_p: np.ndarray, nq_tail_a: float, nq_tail_b: float, rho_cos: np.ndarray, rho_sin: np.ndarray,
               cos_psi: np.ndarray, sin_psi: np.ndarray, offsets: np.ndarray, clusters: np.ndarray, nq_r: float,
               t_lo: float, mask: np.ndarray) -> None:
    """Set mask[i] for members i of ``clusters`` (positions offsets[c]..offsets[c+1]) whose upper
    bound on the cosine with the query is >= t_lo (mask must start all False).

    Bound = ps[i].q_p + nq_r*rho[i]*cos(|psi[c]-alpha[i]|), the cosine expanded as
    cos(psi)cos(alpha) + sin(psi)sin(alpha) with rho_cos = rho*cos(alpha), rho_sin =
    rho*sin(alpha) precomputed per member. The projection ps[i] = (ps_a, ps_b, ps_c)[i] is
    summed in three stages; after each of the first two the rest is bounded by Cauchy-Schwarz
    (nq_tail_a*tail_a[i] = |q rest| |ps rest| after stage a, likewise b), so most rows stop
    after the first, small, separately stored stage and cost little memory traffic."""
    na = ps_a.shape[1]
    nb = ps_b.shape[1]
    nc = ps_c.shape[1]
    for k in range(clusters.shape[0]):
        c = clusters[k]
        cc = nq_r * cos_psi[c]
        sc = nq_r * sin_psi[c]
        for i in range(offsets[c], offsets[c + 1]):
            u = cc * rho_cos[i] + sc * rho_sin[i]
            for j in range(na):
                u += ps_a[i, j] * q_p[j]
            if u + nq_tail_a * tail_a[i] < t_lo:
                continue
            for j in range(nb):
                u += ps_b[i, j] * q_p[na + j]
            if u + nq_tail_b * tail_b[i] < t_lo:
                continue
            for j in range(nc):
                u += ps_c[i, j] * q_p[na + nb + j]
            if u >= t_lo:
                mask[i] = True


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
