"""Market store and loaders: typed reads, alignment without filling, column mapping, the
Herculean importer, real shared data, and the `localfin data` commands."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agent.data.errors import StoreError, UnknownTickerError
from agent.data.herculean import load_herculean
from agent.data.importer import import_files
from agent.data.loaders import load_companies, load_news, load_prices
from agent.data.schema import PriceHistory
from agent.data.store import MarketStore


@pytest.fixture()
def store(synthetic_store_path: Path, tmp_path: Path) -> MarketStore:
    path = tmp_path / "market.sqlite"
    shutil.copy(synthetic_store_path, path)
    with MarketStore(path) as s:
        yield s


def test_prices_are_aligned_without_filling(store: MarketStore, synthetic_truth: dict) -> None:
    h = store.prices(["PNDR", "GRNF", "VTRX"])
    assert h.tickers == ("PNDR", "GRNF", "VTRX")
    assert h.n_sessions == synthetic_truth["calendar"]["n_sessions"]
    halts = [
        np.datetime64(d)
        for d in next(t for t in synthetic_truth["tickers"] if t["ticker"] == "PNDR")["halts"]
    ]
    pndr = h.column("PNDR")
    assert np.isnan(pndr[np.isin(h.dates, halts)]).all() and np.isfinite(pndr).sum() == h.n_sessions - len(
        halts
    )
    first = np.datetime64(next(t for t in synthetic_truth["tickers"] if t["ticker"] == "VTRX")["first_date"])
    vtrx = h.column("VTRX")
    assert np.isnan(vtrx[h.dates < first]).all() and np.isfinite(vtrx[h.dates >= first]).all()
    assert np.isfinite(h.column("GRNF")).all()


def test_ffill_limit_fills_only_short_interior_gaps() -> None:
    dates = np.arange(np.datetime64("2020-01-01"), np.datetime64("2020-01-11"))
    v = np.array([np.nan, 1, np.nan, 2, np.nan, np.nan, np.nan, 3, 4, np.nan])[:, None]
    h = PriceHistory(dates, ("A",), v)
    np.testing.assert_array_equal(h.ffill(0).values, v)
    np.testing.assert_array_equal(
        h.ffill(1).values[:, 0], [np.nan, 1, 1, 2, np.nan, np.nan, np.nan, 3, 4, np.nan]
    )
    np.testing.assert_array_equal(h.ffill(3).values[:, 0], [np.nan, 1, 1, 2, 2, 2, 2, 3, 4, np.nan])


def test_range_reads_calendar_news_company(store: MarketStore, synthetic_truth: dict) -> None:
    h = store.prices(["GRNF", "HRBK"], "2020-01-01", "2020-01-31")
    assert str(h.dates[0]) >= "2020-01-01" and str(h.dates[-1]) <= "2020-01-31" and h.n_sessions > 15
    cal = store.calendar("2019-12-20", "2020-01-05")
    assert np.datetime64("2019-12-25") not in cal and np.datetime64("2020-01-01") not in cal
    assert all(d.astype(dt.date).weekday() < 5 for d in cal)
    brk = synthetic_truth["breaks"][0]
    items = store.news(brk["ticker"], brk["date"])
    assert any(brk["event"] in (i.headline + i.summary).lower() for i in items)
    window = store.news_window(brk["ticker"], "2013-01-01", brk["date"])
    assert window == sorted(window, key=lambda i: i.date) and window[-1].date <= dt.date.fromisoformat(
        brk["date"]
    )
    assert store.company("GRNF").name == "Granfield Foods"
    bars = store.bars("GRNF", "2020-01-02", "2020-01-03")
    assert [b.date for b in bars] == [dt.date(2020, 1, 2), dt.date(2020, 1, 3)] and bars[0].low <= bars[
        0
    ].close <= bars[0].high


def test_unknown_ticker_and_missing_store(store: MarketStore, tmp_path: Path) -> None:
    with pytest.raises(UnknownTickerError, match="ZZZ"):
        store.prices(["GRNF", "ZZZ"])
    with pytest.raises(UnknownTickerError, match="no company"):
        store.company("ZZZ")
    with pytest.raises(StoreError, match="no market store"):
        MarketStore(tmp_path / "absent.sqlite", create=False)


def test_tickers_until_hides_later_listings(store: MarketStore, synthetic_truth: dict) -> None:
    first = next(t for t in synthetic_truth["tickers"] if t["ticker"] == "VTRX")["first_date"]
    day_before = (dt.date.fromisoformat(first) - dt.timedelta(days=1)).isoformat()
    assert "VTRX" not in store.tickers(until=day_before) and "VTRX" in store.tickers(until=first)


def test_news_reimport_is_idempotent(store: MarketStore, synthetic_files: dict) -> None:
    n = store.info().n_news
    report = import_files(store, news=[synthetic_files["news"]])
    assert store.info().n_news == n and report.skipped["news_already_stored"] == n


def test_company_aliases_and_fallbacks(tmp_path: Path) -> None:
    p = tmp_path / "c.csv"
    p.write_text(
        "symbol,security,gics_sector,long_name,yahoo_sector,business_description\n"
        "AAA,,,Aaa Holdings Inc.,Consumer Defensive,Makes things.\nBBB,Bbb Co,Energy,Bbb Company,Energy,\n"
    )
    f = load_companies(p).frame.set_index("ticker")
    assert f.loc["AAA", "name"] == "Aaa Holdings Inc." and f.loc["AAA", "sector"] == "Consumer Defensive"
    assert f.loc["BBB", "name"] == "Bbb Co" and f.loc["BBB", "description"] == ""
    q = tmp_path / "d.csv"
    q.write_text("code,title,industry,about\nAAA,A,S,desc\n")
    g = load_companies(
        q, column_map={"ticker": "code", "name": "title", "sector": "industry", "description": "about"}
    ).frame
    assert g.iloc[0].to_dict() | {"row": 2} == {
        "ticker": "AAA",
        "name": "A",
        "sector": "S",
        "description": "desc",
        "row": 2,
    }


def test_prices_subset_columns_and_parquet(tmp_path: Path) -> None:
    df = pd.DataFrame({"Date": ["2021-01-04", "2021-01-05"], "Symbol": ["AAA", "AAA"], "Close": [10.0, 10.5]})
    df.to_csv(tmp_path / "p.csv", index=False)
    df.assign(Date=pd.to_datetime(df["Date"])).to_parquet(tmp_path / "p.parquet")
    for name in ("p.csv", "p.parquet"):
        f = load_prices(tmp_path / name).frame
        assert (
            list(f["close"]) == [10.0, 10.5]
            and f["open"].isna().all()
            and list(f["ticker"]) == ["AAA", "AAA"]
        )


def test_herculean_import(tmp_path: Path) -> None:
    root = tmp_path / "herc" / "data"
    root.mkdir(parents=True)
    days = pd.bdate_range("2024-12-02", periods=30)
    pd.DataFrame(
        [
            dict(
                id=i,
                symbol=t,
                date=d,
                open=1.0,
                high=2.0,
                low=0.5,
                close=1.0 + i / 100,
                adj_close=1.0,
                volume=5,
            )
            for i, (t, d) in enumerate((t, d) for t in ("AAPL", "MSFT") for d in days)
        ]
    ).to_parquet(root / "prices.parquet")
    pd.DataFrame(
        [
            dict(
                id=1,
                symbol="AAPL",
                date=pd.Timestamp("2024-12-07"),
                highlights="Apple unveiled a product. Shares rose 2%.",
            ),
            dict(id=2, symbol="MSFT", date=pd.Timestamp("2024-12-03"), highlights="x" * 300),
        ]
    ).to_parquet(root / "news.parquet")
    pd.DataFrame(
        [
            dict(
                id=1,
                symbol="AAPL",
                date=pd.Timestamp("2024-12-20"),
                document_type="10-K",
                mda_content="MD&A text",
                risk_content="Risk text",
            )
        ]
    ).to_parquet(root / "filings.parquet")
    tables = load_herculean(tmp_path / "herc")
    assert [t.kind for t in tables] == ["prices", "news", "filings"]
    with MarketStore(tmp_path / "m.sqlite") as s:
        rep = import_files(s, herculean=tmp_path / "herc")
        assert rep.written == {"prices": 60, "news": 2, "filings": 1}
        item = s.news("AAPL", "2024-12-07")[0]  # a Saturday: highlights are per calendar day
        assert (item.headline, item.kind) == ("Apple unveiled a product.", "highlights")
        assert len(s.news("MSFT", "2024-12-03")[0].headline) == 160
        assert s.filings("AAPL")[0].risk == "Risk text"


def test_real_prices_and_companies(shared_data: Path, tmp_path: Path) -> None:
    prices = shared_data / "prices" / "staples_energy_daily_2003_2023.csv"
    if not prices.is_file():
        pytest.skip(f"{prices} absent")
    with MarketStore(tmp_path / "real.sqlite") as s:
        rep = import_files(s, prices=[prices], companies=[shared_data / "companies.csv"])
        assert (
            rep.written["prices"] == 70462
            and rep.written["companies"] == 14
            and rep.skipped["companies_outside_pool"] > 500
        )
        assert s.company("CAG").name == "Conagra Brands, Inc."  # `security` empty: falls back to `long_name`
        assert s.company("XOM").sector == "Energy"
        info = s.info()
        assert len(info.tickers) == 14 and info.calendar_start == dt.date(2003, 10, 30)


def test_real_news_mapping(shared_data: Path) -> None:
    path = shared_data / "news" / "tradingview_bigtech_2025-04_05.csv"
    if not path.is_file():
        pytest.skip(f"{path} absent")
    f = load_news(path).frame
    assert (
        len(f) > 1500
        and f["source"].str.startswith("https://").all()
        and set(f["ticker"]) >= {"AAPL", "NVDA"}
    )


def test_cli_synth_import_info(tmp_path: Path, cli) -> None:
    db = tmp_path / "m.sqlite"
    syn = tmp_path / "syn"
    r = cli("data", "synth", "--out", syn, "--seed", "3", "--sessions", "400", "--import", "--store", db)
    assert r.code == 0, r.err
    assert (syn / "truth.json").is_file() and "prices" in r.out
    r = cli("data", "info", "--store", db)
    assert r.code == 0 and "GRNF" in r.out and "400 sessions" in r.out
    bad = tmp_path / "bad.csv"
    bad.write_text("date,ticker,close\n2021-01-04,AAA,-1\n")
    r = cli("data", "import", "--prices", bad, "--store", db)
    assert r.code == 2 and "line 2" in r.err and "non-positive value -1" in r.err


def test_package_import_is_cheap_and_names_resolve() -> None:
    import subprocess
    import sys

    code = (
        "import sys, agent.data, agent.pairs; assert 'pandas' not in sys.modules and 'numba' not in "
        "sys.modules; "
        "import agent.data as d, agent.pairs as p; [getattr(d, n) for n in d.__all__]; [getattr(p, n) for n "
        "in p.__all__]"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[3])
