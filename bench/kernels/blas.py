"""BLAS thread pinning for the statsmodels baselines."""

from __future__ import annotations

import contextlib
from typing import Any

__all__ = ["blas_single_thread"]


def blas_single_thread() -> tuple[Any, str]:
    """Context that pins BLAS to one thread for the statsmodels baseline, and its label.

    On a small shared machine multithreaded OpenBLAS makes statsmodels' small regressions many
    times slower, which would flatter our ratios; one BLAS thread is statsmodels' fastest
    setting there, so that is the baseline.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext(), "default (threadpoolctl missing)"
    return threadpool_limits(limits=1, user_api="blas"), "1"
