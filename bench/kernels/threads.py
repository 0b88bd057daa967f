"""The re-screen's parallel path against its one-thread path, on an idle machine and with one
core kept busy by another process (a busy loop this benchmark starts and stops itself).

Measured in one run, interleaved (serial, static, ours, serial, ...) so that load from other
work falls on every variant alike; the median of ``repeats`` is reported:

- ``serial``: :func:`kernels.rolling_engle_granger_pairs` with numba limited to one thread;
- ``parallel``: the same call with all numba threads (the product path: dynamic scheduling
  through an atomic cell counter, see ``kernels/_jit.py``);
- ``static``: the previous scheduling, numba's own static prange split over the same cells,
  kept here as the "before" of the fix.

Ratios are serial / variant (above 1: the variant is faster than one thread).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from bench.records import RecordWriter

__all__ = ["busy_core_case", "start_busy_loop"]

_BUSY = "while True:\n    pass\n"


def start_busy_loop() -> subprocess.Popen[bytes]:
    """A child process that keeps one core busy until killed."""
    return subprocess.Popen([sys.executable, "-c", _BUSY], stdin=subprocess.DEVNULL)


def _static_kernel() -> Callable[..., Any]:
    from numba import njit, prange

    from kernels import _jit

    @njit(parallel=True)
    def static(series, ii, jj, ends, window, maxlag, ic, stat, pval, lag, beta, alpha):  # type: ignore[no-untyped-def]
        for q in prange(ends.shape[0] * ii.shape[0]):
            _jit._eg_cell(series, ii, jj, ends, window, maxlag, ic, stat, pval, lag, beta, alpha, q)

    return static


def busy_core_case(
    writer: RecordWriter, panel: np.ndarray, window: int, days: int, repeats: int, **common: Any
) -> None:
    """Emit ``busy_core`` records: serial / static / parallel times, idle and with one busy core."""
    import numba

    from kernels import rolling_engle_granger_pairs
    from kernels._validate import resolve_maxlag

    threads = numba.get_num_threads()
    n_obs, n_series = panel.shape
    ends = np.arange(n_obs - days, n_obs)
    ii, jj = np.triu_indices(n_series, k=1)
    series = np.ascontiguousarray(panel.T)
    ii64, jj64, ends64 = ii.astype(np.int64), jj.astype(np.int64), ends.astype(np.int64)
    shape = (ends.size, ii.size)
    maxlag = resolve_maxlag(None, window, 0)
    static = _static_kernel()

    def run_static() -> None:
        out = [np.empty(shape), np.empty(shape), np.empty(shape, np.int64), np.empty(shape), np.empty(shape)]
        static(series, ii64, jj64, ends64, window, maxlag, 0, *out)

    def run_ours(n: int) -> Callable[[], None]:
        def call() -> None:
            numba.set_num_threads(n)
            try:
                rolling_engle_granger_pairs(panel, window, ends=ends)
            finally:
                numba.set_num_threads(threads)

        return call

    variants = {"serial": run_ours(1), "static": run_static, "parallel": run_ours(threads)}
    for call in variants.values():  # compile / load from cache outside the timing
        call()
    for load in ("idle", "busy"):
        busy = start_busy_loop() if load == "busy" else None
        try:
            if busy is not None:
                time.sleep(0.3)  # let the loop get its core
            times: dict[str, list[float]] = {k: [] for k in variants}
            for _ in range(repeats):
                for name, call in variants.items():
                    t0 = time.perf_counter()
                    call()
                    times[name].append(time.perf_counter() - t0)
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()
        med = {k: statistics.median(v) for k, v in times.items()}
        params = dict(
            common,
            load=load,
            busy_processes=int(busy is not None),
            threads=threads,
            threading_layer=numba.threading_layer(),
            cells=int(ends.size * ii.size),
            repeats=repeats,
            loadavg_after=[round(v, 2) for v in os.getloadavg()],
        )
        writer.metric("busy_core", "serial_time", med["serial"], "s", **params)
        writer.metric(
            "busy_core",
            "static_parallel_time",
            med["static"],
            "s",
            reference="one thread",
            reference_value=med["serial"],
            lower_is_better=True,
            **params,
        )
        writer.metric(
            "busy_core",
            "parallel_time",
            med["parallel"],
            "s",
            reference="one thread",
            reference_value=med["serial"],
            lower_is_better=True,
            headline=load == "busy",
            label=f"re-screen, {threads} threads vs 1, one core kept busy",
            **params,
        )
