"""The screen on the real shared price files, as `localfin data import` stores them: on the
monthly selection dates of 2005-2023 (last session of each month) the ten-ticker staples and
big-tech pools get five candidates and the four-ticker energy pool gets every one of its six
pairs that can be traded as a spread (at most top_k = 5). The full sweep is slow; the default
suite screens one month per year (a different month each year) and the date with the most
energy exclusions."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from agent.data.importer import import_files
from agent.data.store import MarketStore
from agent.data.validate import ImportConfig
from agent.pairs.screen.causal import (
    DEGENERATE,
    NO_PRICE_TODAY,
    NOT_REVERTING,
    TOO_FEW,
    ScreenConfig,
    screen_store,
)
from agent.pairs.screen.evaluate import PoolSweep, month_end_sessions, sweep_pool

STAPLES = ("KO", "PEP", "PG", "MDLZ", "CPB", "CAG", "K", "HRL", "SJM", "TSN")
# ten of the file's 23 with history from 2003 (GOOG/GOOGL start 2004-08-19, CRM 2004-06-23,
# AVGO 2009, TSLA 2010, META 2012)
TECH = ("AAPL", "MSFT", "AMZN", "NVDA", "INTC", "ORCL", "CSCO", "QCOM", "TXN", "IBM")
ENERGY = ("XOM", "CVX", "COP", "APA")
LATE = ("META", "TSLA")  # listed 2012-05-18 and 2010-06-29
POOLS = {"staples": STAPLES, "tech": TECH, "energy": ENERGY}
TRADEABILITY = (NO_PRICE_TODAY, TOO_FEW, DEGENERATE, NOT_REVERTING)
YEARS = range(2005, 2024)


@pytest.fixture(scope="module")
def real_store(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = [
        shared_data / "prices" / f for f in ("staples_energy_daily_2003_2023.csv", "tech_daily_2003_2023.csv")
    ]
    absent = [str(f) for f in files if not f.is_file()]
    if absent:
        pytest.skip(f"absent: {absent}")
    path = tmp_path_factory.mktemp("real") / "real.sqlite"
    with MarketStore(path) as s:
        import_files(
            s,
            prices=files,
            companies=[shared_data / "companies.csv"],
            config=ImportConfig(pool=STAPLES + TECH + ENERGY + LATE),
        )
    return path


def _dates(store: MarketStore) -> list[dt.date]:
    return month_end_sessions(store.calendar(), YEARS)


def _check(sweeps: dict[str, PoolSweep]) -> None:
    for name in ("staples", "tech"):
        sw = sweeps[name]
        assert {c.n_pairs for c in sw.counts} == {45}
        short = [(str(c.date), c.n_candidates, c.excluded) for c in sw.counts if c.n_candidates != 5]
        assert short == [], name
    for c in sweeps["energy"].counts:
        assert c.n_pairs == 6
        assert all(reason.startswith(TRADEABILITY) for _, reason in c.excluded), c
        assert c.n_candidates == min(5, 6 - len(c.excluded)), c


def _sweep(path: Path, dates: list[dt.date] | None = None) -> dict[str, PoolSweep]:
    with MarketStore(path, create=False) as s:
        days = dates if dates is not None else _dates(s)
        return {name: sweep_pool(s, name, pool, days) for name, pool in POOLS.items()}


def test_sampled_monthly_dates(real_store: Path) -> None:
    with MarketStore(real_store, create=False) as s:
        every = _dates(s)
    assert (len(every), str(every[0]), str(every[-1])) == (226, "2005-01-31", "2023-10-27")
    sample = [d for d in every if d.month == (d.year - 2005) % 12 + 1] + [dt.date(2020, 3, 31)]
    sweeps = _sweep(real_store, sorted(sample))
    _check(sweeps)
    crash = next(c for c in sweeps["energy"].counts if c.date == dt.date(2020, 3, 31))
    assert sorted(p for p, _ in crash.excluded) == ["APA/COP", "APA/CVX", "APA/XOM"]
    assert crash.n_candidates == 3


@pytest.mark.slow
def test_every_monthly_date(real_store: Path) -> None:
    sweeps = _sweep(real_store)
    _check(sweeps)
    for sw in sweeps.values():
        print("\n" + json.dumps(sw.summary()))


def test_screen_cli_on_the_real_store(real_store: Path, cli) -> None:
    with MarketStore(real_store, create=False) as s:
        res = screen_store(s, "2023-10-27", pool=STAPLES)
        companies = s.companies()
    assert len(res.pairs) == 45 and len(res.candidates) == 5 and res.config.price_field == "adj_close"
    assert [c.pvalue for c in res.candidates] == sorted(c.pvalue for c in res.candidates)
    assert all(c.name_a == companies[c.ticker_a].name for c in res.candidates)
    r = cli(
        "pairs", "screen", "--date", "2020-03-31", "--store", real_store, "--pool", ",".join(ENERGY), "--all"
    )
    assert r.code == 0, r.err
    assert "6 pairs, 3 ranked, 3 excluded" in r.out
    assert r.out.count(NOT_REVERTING) == 3 and "ranked below top" not in r.out
    close = cli(
        "pairs",
        "screen",
        "--date",
        "2020-03-31",
        "--store",
        real_store,
        "--pool",
        ",".join(ENERGY),
        "--price-field",
        "close",
        "--half-life-max",
        "60",
        "--all",
    )
    assert close.code == 0 and "close)" in close.out and "> half_life_max 60" in close.out
    print("\n" + r.out)


def test_the_old_band_empties_the_energy_screen(real_store: Path) -> None:
    """The former example band [1, 60] (now an opt-in setting) on a real ten-year window."""
    with MarketStore(real_store, create=False) as s:
        band = screen_store(
            s, "2015-06-30", pool=ENERGY, config=ScreenConfig(half_life_min=1, half_life_max=60)
        )
        free = screen_store(s, "2015-06-30", pool=ENERGY)
    assert band.candidates == () and len(free.candidates) == 5
    assert all(p.half_life > 60 for p in free.pairs)


def test_late_listings_are_tested_on_their_common_sessions(real_store: Path) -> None:
    """META (from 2012-05-18) beside AAPL and MSFT (from 2003): too few common sessions until
    a year of trading, then the pair is tested on the sessions both legs trade."""
    pool = ("AAPL", "META", "MSFT")
    with MarketStore(real_store, create=False) as s:
        early = screen_store(s, "2013-01-31", pool=pool)
        later = screen_store(s, "2014-01-31", pool=pool)
        n_meta = len(s.calendar("2012-05-18", "2014-01-31", tickers=["META"]))
    short = [p for p in early.pairs if "META" in (p.ticker_a, p.ticker_b)]
    assert len(short) == 2 and all(p.reason.startswith(TOO_FEW) and p.n_obs < 252 for p in short)
    assert [(c.ticker_a, c.ticker_b) for c in early.candidates] == [("AAPL", "MSFT")]
    by = {(p.ticker_a, p.ticker_b): p for p in later.pairs}
    assert by["AAPL", "META"].n_obs == by["META", "MSFT"].n_obs == n_meta and by["AAPL", "MSFT"].n_obs == 2520
    assert all(p.eligible or p.reason.startswith(NOT_REVERTING) for p in later.pairs)
