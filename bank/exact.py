"""Exact cosine-threshold search: every stored vector with similarity >= t, provably none missed.

hnswlib is approximate even for its own top-k (at 1M entries, ef=200 missed 0.5% of the entries
above tau in the issue's measurement), so threshold results are not taken from it. Instead
this index prunes with bounds that are true inequalities, and computes exact dot products only
for what the bounds cannot exclude:

Write a unit row as x = V^T p + r: p its projection on V, an orthonormal basis of the top
uncentred principal directions (fitted on a sample; sentence embeddings share a strong common
direction and a fast-decaying spectrum), and r the residual. Then q.x = p_q.p + r_q.r, and

1. *Projection part*: p_q.p is summed exactly in float32, in three stages (16, 16, rest of
   the dims); after each stage the remainder is bounded by Cauchy-Schwarz, |p_q rest||p rest|,
   so most rows stop after 16 dims.
2. *Residual part*: r_q.r <= |r_q||r| cos(|psi - alpha|), where residual directions are
   partitioned by spherical k-means, psi is the angle between r_q and the cluster centroid u
   and alpha the angle between r and u (spherical triangle inequality). A whole cluster is
   skipped when a cluster-wide version of the bound (largest alpha, largest |r|, mean and
   radius of the projections) is below the threshold.
3. Rows passing the bound get a float32 dot product; rows within 1e-4 of the threshold are
   decided by the canonical float64 dot product, so results equal a float64 brute force.

Every bound is relaxed by a margin of 1e-4 (much larger than float32 rounding at dim <= 4096),
so pruning errs only towards scanning more. Rows added after the partition was built form an
unpartitioned tail bounded by |r_q||r| alone; the partition is rebuilt when the tail grows.
How much the bounds prune depends on the data: the benchmark (bench/retrieval.py) reports the
fraction of rows that still needed a dot product and the speed against numpy brute force.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

import numpy as np

from bank._jit import bound_scan, dot_rows
from bank.errors import BankConfigError

__all__ = ["ExactConfig", "ExactThresholdIndex", "SearchStats", "exact_sims", "brute_force_threshold"]

log = logging.getLogger(__name__)

_MARGIN = 1e-4  # slack on every bound and on the float32 decision, in cosine units
_SCAN_FRACTION = 0.3  # above this fraction of candidate rows, scan all rows in order instead
_STAGE_DIMS = (16, 32)  # projection dims after which the fused scan tries to stop early
_BLOCK = 65_536  # rows per block in blocked passes (bounds peak memory)


def exact_sims(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Canonical similarity: float64 dot products of rows of ``x`` (m, d) with ``q`` (d,).

    einsum's own loop (not BLAS) sums each row in a fixed order, so a row's value does not
    depend on which other rows are computed with it; BLAS gemv differs by an ulp across shapes.
    """
    return np.einsum("ij,j->i", np.asarray(x, dtype=np.float64), np.asarray(q, dtype=np.float64))


