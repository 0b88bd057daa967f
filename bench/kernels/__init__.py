"""Benchmarks of the numba kernels against statsmodels and pandas: one window, the daily re-screen,
the parallel path under load, an S&P 500-size universe."""

__all__: list[str] = []
