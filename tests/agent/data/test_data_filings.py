"""Filings in the data layer: the synthetic market's seeded 10-K and 10-Q text (schedule,
realistic length, same seed same text), its ``filings.parquet`` in Herculean's layout through the
importer, and a filing table imported on its own (``import_files(filings=...)``) with the pool and
alias rules of every other file."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd
import pytest

from agent.data.aliases import parse_alias
from agent.data.errors import DataError
from agent.data.filings_text import FilingCompany, filing_schedule, herculean_frame, synthetic_filings
from agent.data.importer import import_files
from agent.data.store import MarketStore
from agent.data.validate import ImportConfig

CO = FilingCompany("GRNF", "Granfield Foods", "Consumer Staples")


def test_schedule_has_one_annual_and_three_quarterly_reports_a_year() -> None:
    sched = filing_schedule(CO, dt.date(2020, 1, 1), dt.date(2022, 12, 31), seed=7)
    forms = [f for _, f, _, _ in sched]
    assert forms.count("10-K") == 3 and forms.count("10-Q") == 9
    for day, form, end, q in sched:
        lag = (day - end).days
        assert day.weekday() < 5 and (55 <= lag <= 80 if form == "10-K" else 35 <= lag <= 48)
        assert (form == "10-K") == (q == 4)


def test_filings_are_long_seeded_and_name_no_date_beyond_their_period() -> None:
    a = synthetic_filings([CO], dt.date(2021, 1, 1), dt.date(2021, 12, 31), seed=7)
    b = synthetic_filings([CO], dt.date(2021, 1, 1), dt.date(2021, 12, 31), seed=7)
    pd.testing.assert_frame_equal(a, b)
    c = synthetic_filings([CO], dt.date(2021, 1, 1), dt.date(2021, 12, 31), seed=8)
    assert not a["mda"].equals(c["mda"])
    k, q = a[a.document_type == "10-K"], a[a.document_type == "10-Q"]
    assert k["mda"].str.len().min() > 20_000 and k["risk"].str.len().min() > 15_000
    assert q["mda"].str.len().min() > 8_000 and q["risk"].str.len().min() > 1_500
    assert all(t.startswith("ITEM 7. MANAGEMENT'S DISCUSSION") for t in k["mda"])
    assert all(t.startswith("PART I, ITEM 2.") for t in q["mda"])
    assert all("Granfield Foods" in t for t in a["mda"])


def test_synthetic_market_filings_import_through_the_herculean_layout(synthetic_files: dict) -> None:
    raw = pd.read_parquet(synthetic_files["filings"])
    assert list(raw.columns) == ["id", "symbol", "date", "document_type", "mda_content", "risk_content"]
    assert set(raw["document_type"]) == {"10-K", "10-Q"}


def test_a_filing_table_imports_on_its_own_with_pool_and_aliases(tmp_path: Path) -> None:
    days = pd.bdate_range("2021-01-04", periods=60)
    prices = pd.DataFrame({"date": [d.date().isoformat() for d in days], "ticker": "GOOG", "close": 100.0})
    prices.to_csv(tmp_path / "p.csv", index=False)
    fil = synthetic_filings(
        [FilingCompany("GOOGL", "Alphabet", "Information Technology"), FilingCompany("MSFT", "M", "x")],
        dt.date(2021, 1, 1),
        dt.date(2021, 3, 31),
        seed=1,
    )
    herculean_frame(fil).to_parquet(tmp_path / "f.parquet", index=False)
    cfg = ImportConfig(pool=("GOOG",), aliases=(parse_alias("filings:GOOGL=GOOG"),))
    with MarketStore(tmp_path / "s.sqlite") as s:
        rep = import_files(s, prices=[tmp_path / "p.csv"], filings=[tmp_path / "f.parquet"], config=cfg)
        got = s.filings("GOOG")
    n = int((fil.ticker == "GOOGL").sum())
    assert rep.written["filings"] == n and len(got) == n and n > 0
    assert got[0].mda == fil[fil.ticker == "GOOGL"].iloc[0]["mda"]
    # a table without its document_type column: an error naming the column, the store untouched
    herculean_frame(fil).drop(columns=["document_type"]).to_parquet(tmp_path / "bad.parquet", index=False)
    with MarketStore(tmp_path / "s.sqlite") as s, pytest.raises(DataError, match="document_type"):
        import_files(s, filings=[tmp_path / "bad.parquet"], config=cfg)
    with MarketStore(tmp_path / "s.sqlite") as s:
        assert len(s.filings("GOOG")) == n