def brute_force_threshold(x: np.ndarray, q: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Reference oracle: (labels, sims) of all rows with float64 similarity >= ``threshold``,
    ordered by descending similarity then ascending label."""
    sims = np.empty(len(x), dtype=np.float64)
    for lo in range(0, len(x), _BLOCK):
        sims[lo : lo + _BLOCK] = exact_sims(x[lo : lo + _BLOCK], q)
    labels = np.flatnonzero(sims >= threshold)
    return _ordered(labels, sims[labels])


def _ordered(labels: np.ndarray, sims: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((labels, -sims))
    return labels[order].astype(np.int64), sims[order]


@dataclass(frozen=True)
class ExactConfig:
    """Tuning of :class:`ExactThresholdIndex`; none of it changes results, only speed."""

    min_partition: int = 20_000  # below this many rows: one blocked float32 scan, no partition
    n_clusters: int | None = None  # k-means clusters; None = 2*sqrt(rows) clipped to [16, 4096]
    pca_dims: int = 64  # dimensions of the projection bound (0 disables it)
    kmeans_iters: int = 8  # Lloyd iterations on the sample
    kmeans_sample: int = 65_536  # rows used to fit centroids and the projection basis
    rebuild_growth: float = 0.25  # re-partition when the unpartitioned tail exceeds this fraction
    seed: int = 0  # k-means initialisation

    def __post_init__(self) -> None:
        if self.min_partition < 1:
            raise BankConfigError(f"min_partition must be >= 1, got {self.min_partition}")
        if self.n_clusters is not None and self.n_clusters < 1:
            raise BankConfigError(f"n_clusters must be None or >= 1, got {self.n_clusters}")
        if self.pca_dims < 0:
            raise BankConfigError(f"pca_dims must be >= 0, got {self.pca_dims}")
        if self.kmeans_iters < 1 or self.kmeans_sample < 1:
            raise BankConfigError("kmeans_iters and kmeans_sample must be >= 1")
        if not 0 < self.rebuild_growth:
            raise BankConfigError(f"rebuild_growth must be > 0, got {self.rebuild_growth}")


@dataclass(frozen=True)
class SearchStats:
    """Work done by one search, in rows (for benchmarks and tests)."""

    rows: int  # rows searched (the snapshot size)
    clusters_kept: int  # clusters the cluster bound could not exclude
    rows_bounded: int  # rows that reached the projection bound
    rows_dotted: int  # rows that got a float32 dot product
    rows_float64: int  # rows decided or ordered with the float64 dot product


class ExactThresholdIndex:
    """In-memory float32 unit vectors with labels 0..n-1 and exact threshold search.

    Thread-safe: adds and searches take one lock (searches are short).
    """

    def __init__(self, dim: int, config: ExactConfig | None = None) -> None:
        if dim < 1:
            raise BankConfigError(f"dim must be >= 1, got {dim}")
        self.dim = dim
        self.config = config or ExactConfig()
        self._x = np.zeros((0, dim), dtype=np.float32)
        self._n = 0
        self._lock = threading.RLock()
        self._parted = 0  # rows [0, _parted) are in the partition
        self._basis: np.ndarray | None = None  # (r, dim) float64 rows orthonormal
        self._proj = np.zeros((0, 0), dtype=np.float32)  # per-row projections, label order
        self._resid = np.zeros(0, dtype=np.float64)  # per-row residual norms (rounded up)
        # _proj/_resid share _x's capacity once a basis exists
        self._cent: np.ndarray | None = None  # (K, dim) unit centroids
        self._cent64 = np.zeros((0, dim))
        self._theta = np.zeros(0)  # per-cluster largest member angle (radians)
        self._offsets = np.zeros(1, dtype=np.int64)
        self._order = np.zeros(0, dtype=np.int64)  # labels sorted by cluster
        # partition arrays, members in cluster order ("_s"): see build_partition
        # member residual norm rho times cos/sin of alpha, the angle between the member's
        # residual direction and its centroid
        self._rho_cos = np.zeros(0, dtype=np.float32)
        self._rho_sin = np.zeros(0, dtype=np.float32)
        # member projections split at _STAGE_DIMS into three contiguous arrays, and the norms of
        # the projection beyond the first and second split (rounded up)
        self._ps_a = self._ps_b = self._ps_c = np.zeros((0, 0), dtype=np.float32)
        self._tail_a = self._tail_b = np.zeros(0, dtype=np.float32)
        self._c_p = np.zeros((0, 0))  # per-cluster mean projection
        self._r_p = np.zeros(0)  # per-cluster largest projection distance to c_p
        self._rho_max = np.zeros(0)  # per-cluster largest residual norm
        self.last_stats: SearchStats | None = None

    def __len__(self) -> int:
        return self._n

    @property
    def vectors(self) -> np.ndarray:
        """Read-only view of the stored vectors (n, dim)."""
        view = self._x[: self._n]
        view.flags.writeable = False
        return view

    # ----------------------------------------------------------------- building
    def add(self, vectors: np.ndarray) -> np.ndarray:
        """Append unit vectors (m, dim); returns their labels (consecutive ints)."""
        v = np.ascontiguousarray(vectors, dtype=np.float32)
        if v.ndim != 2 or v.shape[1] != self.dim:
            raise BankConfigError(f"vectors must have shape (m, {self.dim}), got {v.shape}")
        with self._lock:
            need = self._n + len(v)
            if need > len(self._x):  # grow before exceeding capacity
                cap = max(need, 2 * len(self._x), 1024)
                self._x = _grown(self._x, cap, self._n)
                self._proj = _grown(self._proj, cap, self._n)
                self._resid = _grown(self._resid, cap, self._n)
            self._x[self._n : need] = v
            if self._basis is not None and self._parted:
                self._proj[self._n : need], self._resid[self._n : need] = self._project(v)
            labels = np.arange(self._n, need, dtype=np.int64)
            self._n = need
            self._maybe_repartition()
            return labels

    def _project(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        assert self._basis is not None
        p = np.empty((len(v), len(self._basis)), dtype=np.float32)
        r = np.empty(len(v), dtype=np.float64)
        for lo in range(0, len(v), _BLOCK):
            blk = np.asarray(v[lo : lo + _BLOCK], dtype=np.float64)
            pb = blk @ self._basis.T
            p[lo : lo + _BLOCK] = pb
            r[lo : lo + _BLOCK] = np.linalg.norm(blk - pb @ self._basis, axis=1)
        return p, r * (1 + 1e-6) + 1e-6

    def _maybe_repartition(self) -> None:
        cfg = self.config
        if self._n < cfg.min_partition:
            return
        if self._parted and (self._n - self._parted) <= cfg.rebuild_growth * self._parted:
            return
        self.build_partition()

    def build_partition(self) -> None:
        """(Re)fit the projection basis and the k-means partition of residual directions."""
        with self._lock:
            t0 = time.perf_counter()
            cfg = self.config
            n = self._n
            x = self._x[:n]
            rng = np.random.default_rng(cfg.seed)
            sample_idx = np.sort(rng.choice(n, size=min(n, cfg.kmeans_sample), replace=False))
            r = min(cfg.pca_dims, self.dim - 1, len(sample_idx))
            if r > 0:
                s64 = np.asarray(x[sample_idx], dtype=np.float64)
                _, vecs = np.linalg.eigh(s64.T @ s64)  # uncentred PCA: ascending eigenvalues
                self._basis = np.ascontiguousarray(vecs[:, ::-1][:, :r].T)
            else:
                self._basis = np.zeros((0, self.dim))
            self._proj = np.zeros((len(self._x), r), dtype=np.float32)
            self._resid = np.zeros(len(self._x), dtype=np.float64)
            self._proj[:n], self._resid[:n] = self._project(x)
            rdir = self._residual_dirs(x, self._proj[:n])
            k = cfg.n_clusters or int(np.clip(2 * np.sqrt(n), 16, 4096))
            k = min(k, len(sample_idx))
            cent = _spherical_kmeans(rdir[sample_idx], k, cfg.kmeans_iters, rng)
            assign, cosv = _assign(rdir, cent)
            order = np.argsort(assign, kind="stable").astype(np.int64)
            counts = np.bincount(assign, minlength=k)
            offsets = np.zeros(k + 1, dtype=np.int64)
            np.cumsum(counts, out=offsets[1:])
            alpha = np.arccos(np.clip(cosv, -1.0, 1.0))
            theta = np.zeros(k)
            np.maximum.at(theta, assign, alpha)
            rho_max = np.zeros(k)
            np.maximum.at(rho_max, assign, self._resid[:n])
            ps = self._proj[:n][order]
            c_p = np.zeros((k, r))
            r_p = np.zeros(k)
            present = np.flatnonzero(counts)
            if r > 0 and len(present):
                c_p[present] = np.add.reduceat(ps.astype(np.float64), offsets[present], axis=0) / counts[present, None]
                dist = np.linalg.norm(ps.astype(np.float64) - c_p[assign[order]], axis=1)
                np.maximum.at(r_p, assign[order], dist)
            self._cent, self._theta, self._offsets, self._order = cent, theta, offsets, order
            self._c_p, self._r_p, self._rho_max = c_p, r_p * (1 + 1e-6) + 1e-6, rho_max
            rho_s = self._resid[:n][order]
            self._rho_cos = (rho_s * np.cos(alpha[order])).astype(np.float32)
            self._rho_sin = (rho_s * np.sin(alpha[order])).astype(np.float32)
            a, b = min(_STAGE_DIMS[0], r), min(_STAGE_DIMS[1], r)
            self._ps_a = np.ascontiguousarray(ps[:, :a])
            self._ps_b = np.ascontiguousarray(ps[:, a:b])
            self._ps_c = np.ascontiguousarray(ps[:, b:])
            self._tail_a = _up(np.linalg.norm(ps[:, a:].astype(np.float64), axis=1)).astype(np.float32)
            self._tail_b = _up(np.linalg.norm(ps[:, b:].astype(np.float64), axis=1)).astype(np.float32)
            self._cent64 = cent.astype(np.float64)
            self._parted = n
            log.info("partitioned %d rows into %d clusters (pca %d) in %.2fs", n, k, r, time.perf_counter() - t0)

    def _residual_dirs(self, x: np.ndarray, proj: np.ndarray) -> np.ndarray:
        """Unit directions of the parts of rows orthogonal to the basis (float32)."""
        assert self._basis is not None
        out = np.empty_like(x, dtype=np.float32)
        for lo in range(0, len(x), _BLOCK):
            res = np.asarray(x[lo : lo + _BLOCK], dtype=np.float64) - proj[lo : lo + _BLOCK] @ self._basis
            norm = np.linalg.norm(res, axis=1, keepdims=True)
            out[lo : lo + _BLOCK] = res / np.where(norm > 0, norm, 1.0)
        return out

    # ---------------------------------------------------------------- searching
    def search(self, q: np.ndarray, threshold: float, limit: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """All labels < ``limit`` (default: all rows) whose float64 cosine with unit ``q`` is
        >= ``threshold``: (labels int64, sims float64), descending similarity then label."""
        qv = np.asarray(q, dtype=np.float32).reshape(-1)
        if qv.shape != (self.dim,):
            raise BankConfigError(f"query must have shape ({self.dim},), got {qv.shape}")
        with self._lock:
            n = self._n if limit is None else max(0, min(int(limit), self._n))
            if n == 0:
                self.last_stats = SearchStats(0, 0, 0, 0, 0)
                return np.zeros(0, dtype=np.int64), np.zeros(0)
            if self._parted == 0:
                return self._decide(qv, None, threshold, n, 0, 0)
            cand, kept, bounded = self._candidates(qv, threshold - _MARGIN, n)
            if cand is not None and len(cand) > _SCAN_FRACTION * n:
                cand = None  # gathering most rows costs more than scanning them in order
            return self._decide(qv, cand, threshold, n, kept, bounded)

    def _candidates(self, qv: np.ndarray, t_lo: float, n: int) -> tuple[np.ndarray, int, int]:
        """Labels < n that no bound excludes, the clusters kept and the rows bounded.

        Bounds run in float32 (their rounding, ~1e-6, is far inside the 1e-4 margin)."""
        assert self._cent is not None and self._basis is not None
        q64 = qv.astype(np.float64)
        q_p = self._basis @ q64
        q_r = q64 - q_p @ self._basis
        nq_r = float(np.linalg.norm(q_r))
        nq_p = _up(float(np.linalg.norm(q_p)))
        cos_psi = self._cent64 @ q_r / nq_r if nq_r > 0 else np.zeros(len(self._cent))
        psi = np.arccos(np.clip(cos_psi, -1.0, 1.0))
        nq_r = _up(nq_r)
        ring = np.cos(np.maximum(0.0, psi - self._theta))
        cl_ub = self._c_p @ q_p + nq_p * self._r_p + nq_r * self._rho_max * ring
        keep = cl_ub >= t_lo
        n_keep = int(keep.sum())
        clusters = np.flatnonzero(keep).astype(np.int64)
        bounded = int((self._offsets[clusters + 1] - self._offsets[clusters]).sum())
        na, nb = self._ps_a.shape[1], self._ps_b.shape[1]
        q_p32 = q_p.astype(np.float32)
        mask = np.zeros(self._parted, dtype=np.bool_)
        bound_scan(self._ps_a, self._ps_b, self._ps_c, self._tail_a, self._tail_b, q_p32,
                   _up(np.linalg.norm(q_p[na:])), _up(np.linalg.norm(q_p[na + nb :])), self._rho_cos,
                   self._rho_sin, np.cos(psi).astype(np.float32), np.sin(psi).astype(np.float32), self._offsets,
                   clusters, np.float32(nq_r), np.float32(t_lo), mask)
        sel = np.flatnonzero(mask)
        labels = self._order[sel]
        tail = np.arange(self._parted, n, dtype=np.int64)
        if len(tail):
            tub = self._proj[tail] @ q_p.astype(np.float32) + np.float32(nq_r) * self._resid[tail]
            labels = np.concatenate([labels, tail[tub >= t_lo]])
            bounded += len(tail)
        labels = labels[labels < n]
        labels.sort()  # rows are then gathered in address order
        return labels, n_keep, bounded

    def _decide(self, qv: np.ndarray, cand: np.ndarray | None, threshold: float, n: int, kept: int,
                bounded: int) -> tuple[np.ndarray, np.ndarray]:
        """Float32 dots for candidates (all rows < n when ``cand`` is None), float64 near t."""
        if cand is None:
            cand = np.arange(n, dtype=np.int64)
            s32 = np.empty(n, dtype=np.float32)
            for lo in range(0, n, _BLOCK):
                s32[lo : lo + _BLOCK] = self._x[lo : min(n, lo + _BLOCK)] @ qv
        else:
            s32 = np.empty(len(cand), dtype=np.float32)
            dot_rows(self._x, cand, qv, s32)
        maybe = s32 >= threshold - _MARGIN
        labels = cand[maybe]
        sims = exact_sims(np.take(self._x, labels, axis=0), qv)  # canonical values for all kept rows
        inside = sims >= threshold
        self.last_stats = SearchStats(n, kept, bounded, len(cand), len(labels))
        return _ordered(labels[inside], sims[inside])


def _up(v: np.ndarray | float) -> np.ndarray | float:
    """Round a non-negative norm up by more than float32 rounding (keeps bounds true)."""
    return v * (1 + 1e-6) + 1e-6


def _grown(arr: np.ndarray, cap: int, used: int) -> np.ndarray:
    """Copy of ``arr`` with ``cap`` rows, the first ``used`` kept (arrays of any width)."""
    if arr.ndim == 2 and arr.shape[1] == 0:
        return np.zeros((cap, 0), dtype=arr.dtype)
    out = np.zeros((cap, *arr.shape[1:]), dtype=arr.dtype)
    out[:used] = arr[:used]
    return out


def _spherical_kmeans(sample: np.ndarray, k: int, iters: int, rng: np.random.Generator) -> np.ndarray:
    """Unit centroids (k, d) float32 by Lloyd iterations on cosine similarity."""
    cent = sample[rng.choice(len(sample), size=k, replace=False)].astype(np.float32)
    for _ in range(iters):
        assign, _ = _assign(sample, cent)
        order = np.argsort(assign, kind="stable")
        counts = np.bincount(assign, minlength=k)
        sums = np.zeros((k, sample.shape[1]), dtype=np.float64)
        present = np.flatnonzero(counts)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])[present]
        sums[present] = np.add.reduceat(sample[order].astype(np.float64), starts, axis=0)
        norms = np.linalg.norm(sums, axis=1)
        empty = norms == 0
        if empty.any():  # re-seed empty clusters from random rows
            sums[empty] = sample[rng.choice(len(sample), size=int(empty.sum()))]
            norms[empty] = np.linalg.norm(sums[empty], axis=1)
        cent = (sums / norms[:, None]).astype(np.float32)
    return cent


def _assign(x: np.ndarray, cent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nearest centroid per row and the (float64) cosine to it, computed blockwise."""
    assign = np.empty(len(x), dtype=np.int64)
    cosv = np.empty(len(x), dtype=np.float64)
    c64 = cent.astype(np.float64)
    for lo in range(0, len(x), _BLOCK // 4):
        blk = x[lo : lo + _BLOCK // 4]
        a = np.argmax(blk @ cent.T, axis=1)
        assign[lo : lo + len(blk)] = a
        cosv[lo : lo + len(blk)] = np.einsum("ij,ij->i", blk.astype(np.float64), c64[a])
    return assign, cosv
