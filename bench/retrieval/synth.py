"""Synthetic unit vectors shaped like sentence embeddings, and the statistics that compare them
with real ones (numpy only: the GPU check uses them where hnswlib and pydantic are absent)."""

from __future__ import annotations

import numpy as np

__all__ = ["synthetic_bank", "embedding_stats"]


def synthetic_bank(
    n: int,
    dim: int,
    clusters: int = 100,
    common: float = 0.8,
    between: float = 1.0,
    within: float = 0.7,
    beta: float = 1.0,
    seed: int = 0,
) -> np.ndarray:
    """Unit float32 rows shaped like sentence embeddings: a shared direction (weight
    ``common``), topic centres and within-topic noise, both Gaussian with a power-law spectrum
    (variance of the i-th direction of a random basis ~ i^-beta), scaled by ``between`` and
    ``within``. Defaults were chosen to match MiniLM embeddings of TAT-QA dev questions
    (top-64 energy, mean pairwise cosine, nearest-neighbour cosine; `stats` records compare)."""
    rng = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    scale = np.arange(1, dim + 1) ** (-beta / 2)
    scale /= np.sqrt((scale**2).sum())
    mix = (basis * scale).T.astype(np.float32)  # z @ mix = basis @ (scale * z)
    g = rng.standard_normal(dim)
    g /= np.linalg.norm(g)
    centres = (between * rng.standard_normal((clusters, dim)).astype(np.float32)) @ mix + np.float32(
        common
    ) * g
    out = np.empty((n, dim), dtype=np.float32)
    for lo in range(0, n, 65_536):
        m = min(n, lo + 65_536) - lo
        blk = (
            centres[rng.integers(0, clusters, m)]
            + (within * rng.standard_normal((m, dim), dtype=np.float32)) @ mix
        )
        out[lo : lo + m] = blk / np.linalg.norm(blk, axis=1, keepdims=True)
    return out


def embedding_stats(v: np.ndarray) -> dict[str, float]:
    """Shape statistics of a sample of unit rows (use ~2k rows): energy in the top 16/64
    uncentred principal directions, mean pairwise and mean nearest-neighbour cosine, fraction
    of pairs >= 0.65, norm of the mean vector."""
    x = np.asarray(v, dtype=np.float64)
    ev = np.linalg.eigvalsh(x.T @ x)[::-1]
    cum = np.cumsum(ev) / ev.sum()
    sims = x @ x.T
    pairs = sims[np.triu_indices(len(x), 1)]
    np.fill_diagonal(sims, -np.inf)
    return {
        "energy_top16": round(float(cum[15]), 3),
        "energy_top64": round(float(cum[63]), 3),
        "mean_cos": round(float(pairs.mean()), 3),
        "frac_pairs_ge_0.65": round(float((pairs >= 0.65).mean()), 4),
        "mean_nn_cos": round(float(sims.max(1).mean()), 3),
        "mean_vector_norm": round(float(np.linalg.norm(x.mean(0))), 3),
    }
