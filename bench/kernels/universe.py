"""The universe case of ``localfin bench kernels``: a year of daily re-screens of an S&P 500-size
universe with the sliding Engle-Granger screen (:class:`kernels.SlidingEG`).

Every pair of ``--universe-tickers`` series (500: 124,750 pairs) is tested on each of
``--universe-days`` consecutive dates (252) over a ``--universe-window``-session lookback
(2,520). The series are real log prices where ``--universe-prices`` files have them (long
CSVs ``date,ticker,adj_close`` or ``date,ticker,close``; each ticker with a price on every
session of the span is used, the span ending at the earliest last date among the files) and
:func:`kernels.speed.synthetic_panel` series beyond.

The timed run is a fresh subprocess (so its peak resident memory is the screen's, numba's cache
loaded before the clock starts); it reports the whole year, the first date (every sum computed
exactly) and the other dates. In the parent, in the same run: the per-date kernel
(:func:`kernels.rolling_engle_granger_pairs`) on ``--universe-per-date-days`` of the dates,
extrapolated to the year, with the largest p-value difference and the lag agreement on those
dates; statsmodels ``coint`` on ``--universe-sample`` random (pair, date) cells, extrapolated.
``--universe-scaling`` adds points over the number of tickers and the lookback (synthetic
series, ``--universe-scaling-days`` dates each), each in its own subprocess. Every record
carries the machine's speed index (one Engle-Granger window, as ``--quick`` times it) measured
just before the case.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.records import RecordWriter

__all__ = ["GOAL_S", "GOAL_GIB", "universe_panel", "universe_case", "add_universe_args"]

#: The goal for the default size on two cores: the year within a minute, within 8 GiB.
GOAL_S = 60.0
GOAL_GIB = 8.0
_GIB = 1024.0**3


def add_universe_args(ap: Any) -> None:
    """The universe case's options on ``localfin bench kernels``' parser."""
    ap.add_argument("--universe-tickers", type=int, default=None, help="universe: tickers (500; 100 quick)")
    ap.add_argument("--universe-days", type=int, default=None, help="universe: dates (252; 21 quick)")
    ap.add_argument("--universe-window", type=int, default=2520, help="universe: lookback (sessions)")
    ap.add_argument(
        "--universe-prices",
        action="append",
        default=[],
        metavar="CSV",
        help="universe: a long price file (date,ticker,adj_close|close) for real tickers (repeatable)",
    )
    ap.add_argument(
        "--universe-per-date-days",
        type=int,
        default=None,
        help="universe: dates the per-date kernel is timed on (3; 1 quick)",
    )
    ap.add_argument(
        "--universe-sample", type=int, default=None, help="universe: statsmodels cells (40; 8 quick)"
    )
    ap.add_argument(
        "--universe-scaling", action="store_true", help="universe: also time points over tickers and lookback"
    )
    ap.add_argument("--universe-scaling-days", type=int, default=63, help="universe scaling: dates per point")


def resolve_universe_args(args: Any) -> str | None:
    """Fill the quick/full defaults; an error message for a bad combination (None if fine)."""
    quick = bool(args.quick)
    for name, full, small in (
        ("universe_tickers", 500, 100),
        ("universe_days", 252, 21),
        ("universe_per_date_days", 3, 1),
        ("universe_sample", 40, 8),
    ):
        if getattr(args, name) is None:
            setattr(args, name, small if quick else full)
    if args.universe_tickers < 2 or args.universe_days < 1 or args.universe_window < 30:
        return "need --universe-tickers >= 2, --universe-days >= 1, --universe-window >= 30"
    if args.universe_per_date_days < 1 or args.universe_sample < 1 or args.universe_scaling_days < 2:
        return "need --universe-per-date-days >= 1, --universe-sample >= 1, --universe-scaling-days >= 2"
    for path in args.universe_prices:
        if not Path(path).is_file():
            return f"--universe-prices {path}: no such file"
    return None


# -- the panel -------------------------------------------------------------------------------------


def _read_real(files: Sequence[str | Path], n_obs: int) -> tuple[np.ndarray, list[str]]:
    """Log prices (n_obs, k) of the tickers with a price on each of the span's n_obs sessions."""
    import pandas as pd

    frames = []
    for path in files:
        head = pd.read_csv(path, nrows=0).columns
        field = "adj_close" if "adj_close" in head else "close"
        frame = pd.read_csv(path, usecols=["date", "ticker", field])
        frames.append(frame.pivot_table(index="date", columns="ticker", values=field).sort_index())
    if not frames:
        return np.empty((n_obs, 0)), []
    last = min(f.index.max() for f in frames)
    taken: list[str] = []
    cols = []
    calendar = sorted(set().union(*(set(f.index) for f in frames)))
    calendar = [d for d in calendar if d <= last][-n_obs:]
    if len(calendar) < n_obs:
        return np.empty((n_obs, 0)), []
    for frame in frames:
        part = frame.reindex(calendar)
        for ticker in part.columns:
            values = part[ticker].to_numpy(dtype=np.float64)
            if ticker in taken or not (np.isfinite(values).all() and (values > 0).all()):
                continue
            taken.append(str(ticker))
            cols.append(np.log(values))
    return (np.column_stack(cols) if cols else np.empty((n_obs, 0))), taken


