"""Daily re-screens of a whole market, streamed to disk as the dates advance.

:func:`rescreen` runs the sliding Engle-Granger screen (:class:`kernels.SlidingEG`) over a run of
window ends and writes, for each date, the ``top_k`` pairs of lowest p-value and (optionally)
every pair whose p-value is at most ``pvalue_cut``, as Parquet partitioned by date::

    OUT/manifest.json                          the run's settings (a resume must match them)
    OUT/top/date=<label>/part-0.parquet         rank, i, j, ticker_i, ticker_j, stat, pvalue, lag,
                                               beta, alpha (rank 0: lowest p-value)
    OUT/pass/date=<label>/part-0.parquet        the same columns, every pair passing the cut
    OUT/checkpoint/                            the screen's carried sums at the last checkpoint

Memory is bounded by the screen's pair sums (p + 4 numbers a pair, 31 at lag cap 27) plus one
chunk of dates' results (``chunk`` x pairs x 40 bytes), whatever the number of dates: nothing of
a finished date is kept. A date's partitions are written to a temporary name and renamed, so a
partition is either complete or absent.

Resuming. Every ``checkpoint_every`` finished dates the carried sums are saved (their size: the
pair sums, 1.1 GB for 3,000 tickers; written to a temporary folder, then renamed). A run started
again on the same output folder with the same settings and panel restores the last checkpoint
and runs the dates after it again; since the sums it restores are the ones the first run had,
the dates it writes again are the same bit for bit, and so is the whole output. With
``checkpoint_every = 1`` a run resumes from its last finished date.

A date's selection: pairs with a NaN p-value (a window with a gap, a constant or collinear leg)
are never selected; ties in p-value go to the lower pair index.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from kernels._validate import MIN_TEST_NOBS, as_panel, parse_autolag, resolve_maxlag
from kernels.errors import KernelInputError

__all__ = ["RescreenConfig", "RescreenSummary", "rescreen"]

log = logging.getLogger(__name__)

_COLUMNS = ("rank", "i", "j", "ticker_i", "ticker_j", "stat", "pvalue", "lag", "beta", "alpha")


@dataclass(frozen=True)
class RescreenConfig:
    """Settings of a streamed re-screen."""

    #: sessions per test window (the lookback of every date)
    window: int = 2520
    #: pairs written per date, lowest p-value first
    top_k: int = 100
    #: also write every pair with p-value at most this (None: no such file)
    pvalue_cut: float | None = None
    #: ADF lag cap (None: statsmodels' default for the window) and the lag choice ("aic", "bic", None)
    maxlag: int | None = None
    autolag: str | None = "aic"
    #: dates per kernel call: their results are held at once (chunk x pairs x 40 bytes)
    chunk: int = 4
    #: finished dates between saved states; a resume restarts at the last one
    checkpoint_every: int = 21

    def __post_init__(self) -> None:
        for name, low in (("window", MIN_TEST_NOBS), ("top_k", 0), ("chunk", 1), ("checkpoint_every", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise KernelInputError(f"{name} must be an int >= {low}, got {value!r}")
        cut = self.pvalue_cut
        if cut is not None and (
            isinstance(cut, bool) or not isinstance(cut, (int, float)) or not 0 <= cut <= 1
        ):
            raise KernelInputError(f"pvalue_cut must be None or in [0, 1], got {cut!r}")
        parse_autolag(self.autolag)
        resolve_maxlag(self.maxlag, self.window, 0)


@dataclass(frozen=True)
class RescreenSummary:
    """What a call did: dates in the run, dates finished before it (restored from a checkpoint)
    and in it, whether it stopped early, its wall time (seconds) and operations by kind."""

    dates_total: int
    dates_restored: int
    dates_run: int
    pairs: int
    seconds: float
    ops: dict[str, int] = field(default_factory=dict)


def _manifest(config: RescreenConfig, panel: np.ndarray, ends: np.ndarray, tickers: list[str]) -> dict:
    digest = hashlib.sha256()
    digest.update(np.ascontiguousarray(panel).tobytes())
    digest.update(ends.tobytes())
    digest.update("\n".join(tickers).encode())
    return {
        "config": asdict(config),
        "n_series": int(panel.shape[1]),
        "n_dates": int(ends.size),
        "sha256": digest.hexdigest(),
    }


def _atomic_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


def _save_checkpoint(folder: Path, state: dict[str, np.ndarray], next_date: int) -> None:
    tmp = folder.with_name(folder.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    for name, arr in state.items():
        np.save(tmp / f"{name}.npy", arr)
    (tmp / "meta.json").write_text(json.dumps({"next": next_date}))
    old = folder.with_name(folder.name + ".old")
    if folder.exists():
        os.replace(folder, old)
    os.replace(tmp, folder)
    if old.exists():
        shutil.rmtree(old)


def _load_checkpoint(folder: Path) -> tuple[dict[str, np.ndarray], int] | None:
    """The saved state and the index of the next date; the previous checkpoint when a run
    stopped between the two renames of :func:`_save_checkpoint`; None when there is none."""
    meta = folder / "meta.json"
    if not meta.is_file():
        old = folder.with_name(folder.name + ".old")
        if not (old / "meta.json").is_file():
            return None
        folder, meta = old, old / "meta.json"
    state = {p.stem: np.load(p) for p in folder.glob("*.npy")}
    return state, int(json.loads(meta.read_text())["next"])


def _select(pvalue: np.ndarray, top_k: int, cut: float | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Pair indices of the top_k lowest finite p-values (ascending, ties by index) and of every
    pair with p-value <= cut (by index)."""
    score = np.where(np.isfinite(pvalue), pvalue, np.inf)
    k = min(top_k, int(np.isfinite(pvalue).sum()))
    if k == 0:
        top = np.empty(0, dtype=np.int64)
    else:
        kth = np.partition(score, k - 1)[k - 1]
        cand = np.flatnonzero(score <= kth)
        top = cand[np.lexsort((cand, score[cand]))][:k]
    passing = None if cut is None else np.flatnonzero(score <= cut)
    return top, passing


