"""Synthetic price pairs for the kernels tests (a plain module: `conftest` is not importable
by name once several test folders have one)."""

from __future__ import annotations

import numpy as np


def make_pair(
    rng: np.random.Generator, n: int, *, coint: bool, ar: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """Log-price-like (y, x): x a random walk near 4.6, y = a + b x + AR(1) noise (or a walk)."""
    x = 4.6 + np.cumsum(rng.normal(0.0, 0.012, n))
    if coint:
        u = np.empty(n)
        u[0] = 0.0
        phi = rng.uniform(0.5, 0.98)
        for t in range(1, n):
            u[t] = phi * u[t - 1] + rng.normal(0.0, 0.01)
        y = 0.3 + rng.uniform(0.5, 1.5) * x + u
    else:
        y = 4.0 + np.cumsum(rng.normal(0.0, 0.01, n))
    if ar:
        # serially correlated increments push the AIC towards longer lags
        noise = rng.normal(0.0, 0.004, n)
        y = y + np.convolve(noise, [1.0, ar, ar * ar, ar**3], mode="same").cumsum() * 0.2
    return y, x
