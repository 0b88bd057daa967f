"""RollingScreen (sums carried from date to date) against screen_pairs (each date on its own):
the same screen on the real pools' month-ends, with gaps and forward fill, and causal."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pytest

from agent.data.importer import import_files
from agent.data.schema import PriceHistory
from agent.data.store import MarketStore
from agent.data.validate import ImportConfig
from agent.pairs.market.view import MarketView
from agent.pairs.screen.causal import ScreenConfig, ScreenResult, read_prices, screen_pairs
from agent.pairs.screen.evaluate import month_end_sessions, sweep_pool
from agent.pairs.screen.rolling import RollingScreen

STAPLES = ("KO", "PEP", "PG", "MDLZ", "CPB", "CAG", "K", "HRL", "SJM", "TSN")
TECH = ("AAPL", "MSFT", "AMZN", "NVDA", "INTC", "ORCL", "CSCO", "QCOM", "TXN", "IBM")
ENERGY = ("XOM", "CVX", "COP", "APA")
LATE = ("META", "TSLA", "GOOG")
POOLS = {"staples": STAPLES, "tech": TECH, "energy": ENERGY, "late": ("AAPL", "MSFT", *LATE)}


@pytest.fixture(scope="module")
def real_store(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = [
        shared_data / "prices" / f for f in ("staples_energy_daily_2003_2023.csv", "tech_daily_2003_2023.csv")
    ]
    absent = [str(f) for f in files if not f.is_file()]
    if absent:
        pytest.skip(f"absent: {absent}")
    path = tmp_path_factory.mktemp("rolling") / "real.sqlite"
    with MarketStore(path) as s:
        import_files(
            s,
            prices=files,
            companies=[shared_data / "companies.csv"],
            config=ImportConfig(pool=STAPLES + TECH + ENERGY + LATE),
        )
    return path


def assert_same_screen(a: ScreenResult, b: ScreenResult) -> None:
    """The same candidates in the same order, the same exclusions, the same statistics."""
    assert (a.date, a.session) == (b.date, b.session)
    assert [(c.rank, c.ticker_a, c.ticker_b) for c in a.candidates] == [
        (c.rank, c.ticker_a, c.ticker_b) for c in b.candidates
    ]
    assert [(p.ticker_a, p.ticker_b, p.eligible, p.reason, p.lag, p.n_obs) for p in a.pairs] == [
        (p.ticker_a, p.ticker_b, p.eligible, p.reason, p.lag, p.n_obs) for p in b.pairs
    ]
    for name in ("pvalue", "adf_stat", "hedge_ratio", "alpha", "half_life", "z_long", "z_trade"):
        np.testing.assert_allclose(
            [getattr(p, name) for p in a.pairs], [getattr(p, name) for p in b.pairs], rtol=1e-8, atol=1e-11
        )


def _compare(path: Path, dates: list[dt.date] | None = None, *, lookback: int = 2520) -> dict[str, int]:
    """Screen every pool on every date both ways; the number of dates compared per pool."""
    cfg = ScreenConfig(lookback=lookback, min_sessions=min(252, lookback))
    out = {}
    with MarketStore(path, create=False) as s:
        days = dates if dates is not None else month_end_sessions(s.calendar(), range(2005, 2024))
        for name, pool in POOLS.items():
            history = read_prices(s, sorted(pool), end=max(days), config=cfg)
            rolling = RollingScreen(history, cfg)
            for day in days:
                assert_same_screen(rolling.screen(day), screen_pairs(history, day, config=cfg))
            stats = rolling.sliding_stats
            assert stats.slides > 0, name
            out[name] = len(days)
    return out


def test_rolling_screen_equals_the_per_date_screen_on_sampled_month_ends(real_store: Path) -> None:
    with MarketStore(real_store, create=False) as s:
        every = month_end_sessions(s.calendar(), range(2005, 2024))
    # one month a year (a different one each year), the March 2020 crash, consecutive months
    sample = sorted(
        {d for d in every if d.month == (d.year - 2005) % 12 + 1}
        | {dt.date(2020, 3, 31)}
        | {d for d in every if d.year == 2012}
    )
    assert _compare(real_store, sample) == {name: len(sample) for name in POOLS}
    # a short lookback moves a larger share of each window per month
    assert _compare(real_store, sample[-8:], lookback=300)["tech"] == 8


@pytest.mark.slow
def test_rolling_screen_equals_the_per_date_screen_on_every_month_end(real_store: Path) -> None:
    """All 226 month-ends of 2005-2023 of every pool: the same top five (and all the rest)."""
    assert _compare(real_store) == {name: 226 for name in POOLS}


def _synthetic(rng: np.random.Generator, n: int = 700) -> PriceHistory:
    dates = np.arange(np.datetime64("2010-01-04"), np.datetime64("2010-01-04") + n).astype("datetime64[D]")
    base = np.cumsum(rng.normal(0, 0.01, n))
    values = np.exp(
        np.column_stack([4.0 + k * 0.1 + base * (0.8 + 0.1 * k) + rng.normal(0, 0.02, n) for k in range(4)])
    )
    values[100:103, 1] = np.nan  # a gap a forward fill of 3 closes
    values[400:410, 2] = np.nan  # one it does not
    values[:50, 3] = np.nan  # a late start
    values[650:653, 0] = np.nan  # a gap that is trailing on some dates
    return PriceHistory(dates, ("AAA", "BBB", "CCC", "DDD"), values, "close")


@pytest.mark.parametrize("ffill", [0, 3])
def test_rolling_screen_with_gaps_and_forward_fill(ffill: int) -> None:
    history = _synthetic(np.random.default_rng(3))
    cfg = ScreenConfig(lookback=300, min_sessions=60, ffill_limit=ffill)
    rolling = RollingScreen(history, cfg)
    days = [d.item() for d in history.dates[80::7]]
    for day in days:
        assert_same_screen(rolling.screen(day), screen_pairs(history, day, config=cfg))
    # a date asked again after later ones (the sums start afresh) and an exclusion
    day = days[10]
    again = rolling.screen(day, exclude=[("BBB", "AAA")])
    assert_same_screen(again, screen_pairs(history, day, config=cfg, exclude=[("AAA", "BBB")]))
    assert rolling.sliding_stats.slides > 0


def test_rolling_screen_is_causal() -> None:
    """Prices after a date cannot change its screen: scramble every later price and compare."""
    rng = np.random.default_rng(8)
    history = _synthetic(rng)
    cfg = ScreenConfig(lookback=250, min_sessions=60)
    cut = 500
    later = history.values.copy()
    later[cut + 1 :] = np.exp(rng.normal(4.0, 1.0, later[cut + 1 :].shape))
    scrambled = PriceHistory(history.dates, history.tickers, later, history.field)
    days = [d.item() for d in history.dates[300 : cut + 1 : 5]]
    one, two = RollingScreen(history, cfg), RollingScreen(scrambled, cfg)
    for day in days:
        assert_same_screen(one.screen(day), two.screen(day))


def test_sweep_and_market_view_use_the_rolling_screen(real_store: Path) -> None:
    with MarketStore(real_store, create=False) as s:
        days = month_end_sessions(s.calendar(), [2019])
        sweep = sweep_pool(s, "energy", ENERGY, days)
        history = read_prices(s, sorted(ENERGY), end=days[-1])
        view = MarketView(s, ENERGY, ScreenConfig(), end=days[-1])
        for day in days:
            assert_same_screen(view.screen(day), screen_pairs(history, day))
        assert view._rolling.sliding_stats.slides > 0
    assert [c.n_candidates for c in sweep.counts] == [len(screen_pairs(history, d).candidates) for d in days]