def _write(path: Path, rows: np.ndarray, rank: bool, res: dict[str, np.ndarray], tickers: list[str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = np.asarray(tickers, dtype=object)
    i, j = res["i"][rows], res["j"][rows]
    table = pa.table(
        {
            "rank": np.arange(rows.size, dtype=np.int32) if rank else np.full(rows.size, -1, dtype=np.int32),
            "i": i.astype(np.int32),
            "j": j.astype(np.int32),
            "ticker_i": pa.array(names[i].tolist(), type=pa.string()),
            "ticker_j": pa.array(names[j].tolist(), type=pa.string()),
            "stat": res["stat"][rows],
            "pvalue": res["pvalue"][rows],
            "lag": res["lag"][rows].astype(np.int16),
            "beta": res["beta"][rows],
            "alpha": res["alpha"][rows],
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def rescreen(
    prices2d: np.ndarray,
    ends: Sequence[int] | np.ndarray,
    out_dir: str | Path,
    *,
    config: RescreenConfig = RescreenConfig(),
    tickers: Sequence[str] | None = None,
    dates: Sequence[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    observe: Callable[[int, dict[str, np.ndarray]], None] | None = None,
) -> RescreenSummary:
    """Screen every pair of ``prices2d`` ((sessions, series) log prices, NaN allowed) on each
    window ending at ``ends`` (increasing session indices, each >= window - 1), streaming each
    date's selection to ``out_dir`` (see the module docstring), resuming a run found there.

    tickers: one name per series (default "S0", "S1", ...); dates: one label per session, used
    as the partition value (default the session index). ``progress(done, total)`` is called
    after each finished date (done counts restored dates too); an exception it raises stops the
    run after that date, which a later call resumes. ``observe(e, results)``, if given, sees
    every pair's results of date e (arrays i, j, stat, pvalue, lag, beta, alpha) before the
    selection; it must not keep them beyond the call unless it copies them.
    """
    from kernels.sliding import SlidingEG

    panel = as_panel(prices2d, "prices2d")
    n_obs, n_series = panel.shape
    end = np.asarray(ends)
    if end.ndim != 1 or end.size == 0 or not np.issubdtype(end.dtype, np.integer):
        raise KernelInputError(f"ends must be a non-empty 1-D sequence of ints, got {end!r:.80}")
    end = end.astype(np.int64)
    w = config.window
    if end[0] < w - 1 or end[-1] > n_obs - 1 or (np.diff(end) <= 0).any():
        raise KernelInputError(
            f"ends must increase and lie in [{w - 1}, {n_obs - 1}] (window {w}), got {end[0]}..{end[-1]}"
        )
    names = [f"S{k}" for k in range(n_series)] if tickers is None else [str(t) for t in tickers]
    labels = [str(k) for k in range(n_obs)] if dates is None else [str(d) for d in dates]
    if len(names) != n_series:
        raise KernelInputError(f"tickers has {len(names)} names; allowed: one per series ({n_series})")
    if len(labels) != n_obs:
        raise KernelInputError(f"dates has {len(labels)} labels; allowed: one per session ({n_obs})")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    manifest = _manifest(config, panel, end, names)
    mpath = out / "manifest.json"
    if mpath.is_file():
        found = json.loads(mpath.read_text())
        if found != manifest:
            diff = sorted(k for k in manifest if found.get(k) != manifest[k])
            raise KernelInputError(
                f"{out} holds a run with other settings or data ({', '.join(diff)} differ); "
                "allowed: the same settings and panel, or an empty folder"
            )
    else:
        _atomic_json(mpath, manifest)
    screen = SlidingEG(panel, maxlag=config.maxlag, autolag=config.autolag)
    start = 0
    saved = _load_checkpoint(out / "checkpoint")
    if saved is not None:
        screen.import_state(saved[0])
        start = saved[1]
        log.info("resuming %s at date %d of %d", out, start, end.size)
    ops0 = screen.ops
    t0 = time.perf_counter()
    n_pairs = screen.i.shape[0]
    done = start
    while done < end.size:
        # a kernel call never runs past a checkpoint
        hi = min(
            done + config.chunk, (done // config.checkpoint_every + 1) * config.checkpoint_every, end.size
        )
        res = screen.windows(end[done:hi] - w + 1, end[done:hi])
        for e in range(hi - done):
            cols = {
                "i": res.i,
                "j": res.j,
                "stat": res.stat[e],
                "pvalue": res.pvalue[e],
                "lag": res.lag[e],
                "beta": res.beta[e],
                "alpha": res.alpha[e],
            }
            if observe is not None:
                observe(done + e, cols)
            top, passing = _select(res.pvalue[e], config.top_k, config.pvalue_cut)
            label = labels[int(end[done + e])]
            _write(out / "top" / f"date={label}" / "part-0.parquet", top, True, cols, names)
            if passing is not None:
                _write(out / "pass" / f"date={label}" / "part-0.parquet", passing, False, cols, names)
            if progress is not None:
                progress(done + e + 1, int(end.size))
        del res
        done = hi
        if done % config.checkpoint_every == 0 or done == end.size:
            _save_checkpoint(out / "checkpoint", screen.export_state(), done)
    ops1 = screen.ops
    return RescreenSummary(
        dates_total=int(end.size),
        dates_restored=start,
        dates_run=done - start,
        pairs=int(n_pairs),
        seconds=time.perf_counter() - t0,
        ops={k: ops1[k] - ops0[k] for k in ops1},
    )
