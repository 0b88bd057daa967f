"""Fixtures for the kernels tests: synthetic price pairs and the real price panel."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

PRICES_CSV = "prices/staples_energy_daily_2003_2023.csv"


@pytest.fixture(autouse=True, scope="module")
def _single_thread_blas() -> object:
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
def real_log_prices(shared_data: Path) -> object:
    """(dates x tickers) DataFrame of log adjusted closes from the shared price file."""
    pd = pytest.importorskip("pandas")
    path = shared_data / PRICES_CSV
    if not path.is_file():
        pytest.skip(f"{path} not found")
    frame = pd.read_csv(path, usecols=["date", "ticker", "adj_close"])
    wide = frame.pivot_table(index="date", columns="ticker", values="adj_close").sort_index()
    return np.log(wide)
