"""The sliding Engle-Granger screen against the per-date kernel, its plain twins and statsmodels."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from kernels_synth import make_pair

from kernels import (
    KernelInputError,
    SlidingEG,
    rolling_engle_granger_pairs,
    sliding_engle_granger_pairs,
)
from kernels._validate import resolve_maxlag
from kernels.reference import (
    rolling_eg_pairs_reference,
    sliding_pair_sums_reference,
    sliding_ticker_sums_reference,
)

NAMES = ("stat", "pvalue", "beta", "alpha")


def _pool(rng: np.random.Generator, n: int) -> np.ndarray:
    """Six log-price series: three cointegrated with a common walk, one independent walk, one
    collinear with another (y = 0.2 + 1.1 x exactly) and one with a NaN and a flat stretch."""
    y1, x = make_pair(rng, n, coint=True, ar=0.6)
    y2, _ = make_pair(rng, n, coint=True)
    walk = make_pair(rng, n, coint=False)[0]
    collinear = 0.2 + 1.1 * x
    odd = make_pair(rng, n, coint=True, ar=0.3)[0]
    odd[n // 3] = np.nan
    odd[n // 2 : n // 2 + 45] = odd[n // 2]
    return np.column_stack([y1, x, y2, walk, collinear, odd])


def _assert_same(res: object, twin: dict[str, np.ndarray], rtol: float = 1e-10, atol: float = 1e-12) -> None:
    np.testing.assert_array_equal(res.lag, twin["lag"])  # type: ignore[attr-defined]
    for name in NAMES:
        np.testing.assert_allclose(getattr(res, name), twin[name], rtol=rtol, atol=atol, err_msg=name)


@pytest.mark.parametrize(("maxlag", "autolag"), [(None, "aic"), (None, "bic"), (3, None)])
def test_sliding_matches_reference_small(maxlag: int | None, autolag: str | None) -> None:
    # Runs under NUMBA_DISABLE_JIT too (test_kernels_nojit.py): small windows only.
    rng = np.random.default_rng(21)
    pool = _pool(rng, 150)
    window = 40
    # consecutive ends, a jump of 9, the windows holding the NaN (index 50), the flat stretch
    ends = np.r_[39:60, 68:80, 114:119, 140:150]
    res = sliding_engle_granger_pairs(pool, window, ends=ends, maxlag=maxlag, autolag=autolag)
    twin = rolling_eg_pairs_reference(pool, window, ends, maxlag=maxlag, autolag=autolag)
    _assert_same(res, twin)
    k_odd = [k for k, (i, j) in enumerate(zip(res.i, res.j)) if j == 5]
    nan_rows = (ends >= 50) & (ends - window + 1 <= 50)
    gap = np.ix_(nan_rows, k_odd)
    assert np.isnan(res.stat[gap]).all() and (res.lag[gap] == -1).all()
    k_col = int(np.flatnonzero((res.i == 1) & (res.j == 4))[0])
    assert np.isnan(res.pvalue[:, k_col]).all() and np.isfinite(res.beta[:, k_col]).all()
    flat = (ends - window + 1 >= 75) & (ends <= 119)
    assert flat.any() and np.isnan(res.beta[np.ix_(flat, k_odd)]).all()
    assert np.isfinite(res.pvalue).sum() > 0.6 * res.pvalue.size


def test_sliding_equals_per_date_kernel_and_slides() -> None:
    rng = np.random.default_rng(5)
    pool = np.column_stack([make_pair(rng, 900, coint=c, ar=0.5)[k] for c in (True, False) for k in (0, 1)])
    pool = np.column_stack([pool, make_pair(rng, 900, coint=True, ar=0.8)[0]])
    window = 500
    ends = np.arange(window - 1, 900)
    screen = SlidingEG(pool)
    starts = ends - window + 1
    res = screen.windows(starts, ends)
    per_date = rolling_engle_granger_pairs(pool, window, ends=ends)
    np.testing.assert_array_equal(res.lag, per_date.lag)
    assert np.abs(res.stat - per_date.stat).max() < 1e-9
    assert np.abs(res.pvalue - per_date.pvalue).max() < 1e-10
    np.testing.assert_allclose(res.beta, per_date.beta, rtol=1e-11)
    assert len(set(res.lag.ravel())) > 3  # the lag choice is exercised
    stats = screen.stats
    n_pairs = res.i.size
    # one exact start, then every later window moved by one session
    assert (stats.exact, stats.slides, stats.resets) == (n_pairs, n_pairs * ends.size, 1)
    # the carried sums equal their twins after all those slides
    p = resolve_maxlag(None, window, 0)
    s, t = int(starts[-1]), int(ends[-1])
    for u in range(pool.shape[1]):
        np.testing.assert_allclose(
            screen._tstate[u], sliding_ticker_sums_reference(screen._z[u], s, t, p), rtol=1e-10, atol=1e-12
        )
    for k in range(n_pairs):
        i, j = int(res.i[k]), int(res.j[k])
        np.testing.assert_allclose(
            screen._pstate[k // 8, :, k % 8],
            sliding_pair_sums_reference(screen._z[i], screen._z[j], s, t, p),
            rtol=1e-10,
            atol=1e-12,
        )


def test_windows_in_any_order_lengths_and_refresh() -> None:
    rng = np.random.default_rng(9)
    pool = np.column_stack([make_pair(rng, 400, coint=c, ar=0.4)[k] for c in (True, True) for k in (0, 1)])
    screen = SlidingEG(pool, refresh=25)
    # growing windows from 0 (the lag cap changes with the length), then a fixed length,
    # then a window that moves backwards
    starts = np.r_[np.zeros(30, dtype=int), np.arange(0, 60, 2), [10]]
    ends = np.r_[np.arange(120, 150), np.arange(199, 259, 2), [209]]
    res = screen.windows(starts, ends)
    for e, (s, t) in enumerate(zip(starts, ends)):
        one = rolling_engle_granger_pairs(pool[s : t + 1], t - s + 1, ends=[t - s])
        np.testing.assert_array_equal(res.lag[e], one.lag[0])
        np.testing.assert_allclose(res.stat[e], one.stat[0], rtol=1e-10)
    caps = {resolve_maxlag(None, int(t - s + 1), 0) for s, t in zip(starts, ends)}
    assert len(caps) > 1
    assert screen.stats.resets >= len(caps) + 2  # new caps, refreshes every 25 sessions, the backward move
    with pytest.raises(KernelInputError, match="refresh must be"):
        SlidingEG(pool, refresh=0)
    with pytest.raises(KernelInputError, match=r"window 0 \(\[5, 20\]\) has 16 sessions"):
        screen.window(5, 20)
    with pytest.raises(KernelInputError, match=r"windows must lie in \[0, 399\]"):
        screen.window(0, 400)
    with pytest.raises(KernelInputError, match="window must be in"):
        sliding_engle_granger_pairs(pool, 20)


def test_sliding_modules_import_nothing_of_ours() -> None:
    import subprocess
    import sys

    code = (
        "import sys, numpy as np, kernels\n"
        "kernels.SlidingEG(np.cumsum(np.ones((40, 3)) * np.arange(1, 4), axis=0) ** 0.5).window(0, 39)\n"
        "ours = ('localfin', 'serving', 'bank', 'agent', 'bench', 'localfin_cli')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ours))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=600
    )
    assert out.stdout.strip() == "[]", out.stdout


def _real_panel(frame: object) -> np.ndarray:
    return frame.to_numpy()  # type: ignore[attr-defined]


def test_sliding_on_real_prices_equals_per_date_twin_and_statsmodels(real_log_prices: object) -> None:
    """Real adjusted closes (14 tickers, 91 pairs, late starts and gaps included): a 2,520-session
    window over 60 consecutive dates against the per-date kernel and statsmodels, and a
    250-session window over 40 dates against the plain least-squares twin."""
    sm = pytest.importorskip("statsmodels.tsa.stattools")
    panel = _real_panel(real_log_prices)
    rng = np.random.default_rng(32)
    long_ends = np.arange(3000, 3060)
    res = sliding_engle_granger_pairs(panel, 2520, ends=long_ends)
    per_date = rolling_engle_granger_pairs(panel, 2520, ends=long_ends)
    finite = np.isfinite(per_date.pvalue)
    assert finite.sum() > 3000
    np.testing.assert_array_equal(res.lag, per_date.lag)
    np.testing.assert_array_equal(np.isfinite(res.pvalue), finite)
    assert np.nanmax(np.abs(res.pvalue - per_date.pvalue)) < 1e-10
    cells = np.argwhere(finite)
    for e, k in cells[rng.choice(len(cells), 30, replace=False)]:
        win = panel[long_ends[e] - 2519 : long_ends[e] + 1]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            stat, pvalue, _ = sm.coint(win[:, res.i[k]], win[:, res.j[k]], trend="c", autolag="aic")
        assert abs(res.stat[e, k] - stat) < 1e-9 and abs(res.pvalue[e, k] - pvalue) < 1e-9
    short_ends = np.arange(4200, 4240)
    short = sliding_engle_granger_pairs(panel[:, :6], 250, ends=short_ends)
    twin = rolling_eg_pairs_reference(panel[:, :6], 250, short_ends)
    _assert_same(short, twin, rtol=1e-9, atol=1e-11)
    assert np.isfinite(short.pvalue).sum() > 0.9 * short.pvalue.size


def _price_panels(shared_data: object) -> dict[str, np.ndarray]:
    """Log prices (sessions x tickers) of each shared price file as released (adj_close, or the
    adjusted close column of the file that has only ``close``)."""
    pd = pytest.importorskip("pandas")
    from pathlib import Path

    files = sorted((Path(str(shared_data)) / "prices").glob("*.csv"))
    if not files:
        pytest.skip("no shared price files")
    out = {}
    for path in files:
        field = "adj_close" if "adj_close" in pd.read_csv(path, nrows=0).columns else "close"
        frame = pd.read_csv(path, usecols=["date", "ticker", field])
        wide = frame.pivot_table(index="date", columns="ticker", values=field).sort_index()
        out[path.name] = np.log(wide.to_numpy())
    return out


@pytest.mark.slow
def test_sliding_matches_statsmodels_on_1200_random_real_windows(shared_data: object) -> None:
    """Every shared price file, every pair, every date with a full 2,520-session window, slid
    date by date; 1,200 random (pair, date) windows against statsmodels ``coint`` (autolag AIC),
    the lag against ``adfuller`` on the same residuals, and 40 whole dates against the per-date
    kernel."""
    sm = pytest.importorskip("statsmodels.tsa.stattools")
    rng = np.random.default_rng(1200)
    panels = _price_panels(shared_data)
    screened = {}
    for name, panel in panels.items():
        ends = np.arange(2519, panel.shape[0])
        screened[name] = (ends, sliding_engle_granger_pairs(panel, 2520, ends=ends))
    finite_cells = {name: np.argwhere(np.isfinite(res.pvalue)) for name, (_, res) in screened.items()}
    total = sum(len(c) for c in finite_cells.values())
    d_p = d_stat = 0.0
    n_windows = 0
    lags = []
    for name, (ends, res) in screened.items():
        panel = panels[name]
        cells = finite_cells[name]
        take = max(200, round(1200 * len(cells) / total))
        for e, k in cells[rng.choice(len(cells), min(take, len(cells)), replace=False)]:
            win = panel[ends[e] - 2519 : ends[e] + 1]
            y, x = win[:, res.i[k]], win[:, res.j[k]]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                stat, pvalue, _ = sm.coint(y, x, trend="c", autolag="aic")
                design = np.column_stack([np.ones_like(x), x])
                resid = y - design @ np.linalg.lstsq(design, y, rcond=None)[0]
                used = sm.adfuller(resid, autolag="AIC", regression="n")[2]
            d_p = max(d_p, abs(res.pvalue[e, k] - pvalue))
            d_stat = max(d_stat, abs(res.stat[e, k] - stat))
            lags.append((int(res.lag[e, k]), int(used)))
            n_windows += 1
        for e in rng.choice(len(ends), 40 // len(panels) + 1, replace=False):
            one = rolling_engle_granger_pairs(panel, 2520, ends=ends[e : e + 1])
            np.testing.assert_array_equal(res.lag[e], one.lag[0])
            np.testing.assert_allclose(res.pvalue[e], one.pvalue[0], rtol=0, atol=1e-10)
    print(
        f"\n{n_windows} real windows: max |dp| {d_p:.3g}, max |dstat| {d_stat:.3g}; lags equal "
        f"{sum(a == b for a, b in lags)}/{len(lags)}, lags > 0: {sum(a > 0 for a, _ in lags)}"
    )
    assert n_windows >= 1000
    assert d_p <= 1e-9 and d_stat <= 1e-9
    assert all(a == b for a, b in lags)


def _edge_pool(rng: np.random.Generator, n: int) -> np.ndarray:
    """Eight series (28 pairs: every lane of a block busy, and a second block): cointegrated
    pairs with long lag choices, a walk, a leg collinear with another, a leg constant over a
    stretch and one with a NaN."""
    y1, x1 = make_pair(rng, n, coint=True, ar=0.8)
    y2, x2 = make_pair(rng, n, coint=True, ar=0.5)
    walk = make_pair(rng, n, coint=False)[0]
    collinear = -0.4 + 0.9 * x1
    flat = make_pair(rng, n, coint=True, ar=0.3)[0]
    flat[n // 2 : n // 2 + 70] = flat[n // 2]
    gap = make_pair(rng, n, coint=True, ar=0.6)[0]
    gap[n // 4] = np.nan
    return np.column_stack([y1, x1, y2, x2, walk, collinear, flat, gap])


@pytest.mark.parametrize("autolag", ["aic", None])
def test_lane_path_matches_per_date_kernel_and_statsmodels_at_the_edges(autolag: str | None) -> None:
    """The eight-lane path (the lag scan of eight pairs at once, the refits gathered by lag)
    against the per-date kernel (same lags, statistics within 1e-9) and statsmodels, on windows
    holding a NaN, a constant leg and collinear legs; runs without the JIT too."""
    rng = np.random.default_rng(2024)
    n, window = 260, 60
    pool = _edge_pool(rng, n)
    ends = np.arange(window - 1, n, 3)
    maxlag = None if autolag else 4
    res = sliding_engle_granger_pairs(pool, window, ends=ends, maxlag=maxlag, autolag=autolag)
    per_date = rolling_engle_granger_pairs(pool, window, ends=ends, maxlag=maxlag, autolag=autolag)
    np.testing.assert_array_equal(res.lag, per_date.lag)
    np.testing.assert_array_equal(np.isnan(res.stat), np.isnan(per_date.stat))
    assert np.nanmax(np.abs(res.stat - per_date.stat)) <= 1e-9
    assert np.nanmax(np.abs(res.pvalue - per_date.pvalue)) <= 1e-9
    np.testing.assert_allclose(res.beta, per_date.beta, rtol=1e-10, equal_nan=True)
    # each degenerate case is present
    k_col = int(np.flatnonzero((res.i == 1) & (res.j == 5))[0])
    assert np.isnan(res.pvalue[:, k_col]).all() and np.isfinite(res.beta[:, k_col]).all()
    k_gap = res.j == 7
    holds_gap = (ends >= n // 4) & (ends - window + 1 <= n // 4)
    assert holds_gap.any() and np.isnan(res.stat[np.ix_(holds_gap, k_gap)]).all()
    k_flat = res.j == 6
    flat = (ends - window + 1 >= n // 2) & (ends <= n // 2 + 69)
    assert flat.any() and (res.lag[np.ix_(flat, k_flat)] == -1).all()
    if autolag:
        assert len(set(res.lag[res.lag >= 0].ravel())) >= 3  # several lags share the refits
    sm = pytest.importorskip("statsmodels.tsa.stattools")
    cells = np.argwhere(np.isfinite(res.pvalue))
    for e, k in cells[np.random.default_rng(3).choice(len(cells), 6, replace=False)]:
        win = pool[ends[e] - window + 1 : ends[e] + 1]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            stat, pvalue, _ = sm.coint(
                win[:, res.i[k]], win[:, res.j[k]], trend="c", autolag=autolag, maxlag=maxlag
            )
        assert abs(res.stat[e, k] - stat) <= 1e-9 and abs(res.pvalue[e, k] - pvalue) <= 1e-9


def _factor_ops_twin(k: int) -> int:
    """Operations of a left-looking Cholesky of k columns with two trailing rows, per lane, as
    a textbook counts them: entry (i, j < i) a dot product of length j and a division (as a
    multiplication by the inverse), pivot i a dot product of length i, a square root and an
    inverse; each trailing row's entry j a dot product of length j and a division."""
    ops = 0
    for i in range(k):
        ops += sum(2 * j + 1 for j in range(i)) + 2 * i + 2
    return ops + 2 * sum(2 * j + 1 for j in range(k))


