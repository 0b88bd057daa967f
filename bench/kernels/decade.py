"""The decade case: daily re-screens of a 3,000-ticker market for ten years, streamed to disk.

Every pair of ``--tickers`` series (3,000: 4,498,500 pairs) is tested on each of ``--dates``
consecutive dates (2,520) over a ``--window``-session lookback (2,520, the AIC lag choice up to
statsmodels' cap, 27 at this length) with :func:`kernels.rescreen`, which writes each date's
top-k pairs (and, with ``--pvalue-cut``, every pair passing it) as Parquet partitioned by date.
The series are the real tickers of ``--prices`` files (as the universe case takes them) and
synthetic ones beyond. ``--dates`` / ``--tickers`` cut the case for a smaller machine; a cut
run is a slice, and the records extrapolate it to the whole decade.

The run is a fresh subprocess (its peak resident memory is the screen's) with a progress bar
on stderr. In the parent, in the same run: the machine's measured peak (eight-wide FMA chains on
as many threads as the screen uses, :func:`kernels.speed.peak_gflops`) and speed index before
the slice; after it, the per-date kernel (:func:`kernels.rolling_engle_granger_pairs`, every
window from scratch) on ``--per-date-dates`` of the slice's dates, extrapolated to the slice,
with the p-value difference and the lag agreement on those dates (every pair), and statsmodels
``coint`` on ``--sample`` random cells. The operations are the kernels' own counts
(:attr:`kernels.SlidingEG.ops`); the fraction of peak is the later dates' operations per second
over the measured peak.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench._args import BenchParser, run_main
from bench.kernels.decade_size import DECADE, GOAL_GIB, GOAL_S, decade_seconds
from bench.records import RecordWriter

__all__ = ["DECADE", "GOAL_S", "GOAL_GIB", "HELP", "add_decade_args", "decade_case", "main", "parser"]

_GIB = 1024.0**3
# operations of the exact start (matrix products, the per-ticker sums): not per pair-date work
_START_OPS = ("exact_blas", "ticker_sums", "pair_exact")


def add_decade_args(ap: argparse.ArgumentParser, prefix: str = "") -> None:
    """The case's options (``prefix`` "decade-" on ``localfin bench kernels``)."""
    p = f"--{prefix}"
    ap.add_argument(f"{p}tickers", type=int, default=None, help="tickers (3,000; a slice: fewer)")
    ap.add_argument(f"{p}dates", type=int, default=None, help="daily dates (2,520; a slice: fewer)")
    ap.add_argument(f"{p}window", type=int, default=DECADE["window"], help="lookback (sessions)")
    ap.add_argument(
        f"{p}per-date-dates", type=int, default=1, help="dates the per-date kernel is timed on (1)"
    )
    ap.add_argument(
        f"{p}sample", type=int, default=None, help="statsmodels cells (20; 4 with kernels --quick)"
    )
    ap.add_argument(f"{p}top-k", type=int, default=100, help="pairs written per date, lowest p-value first")
    ap.add_argument(
        f"{p}pvalue-cut", type=float, default=None, help="also write every pair with p-value <= this"
    )
    ap.add_argument(f"{p}chunk", type=int, default=4, help="dates per kernel call (results held at once)")
    ap.add_argument(
        f"{p}checkpoint-every", type=int, default=252, help="dates between saved states (resume point)"
    )
    ap.add_argument(f"{p}out", type=Path, default=None, help="output folder (default: a temporary one)")


def _universe_calendar(files: list[str], n_obs: int) -> list[str]:
    """Session labels: the price files' calendar where it is long enough, else business days."""
    import pandas as pd

    dates: set[str] = set()
    last = None
    for path in files:
        frame = pd.read_csv(path, usecols=["date"])
        dates |= set(frame["date"].astype(str))
        end = str(frame["date"].astype(str).max())
        last = end if last is None else min(last, end)
    calendar = sorted(d for d in dates if last is None or d <= last)[-n_obs:]
    if len(calendar) == n_obs:
        return calendar
    days = pd.bdate_range(end="2023-10-27", periods=n_obs)
    return [d.strftime("%Y-%m-%d") for d in days]


# -- the timed run (a subprocess) ------------------------------------------------------------------


