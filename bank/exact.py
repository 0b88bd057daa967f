"""Exact threshold search: every stored vector whose similarity with the query is >= t,
provably none missed, with far less memory traffic than a brute-force scan.

hnswlib is approximate even for its own top-k (at 1M entries, ef=200 missed 0.5% of the entries
above tau in the issue's measurement), so threshold results are not taken from it. This index
prunes with upper bounds that are true inequalities and computes exact products only for what
the bounds cannot exclude.

Write a stored row as x = B^T p + r: p its coordinates on B, an orthonormal basis of the top
uncentred principal directions (fitted on a sample; sentence embeddings share a strong common
direction and a fast-decaying spectrum), r the part orthogonal to B. The coordinates are stored
as int8 codes c with a step s_j per dimension, p = s * c + delta. For a query with coordinates
q_p = B q and orthogonal part q_r:

    q.x = q_p.(s * c) + q_p.delta + q_r.r  <=  q_p.(s * c) + |q_p| |delta| + |q_r| |r|

(Cauchy-Schwarz twice), with |delta| and |r| computed per row in float64 when the row is added
(rounded up) and |q_p|, |q_r| per query. The same inequality holds for every prefix of the
basis, so the bound is evaluated in stages, ``stage_dims = (d1, d2, ...)``:

1. the first d1 coordinates for every row, from a column-major int8 array (one contiguous run
   per dimension, so the scan vectorises), and |delta|, |r| as float32: d1 + 8 bytes a row
   where brute force reads 4 * dim;
2. then, for the rows still in, coordinates d1..d2 from a row-major int8 array (one short
   gather per row) with the tighter |delta|, |r| of the longer prefix; and so on.

Rows that survive get a float32 dot product (a filter), and rows within the margin of the
threshold or above get the canonical float64 dot product (:func:`exact_sims`), which alone
decides. Every bound is lowered by a margin (1e-4, more for long or non-unit vectors) that
exceeds all float32 rounding in the bounds and the filter, so pruning errs only towards checking
more rows, and results equal the float64 brute force (:func:`brute_force_threshold`) bit for bit.

Codes are valid for any row: a row added after the basis was fitted is coded with the same
basis and steps (a coordinate beyond the code range is clipped and the clipping error is part
of |delta|), so the bound stays true; the basis is refitted when the rows have grown by
``refit_growth`` since the last fit, only to keep the bounds tight. Below ``min_rows`` rows
there is no basis and every row gets the float32 filter.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from bank._jit import decide64, filter32, scan_a, scan_b, sims64
from bank.errors import BankConfigError

__all__ = ["ExactConfig", "ExactThresholdIndex", "SearchStats", "exact_sims", "brute_force_threshold"]

log = logging.getLogger(__name__)

_MARGIN = 1e-4  # least slack on every bound and on the float32 filter
_BLOCK = 65_536  # rows per block in blocked passes (bounds peak memory)
_EPS32 = 2.0**-24  # float32 unit roundoff
_PARALLEL_MIN = 131_072  # rows per search thread, at least


def exact_sims(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Canonical similarity: float64 dot products of rows of ``x`` (m, d) with ``q`` (d,).

    Both are taken as float32 (the stored precision) and multiplied in float64 in a fixed
    summation order (:func:`bank._jit.dot64`), so a row's value never depends on which other
    rows are computed with it, nor on the code path (search, oracle, plain Python)."""
    x32 = np.ascontiguousarray(x, dtype=np.float32)
    q64 = np.asarray(q, dtype=np.float32).reshape(-1).astype(np.float64)
    if x32.ndim != 2 or x32.shape[1] != q64.shape[0]:
        raise BankConfigError(f"x must have shape (m, {q64.shape[0]}), got {x32.shape}")
    out = np.empty(len(x32), dtype=np.float64)
    sims64(x32, q64, out)
    return out


