"""Fixtures for the kernels tests: synthetic price pairs and the real price panel."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

PRICES_CSV = "prices/staples_energy_daily_2003_2023.csv"


def make_pair(rng: np.random.Generator, n: int, *, coint: bool, ar: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
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


@pytest.fixture(autouse=True, scope="module")
def _single_thread_blas() -> "object":
    """statsmodels (the oracle) with one BLAS thread: on this shared 2-core machine threaded
    OpenBLAS makes its small regressions tens of times slower. Restored after each module."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield None
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield None


@pytest.fixture(scope="session")
def real_log_prices(shared_data: Path) -> "object":
    """(dates x tickers) DataFrame of log adjusted closes from the shared price file."""
    pd = pytest.importorskip("pandas")
    path = shared_data / PRICES_CSV
    if not path.is_file():
        pytest.skip(f"{path} not found")
    frame = pd.read_csv(path, usecols=["date", "ticker", "adj_close"])
    wide = frame.pivot_table(index="date", columns="ticker", values="adj_close").sort_index()
    return np.log(wide)