def _child(spec: dict[str, Any]) -> dict[str, Any]:
    import numba

    from bench.kernels.universe import universe_panel
    from kernels import RescreenConfig, SlidingEG, rescreen

    window, days = spec["window"], spec["dates"]
    panel, names = universe_panel(spec["tickers"], window + days - 1, spec["seed"], spec["files"])
    labels = _universe_calendar(spec["files"], panel.shape[0])
    tickers = names + [f"SYN{k:04d}" for k in range(panel.shape[1] - len(names))]
    walk = np.cumsum(np.random.default_rng(0).normal(0.0, 0.01, (150, 4)), axis=0)
    SlidingEG(walk).windows(np.arange(3), np.arange(120, 123))  # numba's cache, outside the clock
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    ends = np.arange(window - 1, window + days - 1)
    config = RescreenConfig(
        window=window,
        top_k=spec["top_k"],
        pvalue_cut=spec["pvalue_cut"],
        chunk=spec["chunk"],
        checkpoint_every=spec["checkpoint_every"],
    )
    keep_rows = set(spec["rows"])
    cells = np.asarray(spec["cells"], dtype=np.int64).reshape(-1, 2)
    kept: dict[str, Any] = {"rows_pvalue": {}, "rows_lag": {}, "cells_stat": {}, "cells_pvalue": {}}

    def observe(e: int, res: dict[str, np.ndarray]) -> None:
        if e in keep_rows:
            kept["rows_pvalue"][e] = res["pvalue"].copy()
            kept["rows_lag"][e] = res["lag"].copy()
        for q, (ce, k) in enumerate(cells):
            if ce == e:
                kept["cells_stat"][q] = float(res["stat"][k])
                kept["cells_pvalue"][q] = float(res["pvalue"][k])

    bar = None
    if spec["progress"]:
        from tqdm import tqdm

        bar = tqdm(total=days, unit="date", file=sys.stderr, desc=f"{len(tickers)} tickers")
    marks: dict[int, float] = {}
    cpu_marks: dict[int, float] = {}
    t0 = time.perf_counter()
    c0 = time.process_time()

    def progress(done: int, total: int) -> None:
        marks[done] = time.perf_counter() - t0
        cpu_marks[done] = time.process_time() - c0
        if bar is not None:
            bar.update(done - bar.n)

    summary = rescreen(
        panel,
        ends,
        spec["out"],
        config=config,
        tickers=tickers,
        dates=labels,
        progress=progress,
        observe=observe,
    )
    total = time.perf_counter() - t0
    cpu = time.process_time() - c0
    if bar is not None:
        bar.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    rows = sorted(kept["rows_pvalue"])
    np.savez(
        spec["npz"],
        rows=np.asarray(rows, dtype=np.int64),
        rows_pvalue=np.array([kept["rows_pvalue"][e] for e in rows]).reshape(len(rows), -1),
        rows_lag=np.array([kept["rows_lag"][e] for e in rows]).reshape(len(rows), -1),
        cells_stat=np.array([kept["cells_stat"].get(q, np.nan) for q in range(len(cells))]),
        cells_pvalue=np.array([kept["cells_pvalue"].get(q, np.nan) for q in range(len(cells))]),
    )
    out_bytes = sum(f.stat().st_size for f in Path(spec["out"]).rglob("*.parquet"))
    return {
        "total_s": total,
        "first_s": marks.get(1, total),
        "rest_s": total - marks.get(1, total),
        "rest_cpu_s": cpu - cpu_marks.get(1, cpu),
        "peak_rss_bytes": peak,
        "rss_before_bytes": rss_before,
        "ops": summary.ops,
        "pairs": summary.pairs,
        "dates_run": summary.dates_run,
        "real_tickers": names,
        "numba_threads": numba.get_num_threads(),
        "parquet_bytes": out_bytes,
    }


