"""Benchmark: numba kernels vs statsmodels / pandas, printed as JSON lines.

``python -m bench.kernels [--quick]`` or ``localfin bench kernels [--quick]``. Every ratio is
measured in the same run on the same data: statsmodels ``coint`` vs :func:`kernels.engle_granger`
for one window, for all pairs of a pool on one window, and for the daily re-screen (all pairs
over ``--days`` rolling windows); pandas rolling cov/var and statsmodels ``RollingOLS`` vs
:func:`kernels.rolling_hedge_ratio`. Where statsmodels would take minutes it is timed on a
random subset of cells and extrapolated; those lines say so (``statsmodels_extrapolated``,
``statsmodels_cells_measured``) and also report how far our answers are from statsmodels' on
the measured cells. JIT compile time is reported on its own line: a cold compile in a
subprocess with an empty numba cache (skipped with --quick), and this process's first call
(normally a cache load). The machine's load average is printed so that figures taken while
other work runs can be read as such.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from bench._args import BenchParser, run_main

__all__ = ["main", "synthetic_panel"]

_COLD_COMPILE = """
import json, time
import numpy as np
t0 = time.perf_counter()
from kernels import engle_granger, rolling_engle_granger_pairs, adf, rolling_hedge_ratio
t1 = time.perf_counter()
rng = np.random.default_rng(0)
p = 4.6 + np.cumsum(rng.normal(0, 0.01, (200, 6)), axis=0)
times = {}
for name, call in [
    ("eg_serial", lambda: engle_granger(p[:, 0], p[:, 1])),
    ("eg_parallel", lambda: rolling_engle_granger_pairs(p, 100, ends=np.arange(99, 200, 25))),
    ("adf", lambda: adf(p[:, 0])),
    ("rolling", lambda: rolling_hedge_ratio(p[:, 0], p[:, 1], 20)),
]:
    s = time.perf_counter(); call(); times[name] = time.perf_counter() - s
print(json.dumps({"import_s": t1 - t0, "first_call_s": times}))
"""


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


def _median_time(call: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _emit(record: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"bench": "kernels", **record}) + "\n")
    sys.stdout.flush()


def _sm_coint(y: np.ndarray, x: np.ndarray) -> tuple[float, float]:
    from statsmodels.tsa.stattools import coint

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = coint(y, x, trend="c", autolag="aic")
    return float(res[0]), float(res[1])


def _cold_compile() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", _COLD_COMPILE],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
        wall = time.perf_counter() - start
    info = json.loads(done.stdout.strip().splitlines()[-1])
    return {"subprocess_wall_s": round(wall, 3), **info}


def _blas_single_thread() -> tuple[Any, str]:
    """Context that pins BLAS to one thread for the statsmodels baseline, and its label.

    On this 2-core, shared machine multithreaded OpenBLAS makes statsmodels' small
    regressions up to ~70x slower (measured), which would flatter our ratios; one BLAS
    thread is statsmodels' fastest setting here, so that is the baseline.
    """
    import contextlib

    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext(), "default (threadpoolctl missing)"
    return threadpool_limits(limits=1, user_api="blas"), "1"


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = BenchParser(prog="localfin bench kernels", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--quick", action="store_true", help="small statsmodels subsets, no cold compile; < 1 minute"
    )
    ap.add_argument("--series", type=int, default=10, help="pool size (10 -> 45 pairs)")
    ap.add_argument("--window", type=int, default=2520, help="sessions per test window")
    ap.add_argument("--days", type=int, default=300, help="re-screen days (rolling window ends)")
    ap.add_argument(
        "--subset",
        type=int,
        default=None,
        help="statsmodels re-screen cells to time (default 60; 8 with --quick)",
    )
    ap.add_argument("--beta-window", type=int, default=20, help="rolling hedge-ratio window (sessions)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.subset is None:
        args.subset = 8 if args.quick else 60
    if args.series < 2 or args.window < 30 or args.days < 1 or args.subset < 1:
        ap.error("need --series >= 2, --window >= 30, --days >= 1, --subset >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; prints one JSON line per case and returns 0."""
    args = _parse(argv)
    import statsmodels.tsa.stattools  # noqa: F401  (loads BLAS before the thread limit is set)

    blas_ctx, blas_label = _blas_single_thread()
    with blas_ctx:
        return _run(args, blas_label)


