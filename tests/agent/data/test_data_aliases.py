"""The import's pool filter and ticker aliases (`localfin data import --pool ... --alias ...`):
the pool keeps prices, news, companies and Herculean filings alike, with skipped rows counted
per file; aliases rename tickers in every file or in one kind of file; a clash after renaming
follows the rule of agent/data/aliases.py (prices: an error naming both rows, store unchanged;
companies: the target's own row wins; news: merged, exact repeats dropped). Real files last."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from agent.data import errors as de
from agent.data.aliases import TickerAlias, parse_alias
from agent.data.calendar import business_sessions
from agent.data.importer import import_files
from agent.data.store import MarketStore
from agent.data.validate import ImportConfig

DAYS = [str(d) for d in business_sessions("2021-03-01", 10)]


def _prices(path: Path, tickers: tuple[str, ...]) -> Path:
    rows = [
        f"{d},{t},{10 + k + i / 10:.2f},{10 + k + i / 10:.2f}"
        for k, t in enumerate(tickers)
        for i, d in enumerate(DAYS)
    ]
    path.write_text("date,ticker,close,adj_close\n" + "\n".join(rows) + "\n")
    return path


def _news(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    path.write_text("date,ticker,headline\n" + "\n".join(",".join(r) for r in rows) + "\n")
    return path


def _companies(path: Path, tickers: tuple[str, ...]) -> Path:
    rows = [f"{t},{t} Inc,Tech,{t} makes things" for t in tickers]
    path.write_text("ticker,name,sector,description\n" + "\n".join(rows) + "\n")
    return path


def test_pool_filters_prices_news_and_companies_alike(tmp_path: Path) -> None:
    p = _prices(tmp_path / "p.csv", ("AAA", "BBB", "CCC"))
    n = _news(
        tmp_path / "n.csv",
        [(DAYS[1], "AAA", "a"), (DAYS[1], "CCC", "c"), (DAYS[2], "ZZZ", "z"), (DAYS[3], "BBB", "b")],
    )
    c = _companies(tmp_path / "c.csv", ("AAA", "BBB", "CCC", "ZZZ"))
    with MarketStore(tmp_path / "m.sqlite") as s:
        before = s.digest()
        with pytest.raises(
            de.UnknownTickerError, match="'ZZZ' has no prices"
        ):  # no pool: news must match prices
            import_files(s, prices=[p], news=[n], companies=[c])
        assert s.digest() == before
        rep = import_files(s, prices=[p], news=[n], companies=[c], config=ImportConfig(pool=("AAA", "BBB")))
        assert s.tickers() == ("AAA", "BBB") and sorted(s.companies()) == ["AAA", "BBB"]
        assert [x.headline for x in s.news_window("AAA", DAYS[0], DAYS[-1])] == ["a"]
    assert rep.written == {"prices": 20, "companies": 2, "news": 2}
    assert rep.skipped_by_file == {
        str(p): {"outside_pool": 10},
        str(n): {"outside_pool": 2},
        str(c): {"outside_pool": 2},
    }
    assert rep.skipped == {"prices_outside_pool": 10, "news_outside_pool": 2, "companies_outside_pool": 2}


def test_alias_renames_every_kind_and_news_of_two_classes_merge(tmp_path: Path) -> None:
    p = _prices(tmp_path / "p.csv", ("GOOG", "MSFT"))
    n = _news(
        tmp_path / "n.csv",
        [(DAYS[1], "GOOG", "same story"), (DAYS[1], "GOOGL", "same story"), (DAYS[2], "GOOGL", "other")],
    )
    c = _companies(tmp_path / "c.csv", ("GOOG", "MSFT"))
    cfg = ImportConfig(aliases=(TickerAlias("goog", "GOOGL"),), pool=("GOOGL", "MSFT"))
    with MarketStore(tmp_path / "m.sqlite") as s:
        rep = import_files(s, prices=[p], news=[n], companies=[c], config=cfg)
        assert s.tickers() == ("GOOGL", "MSFT") and s.company("GOOGL").name == "GOOG Inc"
        assert [x.headline for x in s.news_window("GOOGL", DAYS[0], DAYS[-1])] == ["same story", "other"]
    assert rep.renamed_by_file == {
        str(p): {"GOOG=GOOGL": 10},
        str(n): {"GOOG=GOOGL": 1},
        str(c): {"GOOG=GOOGL": 1},
    }
    assert rep.skipped_by_file == {str(n): {"repeated": 1}}


def test_a_price_clash_after_renaming_is_an_error_and_a_scoped_alias_avoids_it(tmp_path: Path) -> None:
    p = _prices(tmp_path / "p.csv", ("GOOG", "GOOGL"))
    n = _news(tmp_path / "n.csv", [(DAYS[4], "GOOG", "class C news")])
    with MarketStore(tmp_path / "m.sqlite") as s:
        before = s.digest()
        with pytest.raises(
            de.DuplicateRowError,
            match=r"alias GOOG=GOOGL puts two rows on \(date, ticker\) \(2021-03-01, GOOGL\): "
            r"GOOG on line 2 and GOOGL on line 12.*news:GOOG=GOOGL",
        ) as info:
            import_files(s, prices=[p], news=[n], config=ImportConfig(aliases=(parse_alias("GOOG=GOOGL"),)))
        assert (info.value.row, info.value.column) == (12, "ticker") and s.digest() == before
        scoped = ImportConfig(aliases=(parse_alias("news:GOOG=GOOGL"),), pool=("GOOGL",))
        rep = import_files(s, prices=[p], news=[n], config=scoped)
        assert s.tickers() == ("GOOGL",) and s.news("GOOGL", DAYS[4])[0].headline == "class C news"
    assert rep.skipped_by_file == {str(p): {"outside_pool": 10}}
    assert rep.renamed_by_file == {str(n): {"news:GOOG=GOOGL": 1}}


def test_a_renamed_ticker_continues_the_targets_series(tmp_path: Path) -> None:
    """FB until 2021-03-05, META after it, META's rows first in the file: one series in date
    order, checked for gaps and jumps across the seam (a 4x move at the seam is listed)."""
    rows = [f"{d},META,{20 + i:.2f},{20 + i:.2f}" for i, d in enumerate(DAYS) if i >= 5]
    rows += [f"{d},FB,{20 + i:.2f},{20 + i:.2f}" for i, d in enumerate(DAYS) if i < 5]
    f = tmp_path / "p.csv"
    f.write_text("date,ticker,close,adj_close\n" + "\n".join(rows) + "\n")
    cfg = ImportConfig(aliases=(parse_alias("prices:FB=META"),))
    with MarketStore(tmp_path / "m.sqlite") as s:
        rep = import_files(s, prices=[f], config=cfg)
        assert s.tickers() == ("META",) and [b.close for b in s.bars("META")] == [20.0 + i for i in range(10)]
    assert rep.jumps == [] and rep.renamed_by_file == {str(f): {"prices:FB=META": 5}}
    jump = f.read_text().replace(f"{DAYS[5]},META,25.00,25.00", f"{DAYS[5]},META,100.00,100.00")
    f.write_text(jump)
    with MarketStore(tmp_path / "j.sqlite") as s:
        jumps = import_files(s, prices=[f], config=cfg).jumps
    assert [(j.ticker, str(j.prev_date), str(j.date), j.row) for j in jumps] == [
        ("META", DAYS[4], DAYS[5], 2),  # FB's last close (line 11) -> META's first (line 2): the seam
        ("META", DAYS[5], DAYS[6], 3),
    ]


def test_companies_keep_the_targets_own_row(tmp_path: Path) -> None:
    p = _prices(tmp_path / "p.csv", ("GOOGL", "MSFT"))
    c = tmp_path / "c.csv"
    c.write_text(
        "ticker,name,sector,description\nGOOG,Alphabet C,Tech,class C\nGOOGL,Alphabet A,Tech,class A\n"
        "MSFT,Microsoft,Tech,software\n"
    )
    with MarketStore(tmp_path / "m.sqlite") as s:
        rep = import_files(
            s, prices=[p], companies=[c], config=ImportConfig(aliases=(parse_alias("GOOG=GOOGL"),))
        )
        assert s.company("GOOGL").description == "class A" and rep.written["companies"] == 2
    assert rep.skipped_by_file == {str(c): {"alias_duplicate": 1}}
    two = tmp_path / "two.csv"
    two.write_text("ticker,name,sector,description\nGOOG,C,Tech,c\nGOOGX,X,Tech,x\n")
    both = ImportConfig(aliases=(parse_alias("GOOG=GOOGL"), parse_alias("GOOGX=GOOGL")))
    with (
        MarketStore(tmp_path / "m.sqlite") as s,
        pytest.raises(de.DuplicateRowError, match="GOOG on line 2 and GOOGX on line 3"),
    ):
        import_files(s, companies=[two], config=both)


def test_herculean_filings_and_highlights_follow_the_pool_and_aliases(tmp_path: Path) -> None:
    root = tmp_path / "herc" / "data"
    root.mkdir(parents=True)
    days = pd.bdate_range("2024-12-02", periods=10)
    pd.DataFrame(
        [
            dict(symbol=t, date=d, close=1.0 + i / 100, adj_close=1.0)
            for t in ("GOOG", "MSFT", "AAPL")
            for i, d in enumerate(days)
        ]
    ).to_parquet(root / "prices.parquet")
    pd.DataFrame(
        [dict(symbol=t, date=days[1], highlights=f"{t} news.") for t in ("GOOG", "MSFT", "AAPL")]
    ).to_parquet(root / "news.parquet")
    pd.DataFrame(
        [
            dict(symbol=t, date=days[2], document_type="10-K", mda_content="m", risk_content="r")
            for t in ("GOOG", "AAPL")
        ]
    ).to_parquet(root / "filings.parquet")
    cfg = ImportConfig(aliases=(parse_alias("GOOG=GOOGL"),), pool=("GOOGL", "MSFT"))
    with MarketStore(tmp_path / "m.sqlite") as s:
        rep = import_files(s, herculean=tmp_path / "herc", config=cfg)
        assert s.tickers() == ("GOOGL", "MSFT") and s.filings("GOOGL")[0].document_type == "10-K"
        assert s.news("GOOGL", days[1].date())[0].headline == "GOOG news."
    assert rep.skipped == {"prices_outside_pool": 10, "news_outside_pool": 1, "filings_outside_pool": 1}


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("GOOG", "allowed: SOURCE=TARGET or KIND:SOURCE=TARGET"),
        ("GOOG=", "allowed: SOURCE=TARGET"),
        ("GOOG=goog", "maps a ticker to itself"),
        ("quotes:GOOG=GOOGL", "alias kind 'quotes'; allowed: prices, news, companies, filings"),
        ("GO OG=GOOGL", "is not a ticker"),
    ],
)
def test_bad_aliases(text: str, match: str) -> None:
    with pytest.raises(de.DataConfigError, match=match):
        parse_alias(text)


def test_conflicting_and_chained_aliases() -> None:
    with pytest.raises(de.DataConfigError, match="both rename GOOG in news files"):
        ImportConfig(aliases=(parse_alias("GOOG=GOOGL"), parse_alias("news:GOOG=ABC")))
    with pytest.raises(
        de.DataConfigError, match=r"chain in prices files; name the final ticker directly \(A=C\)"
    ):
        ImportConfig(aliases=(parse_alias("A=B"), parse_alias("B=C")))
    ok = ImportConfig(
        aliases=(parse_alias("news:A=B"), parse_alias("prices:B=C"))
    )  # different kinds: no chain
    assert [a.describe() for a in ok.aliases] == ["news:A=B", "prices:B=C"]


def test_cli_counts_skips_per_file_and_names_a_bad_alias(tmp_path: Path, cli) -> None:
    p = _prices(tmp_path / "p.csv", ("GOOG", "MSFT", "AAPL"))
    n = _news(tmp_path / "n.csv", [(DAYS[1], "GOOG", "g"), (DAYS[1], "AAPL", "a")])
    db = tmp_path / "m.sqlite"
    r = cli(
        "data",
        "import",
        "--prices",
        p,
        "--news",
        n,
        "--pool",
        "GOOGL,MSFT",
        "--alias",
        "GOOG=GOOGL",
        "--store",
        db,
    )
    assert r.code == 0, r.err
    assert "p.csv: 10 outside the pool, 10 renamed by GOOG=GOOGL" in r.out
    assert "n.csv: 1 outside the pool, 1 renamed by GOOG=GOOGL" in r.out
    r = cli("data", "import", "--prices", p, "--alias", "GOOG", "--store", db)
    assert r.code == 2 and "--alias 'GOOG'; allowed: SOURCE=TARGET" in r.err


def test_real_tech_prices_news_and_companies(shared_data: Path, tmp_path: Path, cli) -> None:
    """The tech file holds both GOOG and GOOGL, the news file GOOG only, the constituents list
    both: scope the alias to the news (a plain one is refused on the prices, naming the rows)."""
    prices = shared_data / "prices" / "tech_daily_2003_2023.csv"
    news = shared_data / "news" / "tradingview_bigtech_2025-04_05.csv"
    companies = shared_data / "companies.csv"
    absent = [str(f) for f in (prices, news, companies) if not f.is_file()]
    if absent:
        pytest.skip(f"absent: {absent}")
    db = tmp_path / "real.sqlite"
    pool = "AAPL,MSFT,GOOGL,AMZN,NVDA"
    args = [
        "data",
        "import",
        "--prices",
        prices,
        "--news",
        news,
        "--companies",
        companies,
        "--pool",
        pool,
        "--store",
        db,
    ]
    r = cli(*args, "--alias", "GOOG=GOOGL")
    assert r.code == 2 and "alias GOOG=GOOGL puts two rows on (date, ticker) (2004-08-19, GOOGL)" in r.err
    r = cli(*args, "--alias", "news:GOOG=GOOGL")
    assert r.code == 0, r.err
    with MarketStore(db, create=False) as s:
        assert s.tickers() == ("AAPL", "AMZN", "GOOGL", "MSFT", "NVDA")
        goog_news = len(s.news_window("GOOGL", "2025-04-01", "2025-05-31"))
        n_news, n_comp = s.info().n_news, s.info().n_companies
    raw = pd.read_csv(news)
    kept = raw["ticker"].isin(pool.split(",") + ["GOOG"])
    assert goog_news > 100 and n_comp == 5
    outside = (~pd.read_csv(prices)["ticker"].isin(pool.split(","))).sum()
    assert f"tech_daily_2003_2023.csv: {outside:,} outside the pool" in r.out
    assert f"tradingview_bigtech_2025-04_05.csv: {(~kept).sum():,} outside the pool" in r.out
    assert f"{(raw['ticker'] == 'GOOG').sum():,} renamed by news:GOOG=GOOGL" in r.out
    assert "companies.csv: 544 outside the pool" in r.out
    assert n_news == kept.sum() - int(
        raw.loc[kept]
        .assign(t=raw["ticker"].replace("GOOG", "GOOGL"))
        .duplicated(["date", "t", "headline"])
        .sum()
    )
    print("\n" + r.out)
