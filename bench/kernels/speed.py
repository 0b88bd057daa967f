"""Benchmark: numba kernels vs statsmodels / pandas, printed as JSON lines.

``python -m bench.kernels.speed [--quick]`` or ``localfin bench kernels [--quick]``. Every ratio is
measured in the same run on the same data: statsmodels ``coint`` vs :func:`kernels.engle_granger`
for one window, for all pairs of a pool on one window, and for the daily re-screen (all pairs
over ``--days`` rolling windows); pandas rolling cov/var and statsmodels ``RollingOLS`` vs
:func:`kernels.rolling_hedge_ratio`. Where statsmodels would take minutes it is timed on a
random subset of cells and extrapolated; those lines say so (``statsmodels_extrapolated``,
``statsmodels_cells_measured``) and also report how far our answers are from statsmodels' on
the measured cells. JIT compile time is reported on its own line: a cold compile in a
subprocess with an empty numba cache (skipped with --quick), and this process's first call
(normally a cache load). Two more cases: ``large_pool`` (one selection date over every pair of a
500-ticker synthetic pool, statsmodels timed on a random sample of pairs and extrapolated) and
``busy_core`` (the parallel re-screen against one thread, idle and with one core kept busy by a
busy loop started in the same run; see :mod:`bench.kernels.threads`). Records follow
:mod:`bench.records`; each carries the load average when it was taken.
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
from bench.kernels.blas import blas_single_thread
from bench.kernels.decade import add_decade_args
from bench.kernels.universe import add_universe_args, resolve_universe_args, universe_case
from bench.records import RecordWriter
from kernels.speed import synthetic_panel  # the speed index's panel (one_window is the index)

__all__ = ["HELP", "main", "parser", "synthetic_panel"]

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


def _median_time(call: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


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


#: the command's help (`localfin bench ... --help`), in the user's words
HELP = """Numba kernels against statsmodels and pandas on the same data, and the machine's speed index.

Times statsmodels' Engle-Granger test against ours on one window, on every pair of a pool and on the
daily re-screen (every pair over --days rolling windows), and pandas and statsmodels' rolling OLS
against our rolling hedge ratio. Where statsmodels would take minutes it is timed on a random sample
of cells and extrapolated, and the lines say so. Also: JIT compile time, a 500-ticker pool on one
date (large_pool), the parallel re-screen with one core kept busy (busy_core), a year of daily
re-screens of an S&P 500-size universe (universe) and a slice of a decade of daily re-screens of a
3,000-ticker market (decade: 3,000 tickers x 21 dates; with the operations counted, the machine's
FMA peak and the decade extrapolated). One JSON line per figure, each recording how busy the
machine was when it was taken.

    localfin bench kernels --quick                   # about a minute
    localfin bench kernels --skip busy_core,large_pool
