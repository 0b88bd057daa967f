"""Synthetic unit vectors for bank tests (clustered, optionally sharing a common direction)."""

from __future__ import annotations

import numpy as np


def clustered(n: int, dim: int, clusters: int, spread: float, common: float, seed: int) -> np.ndarray:
    """``n`` unit float32 rows: random cluster centres + ``common`` * a shared direction + noise."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((clusters, dim))
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    g = rng.standard_normal(dim)
    g /= np.linalg.norm(g)
    x = (
        centers[rng.integers(0, clusters, n)]
        + common * g
        + spread * rng.standard_normal((n, dim)) / np.sqrt(dim)
    )
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