def _run(args: argparse.Namespace, blas_label: str) -> int:
    import numba

    from kernels import engle_granger, engle_granger_pairs, rolling_engle_granger_pairs, rolling_hedge_ratio

    rng = np.random.default_rng(args.seed + 1)
    n_obs = args.window + args.days - 1
    panel = synthetic_panel(args.series, n_obs, args.seed)
    ii, jj = np.triu_indices(args.series, k=1)
    n_pairs = ii.size
    last = panel[-args.window :]
    y1, x1 = last[:, 0], last[:, 1]
    _emit(
        {
            "case": "meta",
            "quick": args.quick,
            "cpus": os.cpu_count(),
            "numba_threads": numba.get_num_threads(),
            "threading_layer": numba.config.THREADING_LAYER,
            "loadavg_start": [round(v, 2) for v in os.getloadavg()],
            "statsmodels_blas_threads": blas_label,
            "series": args.series,
            "pairs": int(n_pairs),
            "window": args.window,
            "days": args.days,
            "numba": numba.__version__,
        }
    )

    first: dict[str, float] = {}
    for name, call in [
        ("eg_serial", lambda: engle_granger(y1, x1)),
        (
            "eg_parallel",
            lambda: rolling_engle_granger_pairs(
                panel, args.window, ends=np.arange(n_obs - min(args.days, 4), n_obs)
            ),
        ),
        ("rolling", lambda: rolling_hedge_ratio(y1, x1, args.beta_window)),
    ]:
        start = time.perf_counter()
        call()
        first[name] = round(time.perf_counter() - start, 4)
    record: dict[str, Any] = {"case": "jit_compile", "this_process_first_call_s": first}
    if not args.quick:
        record["cold_compile_empty_cache"] = _cold_compile()
    _emit(record)

    # one window
    sm_one = _median_time(lambda: _sm_coint(y1, x1), 3 if args.quick else 7)
    ours_one = _median_time(lambda: engle_granger(y1, x1), 50)
    _emit({"case": "one_window", "statsmodels_s": sm_one, "ours_s": ours_one, "ratio": sm_one / ours_one})

    # all pairs, one window
    sm_pairs = ii if not args.quick else ii[: min(8, n_pairs)]
    start = time.perf_counter()
    for i, j in zip(sm_pairs, jj[: sm_pairs.size]):
        _sm_coint(last[:, i], last[:, j])
    sm_all = (time.perf_counter() - start) * n_pairs / sm_pairs.size
    ours_all = _median_time(lambda: engle_granger_pairs(last), 10)
    _emit(
        {
            "case": "pairs_one_window",
            "pairs": int(n_pairs),
            "statsmodels_s": sm_all,
            "ours_s": ours_all,
            "ratio": sm_all / ours_all,
            "statsmodels_pairs_measured": int(sm_pairs.size),
            "statsmodels_extrapolated": bool(sm_pairs.size < n_pairs),
        }
    )

    # daily re-screen: every pair over `days` rolling windows
    ends = np.arange(args.window - 1, n_obs)
    res = rolling_engle_granger_pairs(panel, args.window, ends=ends)
    ours_rescreen = _median_time(
        lambda: rolling_engle_granger_pairs(panel, args.window, ends=ends), 1 if args.quick else 3
    )
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        ours_rescreen_1t = _median_time(lambda: rolling_engle_granger_pairs(panel, args.window, ends=ends), 1)
    finally:
        numba.set_num_threads(threads)
    n_cells = ends.size * n_pairs
    picks = rng.choice(n_cells, size=min(args.subset, n_cells), replace=False)
    d_stat = d_p = 0.0
    start = time.perf_counter()
    for q in picks:
        e, k = divmod(int(q), n_pairs)
        win = panel[ends[e] - args.window + 1 : ends[e] + 1]
        stat, pvalue = _sm_coint(win[:, ii[k]], win[:, jj[k]])
        d_stat = max(d_stat, abs(stat - res.stat[e, k]))
        d_p = max(d_p, abs(pvalue - res.pvalue[e, k]))
    sm_cell = (time.perf_counter() - start) / picks.size
    sm_rescreen = sm_cell * n_cells
    _emit(
        {
            "case": "rescreen",
            "pairs": int(n_pairs),
            "days": int(ends.size),
            "cells": int(n_cells),
            "ours_s": ours_rescreen,
            "ours_threads": threads,
            "ours_1thread_s": ours_rescreen_1t,
            "statsmodels_s": sm_rescreen,
            "statsmodels_per_cell_s": sm_cell,
            "statsmodels_cells_measured": int(picks.size),
            "statsmodels_extrapolated": bool(picks.size < n_cells),
            "rescreen_ratio": sm_rescreen / ours_rescreen,
            "rescreen_ratio_1thread": sm_rescreen / ours_rescreen_1t,
            "max_abs_dstat": d_stat,
            "max_abs_dpvalue": d_p,
        }
    )

    # rolling hedge ratio: every pair over the whole panel
    _rolling_beta(args, panel, ii, jj, rolling_hedge_ratio)
    _emit({"case": "done", "loadavg_end": [round(v, 2) for v in os.getloadavg()]})
    return 0


