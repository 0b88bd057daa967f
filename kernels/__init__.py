"""Numba kernels for pair statistics: Engle-Granger / ADF tests matching statsmodels (per window,
or over windows that move forward with each pair's regression sums carried along), rolling
hedge ratios, half-life, z-scores, correlation and volatility ratios.

The names below are loaded on first use (PEP 562), so ``import kernels`` stays cheap (numba
is imported only when a kernel is touched). This is not Hugging Face's "kernels" hub package:
it defines none of that package's API, and transformers' availability check (distribution
metadata) does not see it.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "EGResult",
    "ADFResult",
    "PairsEG",
    "RollingEG",
    "RollingPairsEG",
    "SlidingEG",
    "SlidingStats",
    "KernelInputError",
    "engle_granger",
    "engle_granger_pairs",
    "rolling_engle_granger",
    "rolling_engle_granger_pairs",
    "sliding_engle_granger_pairs",
    "RescreenConfig",
    "RescreenSummary",
    "rescreen",
    "eg_crit_values",
    "adf",
    "ols_hedge",
    "rolling_hedge_ratio",
    "half_life",
    "spread_zscore",
    "rolling_zscore",
    "rolling_corr",
    "spread_vol_ratio",
    "MIN_TEST_NOBS",
]

_HOME = {
    "EGResult": "coint",
    "ADFResult": "coint",
    "PairsEG": "coint",
    "RollingEG": "coint",
    "RollingPairsEG": "coint",
    "engle_granger": "coint",
    "engle_granger_pairs": "coint",
    "rolling_engle_granger": "coint",
    "rolling_engle_granger_pairs": "coint",
    "SlidingEG": "sliding",
    "SlidingStats": "sliding",
    "sliding_engle_granger_pairs": "sliding",
    "RescreenConfig": "streaming",
    "RescreenSummary": "streaming",
    "rescreen": "streaming",
    "eg_crit_values": "coint",
    "adf": "coint",
    "MIN_TEST_NOBS": "coint",
    "KernelInputError": "errors",
    "ols_hedge": "ols",
    "rolling_hedge_ratio": "ols",
    "half_life": "ols",
    "spread_zscore": "stats",
    "rolling_zscore": "stats",
    "rolling_corr": "stats",
    "spread_vol_ratio": "stats",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'kernels' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"kernels.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