def _run_child(spec: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.kernels.decade", "--child", json.dumps(spec)],
        stdout=subprocess.PIPE,
        stderr=None if spec["progress"] else subprocess.PIPE,
        text=True,
        timeout=6 * 3600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"decade case subprocess failed: {(done.stderr or '')[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- the case --------------------------------------------------------------------------------------


def decade_case(args: Any, w: RecordWriter, common: dict[str, Any], prefix: str = "") -> None:
    """Emit the ``decade`` records (a slice when the tickers or dates are cut)."""
    from bench.kernels.universe import _sm_coint, universe_panel
    from kernels import rolling_engle_granger_pairs
    from kernels.speed import peak_gflops, speed_index_us

    get = lambda name: getattr(args, prefix.replace("-", "_") + name)  # noqa: E731
    quick = bool(getattr(args, "quick", False))
    n_tickers = get("tickers") or (150 if quick else DECADE["tickers"])
    days = get("dates") or (4 if quick else (21 if prefix else DECADE["dates"]))
    window = get("window")
    sample = get("sample") or (4 if quick else 20)
    files = [str(p) for p in getattr(args, "universe_prices", None) or getattr(args, "prices", [])]
    n_pairs = n_tickers * (n_tickers - 1) // 2
    import numba

    threads = numba.get_num_threads()
    peak = peak_gflops(threads)
    index_us = speed_index_us()
    rng = np.random.default_rng(args.seed + 13)
    rows = np.unique(np.linspace(0, days - 1, min(get("per_date_dates"), days)).round().astype(int))
    picks = rng.choice(days * n_pairs, size=min(sample, days * n_pairs), replace=False)
    cells = np.column_stack([picks // n_pairs, picks % n_pairs])
    with tempfile.TemporaryDirectory() as tmp:
        out = get("out") or Path(tmp) / "out"
        spec = {
            "tickers": n_tickers,
            "dates": days,
            "window": window,
            "seed": args.seed,
            "files": files,
            "top_k": get("top_k"),
            "pvalue_cut": get("pvalue_cut"),
            "chunk": get("chunk"),
            "checkpoint_every": get("checkpoint_every"),
            "rows": rows.tolist(),
            "cells": cells.tolist(),
            "out": str(out),
            "npz": str(Path(tmp) / "kept.npz"),
            "progress": bool(getattr(args, "progress", True)),
        }
        info = _run_child(spec)
        saved = dict(np.load(spec["npz"]))
    panel, names = universe_panel(n_tickers, window + days - 1, args.seed, files)
    ends = np.arange(window - 1, window + days - 1)
    per_date_s = []
    d_p = 0.0
    lag_same = compared = 0
    for k, e in enumerate(saved["rows"]):
        t0 = time.perf_counter()
        ref = rolling_engle_granger_pairs(panel, window, ends=ends[e : e + 1])
        per_date_s.append(time.perf_counter() - t0)
        ours = saved["rows_pvalue"][k]
        both = np.isfinite(ref.pvalue[0]) & np.isfinite(ours)
        d_p = max(d_p, float(np.max(np.abs(ref.pvalue[0][both] - ours[both]), initial=0.0)))
        lag_same += int((ref.lag[0] == saved["rows_lag"][k]).sum())
        compared += n_pairs
        del ref
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
    del panel
    size = dict(n_tickers=n_tickers, days=days, window=window, names=names)
    agree = (d_p, lag_same / max(compared, 1), sm_p, sm_stat, sm_cell, len(cells))
    _emit(w, common, info, size, per_date_s, agree, peak, threads, index_us)


def _emit(
    w: RecordWriter,
    common: dict[str, Any],
    info: dict[str, Any],
    size: dict[str, Any],
    per_date_s: list[float],
    agree: tuple[float, float, float, float, float, int],
    peak: float,
    threads: int,
    index_us: float,
) -> None:
    from kernels._validate import resolve_maxlag

    n_tickers, days, window = size["n_tickers"], size["days"], size["window"]
    n_pairs = n_tickers * (n_tickers - 1) // 2
    d_p, lag_agree, sm_p, sm_stat, sm_cell, sm_cells = agree
    ops = info["ops"]
    work = {k: v for k, v in ops.items() if k not in _START_OPS}
    pair_dates = days * n_pairs
    later = max(days - 1, 1) * n_pairs
    per_pair_date = sum(work.values()) / pair_dates
    later_s = info["rest_s"] if days > 1 else info["total_s"]
    us_later = 1e6 * later_s / later
    achieved = per_pair_date / (us_later * 1e3)  # operations per ns = GFLOP/s
    decade_s = decade_seconds(info["first_s"], n_pairs, us_later)
    slice_ref = float(np.mean(per_date_s)) * days if per_date_s else float("nan")
    peak_gib = float(info["peak_rss_bytes"]) / _GIB
    params = dict(
        common,
        tickers=n_tickers,
        real_tickers=len(size["names"]),
        pairs=n_pairs,
        dates=days,
        window=window,
        lag_cap=resolve_maxlag(None, window, 0),
        pair_dates=pair_dates,
        numba_threads=info["numba_threads"],
        speed_index_us=round(index_us, 1),
        peak_gflops=round(peak, 2),
        slice=bool(n_tickers < DECADE["tickers"] or days < DECADE["dates"]),
    )
    w.metric(
        "decade",
        "time",
        info["total_s"],
        "s",
        reference="per-date recompute (rolling_engle_granger_pairs)",
        reference_value=slice_ref,
        lower_is_better=True,
        headline=True,
        label=f"daily re-screens, {n_pairs:,} pairs x {days} dates, {window}-session lookback, streamed",
        per_date_days_measured=len(per_date_s),
        per_date_extrapolated=bool(len(per_date_s) < days),
        **params,
    )
    w.metric(
        "decade",
        "time_vs_statsmodels",
        info["total_s"],
        "s",
        reference="statsmodels coint",
        reference_value=sm_cell * pair_dates,
        lower_is_better=True,
        statsmodels_cells_measured=sm_cells,
        statsmodels_per_cell_s=sm_cell,
        **params,
    )
    w.metric("decade", "first_date_time", info["first_s"], "s", **params)
    w.metric("decade", "later_pair_date_time", us_later, "us", **params)
    w.metric(
        "decade",
        "ops_per_pair_date",
        per_pair_date,
        "count",
        counted=True,
        by_kind={k: round(v / pair_dates, 1) for k, v in work.items()},
        exact_start_ops=sum(ops[k] for k in _START_OPS if k in ops),
        **params,
    )
    w.metric("decade", "peak", peak, "GFLOP/s", threads=threads, **params)
    w.metric("decade", "achieved", achieved, "GFLOP/s", **params)
    w.metric("decade", "fraction_of_peak", achieved / peak, "fraction", **params)
    if days > 1 and info.get("rest_cpu_s", 0) > 0:
        # per CPU second the process got: on a shared machine, what the code does with a core
        per_cpu = per_pair_date * later / info["rest_cpu_s"] / 1e9
        w.metric("decade", "achieved_per_cpu_second", per_cpu, "GFLOP/s", **params)
        w.metric("decade", "fraction_of_core_peak", per_cpu / (peak / threads), "fraction", **params)
    w.metric(
        "decade",
        "decade_time_extrapolated",
        decade_s,
        "s",
        goal_s=GOAL_S,
        meets_goal=bool(decade_s <= GOAL_S),
        decade=DECADE,
        **params,
    )
    w.metric("decade", "peak_memory", peak_gib, "GiB", goal_gib=GOAL_GIB, **params)
    w.metric("decade", "memory_before_run", float(info["rss_before_bytes"]) / _GIB, "GiB", **params)
    w.metric("decade", "parquet_bytes", int(info["parquet_bytes"]), "count", **params)
    w.metric("decade", "max_abs_dpvalue_vs_per_date", d_p, "", **params)
    w.metric("decade", "lag_agreement_vs_per_date", lag_agree, "fraction", **params)
    w.metric("decade", "max_abs_dpvalue_vs_statsmodels", sm_p, "", **params)
    w.metric("decade", "max_abs_dstat_vs_statsmodels", sm_stat, "", **params)


#: the command's help (`localfin bench decade --help`), in the user's words
HELP = """A decade of daily re-screens of a 3,000-ticker market, streamed to Parquet by date.

Every pair of 3,000 tickers (4,498,500 pairs) on each of 2,520 daily dates over a ten-year
(2,520-session) lookback, AIC lag choice up to lag 27; each date's top-k pairs (and with
--pvalue-cut every pair passing it) written as the dates advance, with a progress bar. Real
tickers from --prices files first, synthetic ones beyond. --tickers and --dates cut it for a
smaller machine: the records then extrapolate the slice to the decade. Beside it, in the same
run: the machine's FMA peak, the operations counted by the kernels and the fraction of peak
reached, the per-date recompute and statsmodels on samples of the same dates.

    localfin bench decade --out runs/decade --prices prices.csv              # the whole decade
    localfin bench decade --tickers 3000 --dates 21                          # a slice
"""


def parser() -> argparse.ArgumentParser:
    """The benchmark's options (``localfin bench decade`` builds its command from them)."""
    ap = BenchParser(prog="localfin bench decade", description=HELP)
    add_decade_args(ap)
    ap.add_argument(
        "--prices", action="append", default=[], metavar="CSV", help="a long price file for real tickers"
    )
    ap.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    ap.add_argument("--seed", type=int, default=0)
    return ap


def main(argv: list[str] | None = None, writer: RecordWriter | None = None) -> int:
    """Run the case; prints one JSON record per figure and returns 0."""
    args = parser().parse_args(argv)
    for name in ("tickers", "dates"):
        value = getattr(args, name)
        if value is not None and value < (2 if name == "tickers" else 1):
            parser().error(f"--{name} must be >= {2 if name == 'tickers' else 1}, got {value}")
    for path in args.prices:
        if not Path(path).is_file():
            parser().error(f"--prices {path}: no such file")
    args.quick = False
    import numba

    from bench.kernels.blas import blas_single_thread

    common = {"numba_threads": numba.get_num_threads(), "numba": numba.__version__}
    blas_ctx, blas_label = blas_single_thread()
    with blas_ctx:
        decade_case(
            args, writer or RecordWriter("kernels"), dict(common, statsmodels_blas_threads=blas_label)
        )
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        os.environ.setdefault("PYTHONWARNINGS", "ignore")
        result = _child(json.loads(sys.argv[2]))
        sys.stdout.write(json.dumps(result) + "\n")
    else:
        run_main(main)