def _rolling_beta(
    args: argparse.Namespace, panel: np.ndarray, ii: np.ndarray, jj: np.ndarray, ours: Callable[..., Any]
) -> None:
    import pandas as pd
    from statsmodels.regression.rolling import RollingOLS

    w = args.beta_window
    frame = pd.DataFrame(panel)

    def run_ours() -> list[np.ndarray]:
        return [ours(panel[:, i], panel[:, j], w)[1] for i, j in zip(ii, jj)]

    def run_pandas() -> list[np.ndarray]:
        out = []
        for i, j in zip(ii, jj):
            x = frame[j]
            out.append((frame[i].rolling(w).cov(x) / x.rolling(w).var()).to_numpy())
        return out

    ours_beta = run_ours()
    pandas_beta = run_pandas()
    t_ours = _median_time(run_ours, 21)
    t_pandas = _median_time(run_pandas, 5)
    n_rols = min(ii.size, 3 if args.quick else 10)
    start = time.perf_counter()
    rols_beta = []
    for i, j in zip(ii[:n_rols], jj[:n_rols]):
        design = np.column_stack([np.ones(panel.shape[0]), panel[:, j]])
        rols_beta.append(
            np.asarray(RollingOLS(panel[:, i], design, window=w).fit(params_only=True).params)[:, 1]
        )
    t_rols = (time.perf_counter() - start) * ii.size / n_rols
    diff_pd = max(float(np.nanmax(np.abs(a - b))) for a, b in zip(ours_beta, pandas_beta))
    from kernels.reference import rolling_hedge_reference

    exact = rolling_hedge_reference(panel[:, ii[0]], panel[:, jj[0]], w)[1]
    diff_exact = float(np.nanmax(np.abs(ours_beta[0] - exact)))
    diff_exact_pd = float(np.nanmax(np.abs(pandas_beta[0] - exact)))
    diff_rols = max(float(np.nanmax(np.abs(a - b))) for a, b in zip(ours_beta, rols_beta))
    _emit(
        {
            "case": "rolling_beta",
            "pairs": int(ii.size),
            "sessions": int(panel.shape[0]),
            "window": w,
            "ours_s": t_ours,
            "pandas_s": t_pandas,
            "rollingols_s": t_rols,
            "ratio_vs_pandas": t_pandas / t_ours,
            "ratio_vs_rollingols": t_rols / t_ours,
            "rollingols_pairs_measured": n_rols,
            "rollingols_extrapolated": bool(n_rols < ii.size),
            "max_abs_dbeta_pandas": diff_pd,
            "first_pair_max_abs_err_vs_exact_ours": diff_exact,
            "first_pair_max_abs_err_vs_exact_pandas": diff_exact_pd,
            "max_abs_dbeta_rollingols": diff_rols,
        }
    )


if __name__ == "__main__":
    run_main(main)