def universe_panel(
    n_tickers: int, n_obs: int, seed: int, price_files: Sequence[str | Path] = ()
) -> tuple[np.ndarray, list[str]]:
    """(n_obs, n_tickers) log prices: real tickers first (up to n_tickers), synthetic beyond.

    Returns the panel and the real tickers' names (the synthetic ones are unnamed).
    """
    from kernels.speed import synthetic_panel

    real, names = _read_real(price_files, n_obs)
    real, names = real[:, :n_tickers], names[:n_tickers]
    extra = n_tickers - len(names)
    if extra <= 0:
        return np.ascontiguousarray(real), names
    synth = synthetic_panel(extra, n_obs, seed)
    return np.ascontiguousarray(np.column_stack([real, synth])), names


# -- the timed run (a subprocess) ------------------------------------------------------------------


def _child(spec: dict[str, Any]) -> dict[str, Any]:
    """Time the sliding screen over the dates; save the requested rows and cells to spec['out']."""
    import numba

    from kernels import SlidingEG

    window, days = spec["window"], spec["days"]
    panel, names = universe_panel(spec["tickers"], window + days - 1, spec["seed"], spec["files"])
    walk = np.cumsum(np.random.default_rng(0).normal(0.0, 0.01, (150, 4)), axis=0)
    SlidingEG(walk).windows(np.arange(3), np.arange(120, 123))  # numba's cache, outside the clock
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    ends = np.arange(window - 1, window + days - 1)
    starts = ends - window + 1
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    screen = SlidingEG(panel)
    first = screen.windows(starts[:1], ends[:1])
    t1 = time.perf_counter()
    ops_first = screen.ops
    rest = screen.windows(starts[1:], ends[1:]) if days > 1 else None
    t2 = time.perf_counter()
    cpu = time.process_time() - cpu0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    def cell(name: str, e: np.ndarray, k: np.ndarray) -> np.ndarray:
        """Values at dates e, pairs k (without joining the year's arrays, which would double them)."""
        out = getattr(first, name)[0, k].copy()
        later = e > 0
        if rest is not None and later.any():
            out[later] = getattr(rest, name)[e[later] - 1, k[later]]
        return out

    n_pairs = first.stat.shape[1]
    keep_rows = np.asarray(spec["rows"], dtype=np.int64)
    row_e = np.repeat(keep_rows, n_pairs)
    row_k = np.tile(np.arange(n_pairs), keep_rows.size)
    cells = np.asarray(spec["cells"], dtype=np.int64).reshape(-1, 2)
    np.savez(
        spec["out"],
        rows_pvalue=cell("pvalue", row_e, row_k).reshape(keep_rows.size, n_pairs),
        rows_lag=cell("lag", row_e, row_k).reshape(keep_rows.size, n_pairs),
        cells_stat=cell("stat", cells[:, 0], cells[:, 1]),
        cells_pvalue=cell("pvalue", cells[:, 0], cells[:, 1]),
    )
    finite = np.isfinite(first.pvalue).sum() + (0 if rest is None else np.isfinite(rest.pvalue).sum())
    stats = screen.stats
    return {
        "total_s": t2 - t0,
        "first_s": t1 - t0,
        "rest_s": t2 - t1,
        "cpu_s": cpu,
        "peak_rss_bytes": peak,
        "rss_before_bytes": rss_before,
        "exact": stats.exact,
        "slides": stats.slides,
        "resets": stats.resets,
        "finite_fraction": float(finite) / (days * n_pairs),
        "real_tickers": names,
        "numba_threads": numba.get_num_threads(),
        "ops_first": ops_first,
        "ops": screen.ops,
    }


