"""hnswlib wrapper: cosine ANN index with labels 0..n-1, growth before overflow, atomic saves.

hnswlib raises bare RuntimeErrors; they are translated into :class:`bank.errors.IndexError_`.
Its results are approximate; exact threshold retrieval lives in :mod:`bank.exact`.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bank.errors import BankConfigError, IndexError_

__all__ = ["HnswConfig", "HnswIndex"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HnswConfig:
    """hnswlib parameters (see hnswlib's ALGO_PARAMS): graph degree, build and query beam."""

    m: int = 16  # links per node
    ef_construction: int = 100  # build beam width
    ef_search: int = 64  # default query beam width (raised to k when k is larger)
    initial_capacity: int = 1024  # rows allocated at creation; doubled before overflow
    threads: int = 1  # hnswlib threads for bulk adds and queries
    seed: int = 100

    def __post_init__(self) -> None:
        for name in ("m", "ef_construction", "ef_search", "initial_capacity", "threads"):
            if getattr(self, name) < 1:
                raise BankConfigError(f"{name} must be >= 1, got {getattr(self, name)}")


class HnswIndex:
    """Cosine hnswlib index whose labels are consecutive row numbers 0..n-1."""

    def __init__(self, dim: int, config: HnswConfig | None = None) -> None:
        import hnswlib

        if dim < 1:
            raise BankConfigError(f"dim must be >= 1, got {dim}")
        self.dim = dim
        self.config = config or HnswConfig()
        self._lock = threading.RLock()
        self._index = hnswlib.Index(space="cosine", dim=dim)
        try:
            self._index.init_index(
                max_elements=self.config.initial_capacity,
                M=self.config.m,
                ef_construction=self.config.ef_construction,
                random_seed=self.config.seed,
            )
        except RuntimeError as exc:
            raise IndexError_(f"hnswlib init_index failed: {exc}") from exc
        self._index.set_num_threads(self.config.threads)
        self._index.set_ef(self.config.ef_search)

    def __len__(self) -> int:
        return int(self._index.get_current_count())

    @property
    def capacity(self) -> int:
        return int(self._index.get_max_elements())

    def add(self, vectors: np.ndarray) -> np.ndarray:
        """Add rows (m, dim) with the next labels; capacity doubles before it would overflow."""
        v = np.ascontiguousarray(vectors, dtype=np.float32)
        if v.ndim != 2 or v.shape[1] != self.dim:
            raise BankConfigError(f"vectors must have shape (m, {self.dim}), got {v.shape}")
        with self._lock:
            n = len(self)
            labels = np.arange(n, n + len(v), dtype=np.int64)
            if n + len(v) > self.capacity:
                new_cap = max(n + len(v), 2 * self.capacity)
                try:
                    self._index.resize_index(new_cap)
                except RuntimeError as exc:
                    raise IndexError_(f"hnswlib resize_index({new_cap}) failed: {exc}") from exc
            if len(v):
                try:
                    self._index.add_items(v, labels, num_threads=self.config.threads)
                except RuntimeError as exc:
                    raise IndexError_(f"hnswlib add_items failed at label {n}: {exc}") from exc
            return labels

    def knn(self, q: np.ndarray, k: int, ef: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Approximate k nearest rows of unit query ``q`` (dim,): (labels, cosine sims) by
        descending similarity; fewer than k when the index is smaller."""
        with self._lock:
            n = len(self)
            k = min(k, n)
            if k <= 0:
                return np.zeros(0, dtype=np.int64), np.zeros(0)
            self._index.set_ef(max(ef or self.config.ef_search, k))
            try:
                # one query: a single thread (spawning hnswlib's pool per call cost up to 50 ms at 1M)
                labels, dist = self._index.knn_query(
                    np.asarray(q, dtype=np.float32).reshape(1, -1), k=k, num_threads=1
                )
            except RuntimeError as exc:
                raise IndexError_(f"hnswlib knn_query(k={k}) failed: {exc}") from exc
            finally:
                self._index.set_ef(self.config.ef_search)
            return labels[0].astype(np.int64), 1.0 - dist[0].astype(np.float64)

    def get_vectors(self, labels: np.ndarray) -> np.ndarray:
        """Stored (normalised) vectors of ``labels``: float32 (m, dim)."""
        try:
            return np.asarray(self._index.get_items(np.asarray(labels, dtype=np.int64)), dtype=np.float32)
        except RuntimeError as exc:
            raise IndexError_(f"hnswlib get_items failed: {exc}") from exc

    def save(self, path: Path) -> None:
        """Write atomically: a temp file in the same folder, fsync, then os.replace."""
        path = Path(path)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with self._lock:
            try:
                self._index.save_index(str(tmp))
                with open(tmp, "rb") as fh:
                    os.fsync(fh.fileno())
                os.replace(tmp, path)
            except (RuntimeError, OSError) as exc:
                tmp.unlink(missing_ok=True)
                raise IndexError_(f"could not save hnsw index to {path}: {exc}") from exc

    @classmethod
    def load(cls, path: Path, dim: int, config: HnswConfig | None = None) -> HnswIndex:
        """Load an index written by :meth:`save`; labels must be 0..n-1."""
        import hnswlib

        self = cls.__new__(cls)
        self.dim = dim
        self.config = config or HnswConfig()
        self._lock = threading.RLock()
        self._index = hnswlib.Index(space="cosine", dim=dim)
        try:
            self._index.load_index(str(path))
        except (RuntimeError, OSError, ValueError) as exc:
            raise IndexError_(f"could not load hnsw index {path}: {exc}") from exc
        self._index.set_num_threads(self.config.threads)
        self._index.set_ef(self.config.ef_search)
        n = len(self)
        ids = np.sort(np.asarray(self._index.get_ids_list(), dtype=np.int64))
        if not np.array_equal(ids, np.arange(n)):
            raise IndexError_(f"hnsw index {path} has labels other than 0..{n - 1}")
        return self
