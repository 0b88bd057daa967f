"""The machine's speed index: the median time of one Engle-Granger test over a 2,520-session
window of a fixed synthetic panel.

It is the ``one_window`` figure of ``localfin bench kernels --quick`` (same panel, seed and
window; the benchmark builds its panels with :func:`synthetic_panel` from here), and the demo
prints it beside its own times, so that a time measured on one machine can be read on another:
a wall time is quoted with the index measured beside it. It lives with the kernels because it
times one of them; like every module of this package it imports nothing else of localfin.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

__all__ = ["SPEED_WINDOW", "synthetic_panel", "speed_index_us", "peak_gflops"]

#: sessions of the window the speed index tests (ten years of trading days)
SPEED_WINDOW = 2520


def synthetic_panel(n_series: int, n_obs: int, seed: int) -> np.ndarray:
    """(n_obs, n_series) log prices: two sector factors plus AR(1) idiosyncratic noise."""
    rng = np.random.default_rng(seed)
    factors = np.cumsum(rng.normal(0.0, 0.011, (n_obs, 2)), axis=0)
    out = np.empty((n_obs, n_series))
    for k in range(n_series):
        phi = rng.uniform(0.9, 0.999)
        noise = np.empty(n_obs)
        noise[0] = 0.0
        shocks = rng.normal(0.0, 0.008, n_obs)
        for t in range(1, n_obs):
            noise[t] = phi * noise[t - 1] + shocks[t]
        out[:, k] = rng.uniform(3.0, 5.5) + rng.uniform(0.6, 1.4) * factors[:, k % 2] + noise
    return out


def speed_index_us(repeats: int = 50) -> float:
    """Median microseconds of one Engle-Granger test (AIC lag) over a :data:`SPEED_WINDOW`-session
    window: the first two series of the benchmark's default panel (10 series, 300 re-screen
    days, seed 0), last window. ``repeats``: timed calls (the first, untimed call compiles the
    kernel or loads it from numba's cache)."""
    from kernels.coint import engle_granger

    if repeats < 1:
        raise ValueError(f"repeats={repeats}; allowed: >= 1")
    days = 300
    panel = synthetic_panel(10, SPEED_WINDOW + days - 1, 0)
    last = panel[-SPEED_WINDOW:]
    y, x = last[:, 0].copy(), last[:, 1].copy()
    engle_granger(y, x)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        engle_granger(y, x)
        times.append(time.perf_counter() - t0)
    return 1e6 * statistics.median(times)


def _fma_loop():  # type: ignore[no-untyped-def]
    from numba import njit

    from kernels._simd import vfma_chains

    @njit(cache=True, nogil=True)
    def loop(n, a, b):  # type: ignore[no-untyped-def]
        return vfma_chains(n, a, b)

    return loop


def peak_gflops(threads: int = 1, seconds: float = 0.003, repeats: int = 200) -> float:
    """The machine's measured double-precision peak in GFLOP/s (1e9 floating-point operations
    a second, a fused multiply-add counting two): ``threads`` threads at once, each running
    eight independent eight-wide FMA chains for about ``seconds``; the best of ``repeats``.
    Short runs, many of them: on a machine shared with other work the best one is a run that
    no other process interrupted, which is what the cores can do."""
    from concurrent.futures import ThreadPoolExecutor

    from kernels._simd import FMA_CHAINS, LANES

    if threads < 1 or repeats < 1 or not seconds > 0:
        raise ValueError(f"threads={threads}, repeats={repeats}, seconds={seconds}; allowed: >= 1, >= 1, > 0")
    loop = _fma_loop()
    loop(1000, 0.9999999, 1e-7)  # compile or load from the cache
    n = 1 << 16
    while True:  # steps for about `seconds` on one thread
        t0 = time.perf_counter()
        loop(n, 0.9999999, 1e-7)
        took = time.perf_counter() - t0
        if took > seconds / 4 or n > 1 << 34:
            break
        n *= 2
    n = max(1, int(n * seconds / max(took, 1e-9)))
    flops = 2.0 * LANES * FMA_CHAINS * n * threads
    best = 0.0
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(repeats):
            t0 = time.perf_counter()
            for job in [pool.submit(loop, n, 0.9999999, 1e-7) for _ in range(threads)]:
                job.result()
            best = max(best, flops / (time.perf_counter() - t0))
    return best / 1e9