def _run_child(spec: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.kernels.universe", json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"universe case subprocess failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- the case --------------------------------------------------------------------------------------


def _sm_coint(y: np.ndarray, x: np.ndarray) -> tuple[float, float]:
    from statsmodels.tsa.stattools import coint

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = coint(y, x, trend="c", autolag="aic")
    return float(res[0]), float(res[1])


def universe_case(args: Any, w: RecordWriter, common: dict[str, Any]) -> None:
    """Emit the ``universe`` records (and ``universe_scaling`` with ``--universe-scaling``)."""
    import numba

    from kernels import rolling_engle_granger_pairs
    from kernels.speed import peak_gflops, speed_index_us

    window, days, n_tickers = args.universe_window, args.universe_days, args.universe_tickers
    n_pairs = n_tickers * (n_tickers - 1) // 2
    rng = np.random.default_rng(args.seed + 11)
    peak = peak_gflops(numba.get_num_threads())
    index_us = speed_index_us()
    per_date_rows = np.unique(np.linspace(0, days - 1, args.universe_per_date_days).round().astype(int))
    n_cells = days * n_pairs
    picks = rng.choice(n_cells, size=min(args.universe_sample, n_cells), replace=False)
    cells = np.column_stack([picks // n_pairs, picks % n_pairs])
    with tempfile.TemporaryDirectory() as tmp:
        spec = {
            "tickers": n_tickers,
            "days": days,
            "window": window,
            "seed": args.seed,
            "files": [str(p) for p in args.universe_prices],
            "rows": per_date_rows.tolist(),
            "cells": cells.tolist(),
            "out": str(Path(tmp) / "rows.npz"),
        }
        info = _run_child(spec)
        saved = dict(np.load(spec["out"]))
    panel, names = universe_panel(n_tickers, window + days - 1, args.seed, args.universe_prices)
    ends = np.arange(window - 1, window + days - 1)
    # the per-date kernel on some of the dates, extrapolated to the year
    per_date_s = []
    d_p = 0.0
    lag_same = 0
    compared = 0
    for k, e in enumerate(per_date_rows):
        t0 = time.perf_counter()
        ref = rolling_engle_granger_pairs(panel, window, ends=ends[e : e + 1])
        per_date_s.append(time.perf_counter() - t0)
        ours_p = saved["rows_pvalue"][k]
        both = np.isfinite(ref.pvalue[0]) & np.isfinite(ours_p)
        d_p = max(d_p, float(np.max(np.abs(ref.pvalue[0][both] - ours_p[both]), initial=0.0)))
        lag_same += int((ref.lag[0] == saved["rows_lag"][k]).sum())
        compared += n_pairs
    per_date_year = float(np.mean(per_date_s)) * days
    # statsmodels on random cells, extrapolated
    ii, jj = np.triu_indices(n_tickers, k=1)
    sm_p = sm_stat = 0.0
    t0 = time.perf_counter()
    for q, (e, k) in enumerate(cells):
        win = panel[ends[e] - window + 1 : ends[e] + 1]
        stat, pvalue = _sm_coint(win[:, ii[k]], win[:, jj[k]])
        if np.isfinite(saved["cells_pvalue"][q]):
            sm_p = max(sm_p, abs(pvalue - float(saved["cells_pvalue"][q])))
            sm_stat = max(sm_stat, abs(stat - float(saved["cells_stat"][q])))
    sm_cell = (time.perf_counter() - t0) / len(cells)
    total = float(info["total_s"])
    peak_gib = float(info["peak_rss_bytes"]) / _GIB
    params = dict(
        common,
        tickers=n_tickers,
        real_tickers=len(names),
        real_ticker_names=names,
        synthetic_tickers=n_tickers - len(names),
        pairs=n_pairs,
        days=days,
        window=window,
        cells=n_cells,
        numba_threads=info["numba_threads"],
        speed_index_us=round(index_us, 1),
        exact_pair_sums=info["exact"],
        slid_pair_sums=info["slides"],
        resets=info["resets"],
        finite_fraction=round(info["finite_fraction"], 4),
    )
    goal = dict(goal_s=GOAL_S, goal_gib=GOAL_GIB, meets_goal=bool(total <= GOAL_S and peak_gib <= GOAL_GIB))
    w.metric(
        "universe",
        "time",
        total,
        "s",
        reference="per-date recompute (rolling_engle_granger_pairs)",
        reference_value=per_date_year,
        lower_is_better=True,
        headline=True,
        label=f"a year of daily re-screens, {n_pairs:,} pairs x {days} dates, {window}-session lookback",
        per_date_days_measured=len(per_date_rows),
        per_date_extrapolated=bool(len(per_date_rows) < days),
        **goal,
        **params,
    )
    w.metric(
        "universe",
        "time_vs_statsmodels",
        total,
        "s",
        reference="statsmodels coint",
        reference_value=sm_cell * n_cells,
        lower_is_better=True,
        statsmodels_per_cell_s=sm_cell,
        statsmodels_cells_measured=len(cells),
        statsmodels_extrapolated=bool(len(cells) < n_cells),
        **params,
    )
    w.metric("universe", "time_per_date", total / days, "s", **params)
    w.metric("universe", "first_date_time", float(info["first_s"]), "s", **params)
    if days > 1:
        w.metric("universe", "later_date_time", float(info["rest_s"]) / (days - 1), "s", **params)
        w.metric(
            "universe",
            "later_pair_date_time",
            1e6 * float(info["rest_s"]) / ((days - 1) * n_pairs),
            "us",
            **params,
        )
    w.metric("universe", "cpu_time", float(info["cpu_s"]), "s", **params)
    w.metric("universe", "peak_memory", peak_gib, "GiB", **goal, **params)
    w.metric(
        "universe",
        "memory_before_run",
        float(info["rss_before_bytes"]) / _GIB,
        "GiB",
        **params,
    )
    if days > 1:
        _bound(w, info, params, peak, n_pairs, days)
    w.metric("universe", "max_abs_dpvalue_vs_per_date", d_p, "", **params)
    w.metric("universe", "lag_agreement_vs_per_date", lag_same / compared, "fraction", **params)
    w.metric("universe", "max_abs_dpvalue_vs_statsmodels", sm_p, "", **params)
    w.metric("universe", "max_abs_dstat_vs_statsmodels", sm_stat, "", **params)
    if args.universe_scaling:
        _scaling(args, w, common, index_us)


def _bound(
    w: RecordWriter, info: dict[str, Any], params: dict[str, Any], peak: float, n_pairs: int, days: int
) -> None:
    """The later dates' operations (counted by the kernels), the machine's peak, the fraction
    of it reached, and the decade case extrapolated from this run's time per pair and date."""
    from bench.kernels.decade_size import DECADE, decade_seconds
    from bench.kernels.decade_size import GOAL_S as DECADE_GOAL_S

    later = (days - 1) * n_pairs
    ops = {k: (info["ops"][k] - info["ops_first"][k]) / later for k in info["ops"]}
    per_pair_date = sum(ops.values())
    us = 1e6 * float(info["rest_s"]) / later
    achieved = per_pair_date / (us * 1e3)
    decade_s = decade_seconds(float(info["first_s"]), n_pairs, us)
    by_kind = {k: round(v, 1) for k, v in ops.items() if v}
    w.metric("universe", "ops_per_pair_date", per_pair_date, "count", counted=True, by_kind=by_kind, **params)
    w.metric("universe", "peak", peak, "GFLOP/s", **params)
    w.metric("universe", "achieved", achieved, "GFLOP/s", **params)
    w.metric("universe", "fraction_of_peak", achieved / peak, "fraction", **params)
    w.metric(
        "universe",
        "decade_time_extrapolated",
        decade_s,
        "s",
        goal_s=DECADE_GOAL_S,
        meets_goal=bool(decade_s <= DECADE_GOAL_S),
        decade=DECADE,
        from_later_pair_date_us=round(us, 4),
        **params,
    )


def _scaling(args: Any, w: RecordWriter, common: dict[str, Any], index_us: float) -> None:
    """Time per later date and first date at several ticker counts and lookbacks (synthetic)."""
    days = args.universe_scaling_days
    points = [(n, args.universe_window) for n in (100, 200, 300, 400, 500)]
    points += [(200, lb) for lb in (252, 504, 1260, 2520, 5040)]
    seen = set()
    for n, lookback in points:
        if (n, lookback) in seen:
            continue
        seen.add((n, lookback))
        with tempfile.TemporaryDirectory() as tmp:
            spec = {
                "tickers": n,
                "days": days,
                "window": lookback,
                "seed": args.seed,
                "files": [],
                "rows": [],
                "cells": [],
                "out": str(Path(tmp) / "rows.npz"),
            }
            info = _run_child(spec)
        n_pairs = n * (n - 1) // 2
        from kernels._validate import resolve_maxlag

        params = dict(
            common,
            tickers=n,
            pairs=n_pairs,
            window=lookback,
            lag_cap=resolve_maxlag(None, lookback, 0),
            days=days,
            speed_index_us=round(index_us, 1),
            peak_gib=round(float(info["peak_rss_bytes"]) / _GIB, 3),
            first_date_s=round(float(info["first_s"]), 4),
        )
        w.metric(
            "universe_scaling",
            "later_pair_date_time",
            1e6 * float(info["rest_s"]) / ((days - 1) * n_pairs),
            "us",
            **params,
        )
        w.metric("universe_scaling", "later_date_time", float(info["rest_s"]) / (days - 1), "s", **params)
        w.metric("universe_scaling", "first_date_time", float(info["first_s"]), "s", **params)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    result = _child(json.loads(sys.argv[1]))
    sys.stdout.write(json.dumps(result) + "\n")
