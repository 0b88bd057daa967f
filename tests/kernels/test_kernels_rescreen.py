"""The streamed re-screen: each date's selection is the per-date kernel's, written as the dates
advance, and a run stopped part-way resumes to the same files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from kernels_synth import make_pair

from kernels import KernelInputError, RescreenConfig, rescreen, rolling_engle_granger_pairs

pq = pytest.importorskip("pyarrow.parquet")


def _panel() -> np.ndarray:
    rng = np.random.default_rng(77)
    cols = [make_pair(rng, 260, coint=c, ar=0.5)[k] for c in (True, False, True) for k in (0, 1)]
    panel = np.column_stack(cols)
    panel[120, 2] = np.nan  # a gap: the windows holding it give NaN for series 2's pairs
    return panel


class _Stop(Exception):
    pass


def _read(out: Path, kind: str) -> dict[str, object]:
    return {
        p.parent.name: pq.read_table(p).to_pandas() for p in sorted((out / kind).glob("date=*/*.parquet"))
    }


def test_rescreen_streams_each_dates_selection_and_resumes_identically(tmp_path: Path) -> None:
    panel = _panel()
    window = 80
    ends = np.arange(100, 160)
    dates = [f"2020-{k:05d}" for k in range(panel.shape[0])]
    tickers = [f"T{k}" for k in range(panel.shape[1])]
    config = RescreenConfig(window=window, top_k=4, pvalue_cut=0.5, chunk=3, checkpoint_every=7)
    whole = tmp_path / "whole"
    summary = rescreen(panel, ends, whole, config=config, tickers=tickers, dates=dates)
    assert (summary.dates_total, summary.dates_restored, summary.dates_run) == (60, 0, 60)
    assert summary.ops["factor"] > 0 and summary.ops["pair_slide"] > 0
    top = _read(whole, "top")
    passing = _read(whole, "pass")
    assert len(top) == 60
    # each date's files against the per-date kernel
    ref = rolling_engle_granger_pairs(panel, window, ends=ends)
    for e, end in enumerate(ends):
        frame = top[f"date={dates[end]}"]
        p = np.where(np.isfinite(ref.pvalue[e]), ref.pvalue[e], np.inf)
        want = np.lexsort((np.arange(p.size), p))[:4]
        got = np.nonzero(
            (ref.i[:, None] == frame["i"].to_numpy()) & (ref.j[:, None] == frame["j"].to_numpy())
        )[0]
        assert got.tolist() == sorted(want.tolist()) and frame["pvalue"].is_monotonic_increasing
        np.testing.assert_allclose(np.sort(frame["pvalue"]), ref.pvalue[e][want], rtol=0, atol=1e-10)
        np.testing.assert_array_equal(frame.sort_values("pvalue")["lag"], ref.lag[e][want])
        assert list(frame["rank"]) == [0, 1, 2, 3]
        assert frame["ticker_i"].tolist() == [tickers[i] for i in frame["i"]]
        cut = passing[f"date={dates[end]}"]
        want_cut = np.flatnonzero(ref.pvalue[e] <= 0.5)
        assert (cut["i"].to_numpy() == ref.i[want_cut]).all() and (
            cut["j"].to_numpy() == ref.j[want_cut]
        ).all()
        np.testing.assert_allclose(cut["pvalue"], ref.pvalue[e][want_cut], rtol=0, atol=1e-10)
        if end - window + 1 <= 120 <= end:  # the gap: no pair of series 2 is selected
            assert 2 not in set(cut["i"]) | set(cut["j"]) | set(frame["i"]) | set(frame["j"])
    # stopped after 17 dates (an exception from the progress hook), then resumed
    part = tmp_path / "part"
    seen: list[int] = []

    def stop_at_17(done: int, total: int) -> None:
        seen.append(done)
        if done == 17:
            raise _Stop

    with pytest.raises(_Stop):
        rescreen(panel, ends, part, config=config, tickers=tickers, dates=dates, progress=stop_at_17)
    assert len(_read(part, "top")) == 17
    again = rescreen(panel, ends, part, config=config, tickers=tickers, dates=dates)
    assert again.dates_restored == 14 and again.dates_run == 46  # from the checkpoint after 14 dates
    for kind in ("top", "pass"):
        a, b = _read(whole, kind), _read(part, kind)
        assert a.keys() == b.keys()
        for key in a:
            assert a[key].equals(b[key]), (kind, key)
    # a finished run resumes to nothing; other settings on the same folder are refused
    assert rescreen(panel, ends, part, config=config, tickers=tickers, dates=dates).dates_run == 0
    with pytest.raises(KernelInputError, match="other settings or data"):
        rescreen(
            panel, ends, part, config=RescreenConfig(window=window, top_k=5), tickers=tickers, dates=dates
        )


def test_rescreen_config_and_inputs_are_checked(tmp_path: Path) -> None:
    with pytest.raises(KernelInputError, match="top_k must be an int >= 0"):
        RescreenConfig(top_k=-1)
    with pytest.raises(KernelInputError, match="pvalue_cut must be None or in"):
        RescreenConfig(pvalue_cut=2.0)
    with pytest.raises(KernelInputError, match="window must be an int >= 30"):
        RescreenConfig(window=10)
    panel = _panel()
    with pytest.raises(KernelInputError, match="ends must increase"):
        rescreen(panel, [100, 99], tmp_path, config=RescreenConfig(window=80))
    with pytest.raises(KernelInputError, match="tickers has 2 names"):
        rescreen(panel, [100], tmp_path / "x", config=RescreenConfig(window=80), tickers=["a", "b"])