def brute_force_threshold(x: np.ndarray, q: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Reference oracle: (labels, sims) of all rows with canonical similarity >= ``threshold``,
    ordered by descending similarity then ascending label."""
    sims = exact_sims(x, q)
    labels = np.flatnonzero(sims >= threshold)
    return _ordered(labels, sims[labels])


def _ordered(labels: np.ndarray, sims: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((labels, -sims))
    return labels[order].astype(np.int64), sims[order]


@dataclass(frozen=True)
class ExactConfig:
    """Tuning of :class:`ExactThresholdIndex`; none of it changes results, only speed."""

    min_rows: int = 20_000  # below this many rows: no basis, every row gets the float32 filter
    stage_dims: tuple[int, ...] = (24, 64, 128)  # basis prefix bounded by each stage (ascending)
    fit_sample: int = 65_536  # rows used to fit the basis and the code steps
    refit_growth: float = 0.25  # refit when rows grew by this fraction since the last fit
    seed: int = 0  # sample choice
    threads: int = 2  # threads per search over large banks (numpy's brute force uses all BLAS threads)

    def __post_init__(self) -> None:
        if self.min_rows < 1:
            raise BankConfigError(f"min_rows must be >= 1, got {self.min_rows}")
        dims = tuple(self.stage_dims)
        if not dims or dims[0] < 0 or any(b <= a for a, b in zip(dims, dims[1:])):
            raise BankConfigError(
                f"stage_dims must be non-empty, >= 0 and strictly ascending, got {self.stage_dims}"
            )
        if self.fit_sample < 1:
            raise BankConfigError(f"fit_sample must be >= 1, got {self.fit_sample}")
        if not self.refit_growth > 0:
            raise BankConfigError(f"refit_growth must be > 0, got {self.refit_growth}")
        if self.threads < 1:
            raise BankConfigError(f"threads must be >= 1, got {self.threads}")


@dataclass(frozen=True)
class SearchStats:
    """Work done by one search, in rows (for benchmarks and tests)."""

    rows: int  # rows searched (the snapshot size)
    rows_bounded: int  # rows given the stage-1 bound (0 without a basis)
    rows_kept: tuple[int, ...]  # rows each bound stage kept
    rows_dotted: int  # rows that got the float32 filter
    rows_float64: int  # rows that got the canonical float64 product


class ExactThresholdIndex:
    """In-memory float32 vectors with labels 0..n-1 and exact threshold search.

    Thread-safe: adds and searches take one lock.
    """

    def __init__(self, dim: int, config: ExactConfig | None = None) -> None:
        if dim < 1:
            raise BankConfigError(f"dim must be >= 1, got {dim}")
        self.dim = dim
        self.config = config or ExactConfig()
        # stage prefixes clipped to dim (dims <= 0 or repeats dropped); empty: no basis ever
        ends = sorted({min(d, dim) for d in self.config.stage_dims if d > 0})
        self._ends = tuple(ends)
        self._lock = threading.RLock()
        self._n = 0
        self._x = np.zeros((0, dim), dtype=np.float32)
        self._max_norm = 0.0  # largest stored row norm (scales the float32 error allowance)
        self._fitted = 0  # rows at the last basis fit (0: no basis)
        self._basis = np.zeros((0, dim))  # (ends[-1], dim) float64, orthonormal rows
        self._step = np.ones(0)  # code step per basis dimension
        # Per row, label order, capacity like _x. Stage 1: codes column-major (d1, capacity) and
        # the norms (rounded up) of the coding error and of the part off the prefix, float32.
        # (Coding those norms in int8 too, or one largest error for all rows, saved 7 bytes a
        # row, but the extra slack of ~0.01 let 4x more rows through at 1M: the bounds are dense
        # near t.) Later stages: one record per row, float32 words [err_2, rho_2, err_3, rho_3,
        # ...] then the int8 codes of stage 2, 3, ... (viewed as bytes), so a row's later stages
        # read one or two adjacent cache lines (records padded to 128 bytes with the default
        # stages) instead of three arrays: at 1M rows those gathers are memory latency bound.
        d1 = ends[0] if ends else 0
        self._codes1 = np.zeros((d1, 0), dtype=np.int8)
        self._err1 = np.zeros(0, dtype=np.float32)
        self._rho1 = np.zeros(0, dtype=np.float32)
        n_later = max(len(ends) - 1, 0)
        offs, off = [], 8 * n_later
        for s0, e in zip(ends, ends[1:]):
            offs.append(off)
            off += e - s0
        self._later = tuple(
            zip(range(n_later), (0, *ends)[1:], ends[1:], offs)
        )  # (k, start, end, byte offset)
        self._rec_words = -(-off // 64) * 16 if off > 64 else -(-off // 4)  # whole cache lines
        self._rec = np.zeros((0, self._rec_words), dtype=np.float32)
        # search scratch (searches hold the lock): reused, because fresh pages for ~12 bytes a
        # row cost as much as the first stage itself at 1M rows
        self._labels = np.zeros(0, dtype=np.int64)
        self._acc = np.zeros(0, dtype=np.float32)
        self._pool: ThreadPoolExecutor | None = None  # search helper threads, started on first need
        self.last_stats: SearchStats | None = None

    def __len__(self) -> int:
        return self._n

    @property
    def vectors(self) -> np.ndarray:
        """Read-only view of the stored vectors (n, dim)."""
        view = self._x[: self._n]
        view.flags.writeable = False
        return view

    @property
    def fitted_rows(self) -> int:
        """Rows present at the last basis fit (0: no basis yet, plain filtered scan)."""
        return self._fitted

    # ----------------------------------------------------------------- building
    def add(self, vectors: np.ndarray) -> np.ndarray:
        """Append vectors (m, dim); returns their labels (consecutive ints)."""
        v = np.ascontiguousarray(vectors, dtype=np.float32)
        if v.ndim != 2 or v.shape[1] != self.dim:
            raise BankConfigError(f"vectors must have shape (m, {self.dim}), got {v.shape}")
        if not np.isfinite(v).all():
            raise BankConfigError("vectors must be finite (found NaN or inf)")
        with self._lock:
            need = self._n + len(v)
            if need > len(self._x):  # grow before exceeding capacity
                self._grow(max(need, 2 * len(self._x), 1024))
            self._x[self._n : need] = v
            if len(v):
                self._max_norm = max(
                    self._max_norm, float(np.sqrt(np.einsum("ij,ij->i", v, v, dtype=np.float64).max()))
                )
            if self._fitted:
                self._code(self._n, need)
            labels = np.arange(self._n, need, dtype=np.int64)
            self._n = need
            if (
                self._n >= self.config.min_rows
                and self._ends
                and self._n > (1 + self.config.refit_growth) * self._fitted
            ):
                self.fit()
            return labels

    def _grow(self, cap: int) -> None:
        used = self._n
        self._x = _grown(self._x, cap, used)
        first = np.zeros((len(self._codes1), cap), dtype=np.int8)
        first[:, :used] = self._codes1[:, :used]
        self._codes1 = first
        self._err1, self._rho1, self._rec = (
            _grown(a, cap, used) for a in (self._err1, self._rho1, self._rec)
        )

    def fit(self) -> None:
        """(Re)fit the basis and code steps on a sample and code every row with them."""
        with self._lock:
            t0 = time.perf_counter()
            n, cfg = self._n, self.config
            rng = np.random.default_rng(cfg.seed)
            sample = np.sort(rng.choice(n, size=min(n, cfg.fit_sample), replace=False))
            s64 = np.asarray(self._x[sample], dtype=np.float64)
            _, vecs = np.linalg.eigh(s64.T @ s64)  # uncentred PCA, ascending eigenvalues
            self._basis = np.ascontiguousarray(vecs[:, ::-1][:, : self._ends[-1]].T)
            span = np.abs(s64 @ self._basis.T).max(axis=0)
            self._step = np.where(span > 0, span / 127.0, 1.0)
            self._code(0, n)
            self._fitted = n
            log.info(
                "fitted a %d-dim basis on %d of %d rows and coded them in %.2fs",
                self._ends[-1],
                len(sample),
                n,
                time.perf_counter() - t0,
            )

    def _code(self, lo: int, hi: int) -> None:
        """Codes, coding-error norms and off-basis norms of rows lo..hi-1 (current basis)."""
        for b0 in range(lo, hi, _BLOCK):
            b1 = min(hi, b0 + _BLOCK)
            x64 = np.asarray(self._x[b0:b1], dtype=np.float64)
            p = x64 @ self._basis.T
            codes = np.clip(np.rint(p / self._step), -127, 127)
            d2 = np.cumsum((p - codes * self._step) ** 2, axis=1)
            p2 = np.cumsum(p**2, axis=1)
            xx = np.einsum("ij,ij->i", x64, x64)
            err = _up(np.sqrt(d2))  # per prefix length
            rho = _up(np.sqrt(np.maximum(xx[:, None] - p2, 0.0)))
            d1 = self._ends[0]
            self._codes1[:, b0:b1] = codes[:, :d1].T
            self._err1[b0:b1] = err[:, d1 - 1]
            self._rho1[b0:b1] = rho[:, d1 - 1]
            rec, rec8 = self._rec[b0:b1], self._rec[b0:b1].view(np.int8)
            for k, start, end, off in self._later:
                rec[:, 2 * k] = err[:, end - 1]
                rec[:, 2 * k + 1] = rho[:, end - 1]
                rec8[:, off : off + end - start] = codes[:, start:end]

    # ---------------------------------------------------------------- searching
    def search(
        self, q: np.ndarray, threshold: float, limit: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """All labels < ``limit`` (default: all rows) whose canonical similarity with ``q``
        (:func:`exact_sims`) is >= ``threshold``: (labels int64, sims float64), descending
        similarity then ascending label."""
        qv = np.asarray(q, dtype=np.float32).reshape(-1)
        if qv.shape != (self.dim,):
            raise BankConfigError(f"query must have shape ({self.dim},), got {qv.shape}")
        if not np.isfinite(qv).all():
            raise BankConfigError("query must be finite (found NaN or inf)")
        threshold = float(threshold)
        with self._lock:
            n = self._n if limit is None else max(0, min(int(limit), self._n))
            if n == 0:
                self.last_stats = SearchStats(0, 0, (), 0, 0)
                return np.zeros(0, dtype=np.int64), np.zeros(0)
            q64 = qv.astype(np.float64)
            nq = float(np.sqrt(q64 @ q64))
            # float32 filter error <= dim * eps * |x||q| (any summation order); doubled for safety
            margin = max(_MARGIN, 2 * self.dim * _EPS32 * nq * self._max_norm)
            if len(self._labels) < n:
                self._labels = np.zeros(len(self._x), dtype=np.int64)
                self._acc = np.zeros(len(self._x), dtype=np.float32)
            t_lo = threshold - margin
            qs = None
            if self._fitted:  # query coordinates on the basis, scaled by the code steps
                qp = self._basis @ q64
                qs = ((qp * self._step).astype(np.float32), np.cumsum(qp**2), float(q64 @ q64))
            first, *rest = self._parts(n)
            # the kernels release the GIL: the first part runs here, any others beside it
            futures = [self._executor().submit(self._range, qv, q64, qs, threshold, t_lo, *r) for r in rest]
            results = [self._range(qv, q64, qs, threshold, t_lo, *first)] + [f.result() for f in futures]
            kept = tuple(int(v) for v in np.sum([r[0] for r in results], axis=0)) if qs is not None else ()
            self.last_stats = SearchStats(
                n, n if qs is not None else 0, kept, sum(r[1] for r in results), sum(r[2] for r in results)
            )
            return _ordered(np.concatenate([r[3] for r in results]), np.concatenate([r[4] for r in results]))

    def _parts(self, n: int) -> list[tuple[int, int]]:
        """Row ranges searched in parallel: one per thread, whole scan blocks, at least
        _PARALLEL_MIN rows each (below that a second thread costs more than it saves)."""
        k = max(1, min(self.config.threads, n // _PARALLEL_MIN))
        cuts = [0] + [(n * i // k) // 2048 * 2048 for i in range(1, k)] + [n]
        return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(
                max_workers=self.config.threads - 1, thread_name_prefix="exact-search"
            )
        return self._pool

    def close(self) -> None:
        """Stop the search helper threads (a later search starts them again)."""
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown()
                self._pool = None

    def _range(
        self,
        qv: np.ndarray,
        q64: np.ndarray,
        qs: tuple | None,
        threshold: float,
        t_lo: float,
        lo: int,
        hi: int,
    ) -> tuple[list[int], int, int, np.ndarray, np.ndarray]:
        """Search rows lo..hi-1 with the scratch buffers' slice lo..hi: (rows each bound stage
        kept, rows filtered in float32, rows given float64, labels, sims) in label order."""
        labels, acc = self._labels[lo:hi], self._acc[lo:hi]
        kept: list[int] = []
        if qs is None:  # no basis (a small bank): one BLAS product is the float32 filter
            keep = np.flatnonzero(self._x[lo:hi] @ qv >= np.float32(t_lo))
            n64, dotted = len(keep), hi - lo
            labels[:n64] = keep + lo
        else:
            q_scaled, qp2, qq = qs

            def norms(end: int) -> tuple[np.float32, np.float32]:  # |q on the prefix|, |q off it|
                return (
                    np.float32(_up(np.sqrt(qp2[end - 1]))),
                    np.float32(_up(np.sqrt(max(qq - qp2[end - 1], 0.0)))),
                )

            d1 = self._ends[0]
            m = scan_a(
                self._codes1,
                q_scaled[:d1],
                self._err1,
                self._rho1,
                *norms(d1),
                np.float32(t_lo),
                lo,
                hi,
                labels,
                acc,
            )
            kept.append(m)
            rec8 = self._rec.view(np.int8)
            for k, start, end, off in self._later:
                if m:
                    m = scan_b(
                        rec8,
                        self._rec,
                        off,
                        2 * k,
                        q_scaled[start:end],
                        labels,
                        acc,
                        m,
                        *norms(end),
                        np.float32(t_lo),
                    )
                kept.append(m)
            dotted = m
            n64 = filter32(self._x, labels, m, qv, np.float32(t_lo))
        out_l = np.empty(n64, dtype=np.int64)
        out_s = np.empty(n64, dtype=np.float64)
        k = decide64(self._x, labels, n64, q64, threshold, out_l, out_s)
        return kept, dotted, n64, out_l[:k], out_s[:k]


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