def test_operation_counts_follow_the_loops() -> None:
    """The kernels' operation counts against counts made independently of the loops: the
    factorisation's against the textbook count (p^3 / 3 + O(p^2)), the slide's against the
    rows moved."""
    from kernels._jit_lanes import NL

    rng = np.random.default_rng(12)
    pool = np.column_stack([make_pair(rng, 400, coint=c, ar=0.5)[k] for c in (True, False) for k in (0, 1)])
    window = 300
    p = resolve_maxlag(None, window, 0)
    screen = SlidingEG(pool)
    screen.windows([0], [window - 1])
    before = screen.ops
    n_dates = 40
    screen.windows(np.arange(1, 1 + n_dates), np.arange(window, window + n_dates))
    ops = {k: screen.ops[k] - before[k] for k in before}
    n_pairs = screen.i.size  # 6 pairs: one block of eight lanes, all active
    assert ops["factor"] == n_dates * NL * _factor_ops_twin(p)
    assert abs(_factor_ops_twin(27) - 29**3 / 3) < 0.05 * 29**3 / 3  # (p + 2)^3 / 3 at p = 27
    # each date moves every pair by one row out and one row in
    assert ops["pair_slide"] == n_dates * n_pairs * (2 * (4 * (p + 1) + 10) + 2 * 2)
    assert ops["exact_blas"] == 0 and ops["pair_exact"] == 0
    assert ops["gram_fill"] == n_dates * NL * 4 * (p * (p + 1) // 2)


def _vector_pool(rng: np.random.Generator, n: int, width: int) -> np.ndarray:
    """``width`` series whose first row of pairs fills regular blocks (pairs (0, 1) .. (0, 8):
    the eight-lane vector path) with every degenerate case among them: a leg collinear with
    the first, a leg constant over a stretch, a leg with a NaN, a leg that starts late."""
    y0, x0 = make_pair(rng, n, coint=True, ar=0.8)
    cols = [y0, x0, -0.4 + 0.9 * y0]
    while len(cols) < width:
        cols.append(make_pair(rng, n, coint=bool(len(cols) % 2), ar=0.5)[0])
    pool = np.column_stack(cols)
    pool[n // 2 : n // 2 + 70, 4] = pool[n // 2, 4]
    pool[n // 4, 5] = np.nan
    pool[: n // 3, 7] = np.nan
    return pool


def test_vector_blocks_equal_lane_by_lane() -> None:
    """A regular block (pairs (i, x0) .. (i, x0 + 7)) moves its sums and forms its regression
    sums eight lanes at a time; every other block lane by lane. Both must give the same numbers:
    every output and the carried sums bit for bit, over slides, gaps, jumps that force exact
    recomputes, a refresh, and a change of lag cap."""
    from kernels._jit_sliding import _regular

    rng = np.random.default_rng(77)
    n = 700
    pool = _vector_pool(rng, n, 21)  # 210 pairs: rows of 20, 19, ... pairs
    starts = np.concatenate([np.arange(0, 120, 1), np.arange(200, 260, 7), [300, 301, 302]])
    lengths = np.concatenate([np.full(120, 250), np.full(9, 250), [320, 320, 320]])
    screens = []
    for vec in (1, 0):
        screen = SlidingEG(pool, refresh=90)
        screen._vec = vec
        res = screen.windows(starts, starts + lengths - 1)
        screens.append((screen, res))
    (fast, res_fast), (slow, res_slow) = screens
    for name in ("stat", "pvalue", "lag", "beta", "alpha"):
        np.testing.assert_array_equal(getattr(res_fast, name), getattr(res_slow, name), err_msg=name)
    held = fast._pvalid.astype(bool)  # a pair not valid now holds sums it will recompute
    np.testing.assert_array_equal(fast._pvalid, slow._pvalid)
    k = np.flatnonzero(held)
    np.testing.assert_array_equal(fast._pstate[k // 8, :, k % 8], slow._pstate[k // 8, :, k % 8])
    assert fast.stats == slow.stats and fast.stats.exact > fast.i.size  # gaps and jumps recompute
    regular = sum(_regular(k0, 8, fast.i, fast.j) for k0 in range(0, fast.i.size - 7, 8))
    assert regular >= 10  # 11 of the 27 blocks take the vector path
    assert np.isfinite(res_fast.pvalue).mean() > 0.5


def test_vector_path_matches_per_date_kernel_and_statsmodels_at_the_edges() -> None:
    """The vector path's block (pairs (0, 1) .. (0, 8)) holds a collinear pair, a constant leg,
    a NaN and a late start: against the per-date kernel (same lags, statistics within 1e-9)
    and statsmodels; runs without the JIT too."""
    from kernels._jit_sliding import _regular

    rng = np.random.default_rng(2025)
    n, window = 300, 60
    pool = _vector_pool(rng, n, 10)
    ends = np.arange(window - 1, n, 2)
    res = sliding_engle_granger_pairs(pool, window, ends=ends)
    assert _regular(0, 8, res.i, res.j)
    per_date = rolling_engle_granger_pairs(pool, window, ends=ends)
    np.testing.assert_array_equal(res.lag, per_date.lag)
    np.testing.assert_array_equal(np.isnan(res.stat), np.isnan(per_date.stat))
    assert np.nanmax(np.abs(res.stat - per_date.stat)) <= 1e-9
    assert np.nanmax(np.abs(res.pvalue - per_date.pvalue)) <= 1e-9
    np.testing.assert_allclose(res.beta, per_date.beta, rtol=1e-10, equal_nan=True)
    block = slice(0, 8)  # pairs (0, 1) .. (0, 8)
    assert np.isnan(res.pvalue[:, 1]).all() and np.isfinite(res.beta[:, 1]).all()  # (0, 2) collinear
    flat = (ends - window + 1 >= n // 2) & (ends <= n // 2 + 69)
    assert flat.any() and (res.lag[flat, 3] == -1).all()  # (0, 4): leg 4 constant
    holds_gap = (ends >= n // 4) & (ends - window + 1 <= n // 4)
    assert holds_gap.any() and np.isnan(res.stat[holds_gap, 4]).all()  # (0, 5): a NaN
    assert np.isnan(res.stat[ends < n // 3 + window - 1, 6]).all()  # (0, 7): starts late
    assert len(set(res.lag[:, block][res.lag[:, block] >= 0].ravel())) >= 3
    sm = pytest.importorskip("statsmodels.tsa.stattools")
    cells = np.argwhere(np.isfinite(res.pvalue[:, block]))
    for e, k in cells[np.random.default_rng(4).choice(len(cells), 6, replace=False)]:
        win = pool[ends[e] - window + 1 : ends[e] + 1]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            stat, pvalue, _ = sm.coint(win[:, 0], win[:, res.j[k]], trend="c", autolag="aic")
        assert abs(res.stat[e, k] - stat) <= 1e-9 and abs(res.pvalue[e, k] - pvalue) <= 1e-9


def test_state_round_trip_and_an_older_layout_refused() -> None:
    """export_state / import_state continue a screen bit for bit; pair sums laid out one row a
    pair (as earlier versions exported them) are refused, naming the shape expected."""
    rng = np.random.default_rng(31)
    pool = _vector_pool(rng, 400, 12)
    first = SlidingEG(pool)
    first.windows(np.arange(0, 5), np.arange(199, 204))
    state = first.export_state()
    second = SlidingEG(pool)
    second.import_state(state)
    a = first.windows(np.arange(5, 15), np.arange(204, 214))
    b = second.windows(np.arange(5, 15), np.arange(204, 214))
    np.testing.assert_array_equal(a.pvalue, b.pvalue)
    np.testing.assert_array_equal(a.lag, b.lag)
    old = dict(state)
    n_pairs = first.i.size
    old["pstate"] = state["pstate"].transpose(0, 2, 1).reshape(-1, state["pstate"].shape[1])[:n_pairs]
    width = state["pstate"].shape[1]
    expected = rf"pair sums of shape \({n_pairs}, {width}\).*\(9, width, 8\)"
    with pytest.raises(KernelInputError, match=expected):
        SlidingEG(pool).import_state(old)