"""


def parser() -> argparse.ArgumentParser:
    """The benchmark's options (``localfin bench`` builds its command from them)."""
    ap = BenchParser(prog="localfin bench kernels", description=HELP)
    ap.add_argument(
        "--quick", action="store_true", help="small statsmodels samples, no cold compile; about a minute"
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
    ap.add_argument("--pool", type=int, default=500, help="large-pool case: tickers (500 -> 124,750 pairs)")
    ap.add_argument(
        "--pool-sample",
        type=int,
        default=None,
        help="large-pool case: pairs statsmodels is timed on (default 40; 10 with --quick)",
    )
    ap.add_argument(
        "--busy-repeats", type=int, default=None, help="busy-core case: timed runs per variant (7; 5 quick)"
    )
    ap.add_argument(
        "--busy-days", type=int, default=None, help="busy-core case: re-screen days (default --days)"
    )
    ap.add_argument(
        "--skip", default="", help="comma-separated cases to skip (busy_core, large_pool, universe, ...)"
    )
    add_universe_args(ap)
    add_decade_args(ap, prefix="decade-")
    ap.add_argument("--seed", type=int, default=0)
    return ap


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = parser()
    args = ap.parse_args(argv)
    if args.subset is None:
        args.subset = 8 if args.quick else 60
    if args.pool_sample is None:
        args.pool_sample = 10 if args.quick else 40
    if args.busy_repeats is None:
        args.busy_repeats = 5 if args.quick else 7
    if args.busy_days is None:
        args.busy_days = args.days
    if args.series < 2 or args.window < 30 or args.days < 1 or args.subset < 1:
        ap.error("need --series >= 2, --window >= 30, --days >= 1, --subset >= 1")
    if args.pool < 2 or args.pool_sample < 1 or args.busy_repeats < 1 or args.busy_days < 1:
        ap.error("need --pool >= 2, --pool-sample >= 1, --busy-repeats >= 1, --busy-days >= 1")
    args.skip = {c.strip() for c in args.skip.split(",") if c.strip()}
    problem = resolve_universe_args(args)
    if problem:
        ap.error(problem)
    return args


def main(argv: list[str] | None = None, writer: RecordWriter | None = None) -> int:
    """Run the benchmark; prints one JSON record per figure and returns 0."""
    args = _parse(argv)
    import statsmodels.tsa.stattools  # noqa: F401  (loads BLAS before the thread limit is set)

    blas_ctx, blas_label = blas_single_thread()
    with blas_ctx:
        return _run(args, blas_label, writer or RecordWriter("kernels"))


def _run(args: argparse.Namespace, blas_label: str, w: RecordWriter) -> int:
    import numba

    from kernels import engle_granger, engle_granger_pairs, rolling_engle_granger_pairs, rolling_hedge_ratio

    rng = np.random.default_rng(args.seed + 1)
    n_obs = args.window + args.days - 1
    panel = synthetic_panel(args.series, n_obs, args.seed)
    ii, jj = np.triu_indices(args.series, k=1)
    n_pairs = ii.size
    last = panel[-args.window :]
    y1, x1 = last[:, 0], last[:, 1]
    common = {
        "quick": args.quick,
        "numba_threads": numba.get_num_threads(),
        "statsmodels_blas_threads": blas_label,
        "numba": numba.__version__,
    }

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
        first[name] = time.perf_counter() - start
    for name, secs in first.items():
        w.metric("jit_compile", "this_process_first_call", secs, "s", kernel=name, **common)
    common["threading_layer"] = numba.threading_layer()
    if not args.quick:
        cold = _cold_compile()
        w.metric("jit_compile", "cold_compile_subprocess", cold["subprocess_wall_s"], "s", **cold, **common)

    # one window
    sm_one = _median_time(lambda: _sm_coint(y1, x1), 3 if args.quick else 7)
    ours_one = _median_time(lambda: engle_granger(y1, x1), 50)
    w.metric(
        "one_window",
        "time",
        ours_one,
        "s",
        reference="statsmodels coint",
        reference_value=sm_one,
        lower_is_better=True,
        window=args.window,
        headline=True,
        label=f"Engle-Granger, one {args.window:,}-session window (AIC lag)",
        **common,
    )

    # all pairs, one window
    sm_pairs = ii if not args.quick else ii[: min(8, n_pairs)]
    start = time.perf_counter()
    for i, j in zip(sm_pairs, jj[: sm_pairs.size]):
        _sm_coint(last[:, i], last[:, j])
    sm_all = (time.perf_counter() - start) * n_pairs / sm_pairs.size
    ours_all = _median_time(lambda: engle_granger_pairs(last), 10)
    w.metric(
        "pairs_one_window",
        "time",
        ours_all,
        "s",
        reference="statsmodels coint",
        reference_value=sm_all,
        lower_is_better=True,
        pairs=int(n_pairs),
        window=args.window,
        statsmodels_pairs_measured=int(sm_pairs.size),
        statsmodels_extrapolated=bool(sm_pairs.size < n_pairs),
        **common,
    )

    _rescreen(args, w, panel, ii, jj, rng, common)
    _rolling_beta(args, w, panel, ii, jj, rolling_hedge_ratio, common)
    if "large_pool" not in args.skip:
        _large_pool(args, w, common)
    if "busy_core" not in args.skip:
        from bench.kernels.threads import busy_core_case

        busy_days = min(args.busy_days, args.days)
        busy_core_case(w, panel, args.window, busy_days, args.busy_repeats, **common)
    if "universe" not in args.skip:
        universe_case(args, w, common)
    if "decade" not in args.skip:
        from bench.kernels.decade import decade_case

        args.progress = not args.quick
        decade_case(args, w, common, prefix="decade-")
    return 0


def _rescreen(
    args: argparse.Namespace,
    w: RecordWriter,
    panel: np.ndarray,
    ii: np.ndarray,
    jj: np.ndarray,
    rng: np.random.Generator,
    common: dict[str, Any],
) -> None:
    """Daily re-screen: every pair over ``days`` rolling windows."""
    import numba

    from kernels import rolling_engle_granger_pairs

    n_obs, n_pairs = panel.shape[0], ii.size
    ends = np.arange(args.window - 1, n_obs)
    res = rolling_engle_granger_pairs(panel, args.window, ends=ends)
    ours = _median_time(
        lambda: rolling_engle_granger_pairs(panel, args.window, ends=ends), 1 if args.quick else 3
    )
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        ours_1t = _median_time(lambda: rolling_engle_granger_pairs(panel, args.window, ends=ends), 1)
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
    params = dict(
        common,
        pairs=int(n_pairs),
        days=int(ends.size),
        cells=int(n_cells),
        window=args.window,
        statsmodels_per_cell_s=sm_cell,
        statsmodels_cells_measured=int(picks.size),
        statsmodels_extrapolated=bool(picks.size < n_cells),
    )
    ref = dict(reference="statsmodels coint", reference_value=sm_cell * n_cells, lower_is_better=True)
    w.metric(
        "rescreen",
        "time",
        ours,
        "s",
        **ref,
        threads=threads,
        headline=True,
        label=f"daily re-screen, {n_pairs} pairs x {ends.size} days",
        **params,
    )
    w.metric("rescreen", "time_1thread", ours_1t, "s", **ref, threads=1, **params)
    w.metric("rescreen", "max_abs_dstat_vs_statsmodels", d_stat, "", **params)
    w.metric("rescreen", "max_abs_dpvalue_vs_statsmodels", d_p, "", **params)


def _large_pool(args: argparse.Namespace, w: RecordWriter, common: dict[str, Any]) -> None:
    """One selection date over every pair of a ``--pool``-ticker synthetic pool."""
    from kernels import engle_granger_pairs

    rng = np.random.default_rng(args.seed + 7)
    panel = synthetic_panel(args.pool, args.window, args.seed + 3)
    n_pairs = args.pool * (args.pool - 1) // 2
    engle_granger_pairs(panel[:, :8])  # warm: numba cache load
    start = time.perf_counter()
    res = engle_granger_pairs(panel)
    ours = time.perf_counter() - start
    picks = rng.choice(n_pairs, size=min(args.pool_sample, n_pairs), replace=False)
    d_stat = d_p = 0.0
    start = time.perf_counter()
    for k in picks:
        stat, pvalue = _sm_coint(panel[:, res.i[k]], panel[:, res.j[k]])
        d_stat = max(d_stat, abs(stat - res.stat[k]))
        d_p = max(d_p, abs(pvalue - res.pvalue[k]))
    sm_pair = (time.perf_counter() - start) / picks.size
    params = dict(
        common,
        tickers=args.pool,
        pairs=int(n_pairs),
        window=args.window,
        statsmodels_pairs_measured=int(picks.size),
        statsmodels_per_pair_s=sm_pair,
        statsmodels_extrapolated=bool(picks.size < n_pairs),
    )
    w.metric(
        "large_pool",
        "time",
        ours,
        "s",
        reference="statsmodels coint",
        reference_value=sm_pair * n_pairs,
        lower_is_better=True,
        headline=True,
        label=f"one selection date, all {n_pairs:,} pairs of {args.pool} tickers",
        **params,
    )
    w.metric("large_pool", "max_abs_dstat_vs_statsmodels", d_stat, "", **params)
    w.metric("large_pool", "max_abs_dpvalue_vs_statsmodels", d_p, "", **params)


def _rolling_beta(
    args: argparse.Namespace,
    w: RecordWriter,
    panel: np.ndarray,
    ii: np.ndarray,
    jj: np.ndarray,
    ours: Callable[..., Any],
    common: dict[str, Any],
) -> None:
    import pandas as pd
    from statsmodels.regression.rolling import RollingOLS

    from kernels.reference import rolling_hedge_reference

    win = args.beta_window
    frame = pd.DataFrame(panel)

    def run_ours() -> list[np.ndarray]:
        return [ours(panel[:, i], panel[:, j], win)[1] for i, j in zip(ii, jj)]

    def run_pandas() -> list[np.ndarray]:
        out = []
        for i, j in zip(ii, jj):
            x = frame[j]
            out.append((frame[i].rolling(win).cov(x) / x.rolling(win).var()).to_numpy())
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
            np.asarray(RollingOLS(panel[:, i], design, window=win).fit(params_only=True).params)[:, 1]
        )
    t_rols = (time.perf_counter() - start) * ii.size / n_rols
    exact = rolling_hedge_reference(panel[:, ii[0]], panel[:, jj[0]], win)[1]
    params = dict(
        common, pairs=int(ii.size), sessions=int(panel.shape[0]), window=win, rollingols_pairs_measured=n_rols
    )
    w.metric(
        "rolling_beta",
        "time",
        t_ours,
        "s",
        reference="pandas rolling cov/var",
        reference_value=t_pandas,
        lower_is_better=True,
        headline=True,
        label=f"rolling {win}-session hedge ratio, {ii.size} pairs",
        **params,
    )
    w.metric(
        "rolling_beta",
        "time_vs_rollingols",
        t_ours,
        "s",
        reference="statsmodels RollingOLS",
        reference_value=t_rols,
        lower_is_better=True,
        rollingols_extrapolated=bool(n_rols < ii.size),
        **params,
    )
    diff_pd = max(float(np.nanmax(np.abs(a - b))) for a, b in zip(ours_beta, pandas_beta))
    diff_rols = max(float(np.nanmax(np.abs(a - b))) for a, b in zip(ours_beta, rols_beta))
    w.metric("rolling_beta", "max_abs_dbeta_vs_pandas", diff_pd, "", **params)
    w.metric("rolling_beta", "max_abs_dbeta_vs_rollingols", diff_rols, "", **params)
    w.metric(
        "rolling_beta",
        "first_pair_max_abs_err_vs_exact_ours",
        float(np.nanmax(np.abs(ours_beta[0] - exact))),
        "",
        **params,
    )
    w.metric(
        "rolling_beta",
        "first_pair_max_abs_err_vs_exact_pandas",
        float(np.nanmax(np.abs(pandas_beta[0] - exact))),
        "",
        **params,
    )


if __name__ == "__main__":
    run_main(main)
