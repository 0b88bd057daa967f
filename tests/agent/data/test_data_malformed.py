"""A corpus of malformed inputs: each gives its own error (class, file, row, column, message)
and leaves the store exactly as it was (same content digest, integrity check ok)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agent.data import errors as de
from agent.data.calendar import business_sessions
from agent.data.importer import import_files
from agent.data.store import MarketStore
from agent.data.validate import ImportConfig

TICKERS = ("AAA", "BBB", "CCC")
HEADER = "date,ticker,open,high,low,close,adj_close,volume"
DATES = [str(d) for d in business_sessions("2021-03-01", 40)]


def _price_lines(start: int, stop: int) -> list[str]:
    """Rows sorted by ticker then date; line numbers: header 1, then AAA, BBB, CCC blocks."""
    out = []
    for k, t in enumerate(TICKERS):
        for i in range(start, stop):
            c = 20.0 + 5 * k + 0.1 * i
            out.append(f"{DATES[i]},{t},{c:.2f},{c + 0.5:.2f},{c - 0.5:.2f},{c:.2f},{c:.2f},{1000 + i}")
    return out


NEW = _price_lines(20, 40)  # the file a case mutates: 20 rows a ticker; AAA lines 2-21, BBB 22-41, CCC 42-61


def _csv(lines: list[str], header: str = HEADER) -> str:
    return "\n".join([header, *lines]) + "\n"


def _news(rows: list[tuple[str, str, str]]) -> str:
    return _csv([f"{d},{t},{h}" for d, t, h in rows], "date,ticker,headline")


@dataclass(frozen=True)
class Case:
    name: str
    write: Callable[[Path], dict]  # writes files into a dir, returns import_files kwargs
    error: type[Exception]
    row: int | None
    column: str | None
    text: str
    config: ImportConfig = ImportConfig()  # noqa: RUF009 - frozen, shared safely


def _file(name: str, content: str | bytes, kind: str = "prices") -> Callable[[Path], dict]:
    def write(d: Path) -> dict:
        p = d / name
        p.write_bytes(content) if isinstance(content, bytes) else p.write_text(content)
        return {kind: [p]}

    return write


def _mutate(i: int, field: int, value: str) -> str:
    lines = list(NEW)
    cells = lines[i].split(",")
    cells[field] = value
    lines[i] = ",".join(cells)
    return _csv(lines)


def _scale(i: int, factor: float) -> str:
    """Row ``i`` with open, high, low, close and adj_close multiplied (a consistent row, far off)."""
    lines = list(NEW)
    cells = lines[i].split(",")
    cells[2:7] = [f"{float(v) * factor:.2f}" for v in cells[2:7]]
    lines[i] = ",".join(cells)
    return _csv(lines)


def _prices_and(kind: str, name: str, content: str) -> Callable[[Path], dict]:
    def write(d: Path) -> dict:
        (d / "p.csv").write_text(_csv(NEW))
        (d / name).write_text(content)
        return {"prices": [d / "p.csv"], kind: [d / name]}

    return write


def _swap(lines: list[str], i: int, j: int) -> list[str]:
    out = list(lines)
    out[i], out[j] = out[j], out[i]
    return out


def _herculean(d: Path, *, news_dup: bool = False, prices: bool = True) -> dict:
    root = d / "herc"
    (root / "data").mkdir(parents=True)
    if prices:
        rows = [
            dict(
                id=n,
                symbol=t,
                date=pd.Timestamp(DATES[i]),
                open=10.0 + i,  # a consistent row: open and close within [low, high]
                high=11.0 + i,
                low=9.0 + i,
                close=10.0 + i,
                adj_close=10.0 + i,
                volume=100,
            )
            for n, (t, i) in enumerate((t, i) for t in TICKERS for i in range(20, 40))
        ]
        pd.DataFrame(rows).to_parquet(root / "data" / "prices.parquet")
    news = [
        dict(id=1, symbol="AAA", date=pd.Timestamp(DATES[25]), highlights="Quiet day. Nothing new."),
        dict(id=2, symbol="AAA", date=pd.Timestamp(DATES[25 if news_dup else 26]), highlights="Another day."),
    ]
    pd.DataFrame(news).to_parquet(root / "data" / "news.parquet")
    return {"herculean": root}


GAPPED = [ln for ln in NEW if not (ln.split(",")[1] == "BBB" and DATES.index(ln[:10]) in range(24, 34))]
SPARSE = [ln for ln in NEW if not (ln.split(",")[1] == "BBB" and DATES.index(ln[:10]) % 2 == 1)]

CASES = [
    Case(
        "missing_file",
        lambda d: {"prices": [d / "absent.csv"]},
        de.FileFormatError,
        None,
        None,
        "file not found",
    ),
    Case("empty_file", _file("p.csv", ""), de.EmptyInputError, None, None, "no header"),
    Case("header_only", _file("p.csv", HEADER + "\n"), de.EmptyInputError, None, None, "no data rows"),
    Case(
        "unknown_extension", _file("p.xlsx", _csv(NEW)), de.FileFormatError, None, None, "unknown file type"
    ),
    Case(
        "ragged_row",
        _file("p.csv", _csv(NEW[:3] + [NEW[3] + ",99"] + NEW[4:])),
        de.FileFormatError,
        5,
        None,
        "9 fields",
    ),
    Case(
        "not_utf8",
        _file("p.csv", HEADER.encode() + b"\n\xff\xfe\x00bad\n"),
        de.FileFormatError,
        None,
        None,
        "cannot read as CSV",
    ),
    Case(
        "repeated_header",
        _file("p.csv", _csv(NEW, HEADER + ",close")),
        de.FileFormatError,
        1,
        None,
        "repeated column",
    ),
    Case(
        "no_close_column",
        _file("p.csv", _csv([",".join(r.split(",")[:5]) for r in NEW], "date,ticker,open,high,low")),
        de.MissingColumnError,
        None,
        "close",
        "required column",
    ),
    Case(
        "no_ticker_column",
        _file(
            "p.csv",
            _csv(
                [r.split(",", 2)[0] + "," + r.split(",", 2)[2] for r in NEW],
                "date,open,high,low,close,adj_close,volume",
            ),
        ),
        de.MissingColumnError,
        None,
        "ticker",
        "required column",
    ),
    Case(
        "bad_month", _file("p.csv", _mutate(5, 0, "2021-13-45")), de.DateParseError, 7, "date", "'2021-13-45'"
    ),
    Case(
        "date_words",
        _file("p.csv", _mutate(6, 0, "yesterday")),
        de.DateParseError,
        8,
        "date",
        "cannot parse date",
    ),
    Case("empty_date", _file("p.csv", _mutate(7, 0, "")), de.DateParseError, 9, "date", "empty date"),
    Case(
        "duplicate_row",
        _file("p.csv", _csv(NEW[:9] + [NEW[8]] + NEW[9:])),
        de.DuplicateRowError,
        11,
        "date",
        "first at line 10",
    ),
    Case("nan_close", _file("p.csv", _mutate(24, 5, "NaN")), de.BadValueError, 26, "close", "missing value"),
    Case("empty_close", _file("p.csv", _mutate(25, 5, "")), de.BadValueError, 27, "close", "missing value"),
    Case("zero_close", _file("p.csv", _mutate(26, 5, "0")), de.BadValueError, 28, "close", "non-positive"),
    Case(
        "negative_open", _file("p.csv", _mutate(27, 2, "-3.5")), de.BadValueError, 29, "open", "non-positive"
    ),
    Case("text_close", _file("p.csv", _mutate(28, 5, "abc")), de.BadValueError, 30, "close", "not a number"),
    Case("infinite_close", _file("p.csv", _mutate(29, 5, "inf")), de.BadValueError, 31, "close", "infinite"),
    Case("high_below_low", _file("p.csv", _mutate(30, 3, "1.00")), de.BadValueError, 32, "high", "below low"),
    Case(
        "close_above_high",
        _file("p.csv", _mutate(10, 5, "99.00")),
        de.BadValueError,
        12,
        "close",
        "close 99 is above the row's high 23.5",
    ),
    Case(
        "open_below_low",
        _file("p.csv", _mutate(33, 2, "1.00")),
        de.BadValueError,
        35,
        "open",
        "open 1 is below the row's low 27.8",
    ),
    Case(
        "close_jump_1000x_strict",
        _file("p.csv", _scale(45, 1000.0)),
        de.BadValueError,
        47,
        "close",
        "close moves from 32.4 on 2021-04-02 to 32500 on 2021-04-05, a factor of 1003",
        ImportConfig(on_jump="error"),
    ),
    Case(
        "ticker_two_spellings",
        _file("p.csv", _mutate(5, 1, "aaa")),
        de.TickerSpellingError,
        7,
        "ticker",
        "two spellings of ticker AAA: 'AAA' on line 2 and 'aaa' on line 7",
    ),
    Case(
        "negative_volume", _file("p.csv", _mutate(31, 7, "-10")), de.BadValueError, 33, "volume", "negative"
    ),
    Case("empty_ticker", _file("p.csv", _mutate(32, 1, " ")), de.BadValueError, 34, "ticker", "empty value"),
    Case(
        "unsorted_dates",
        _file("p.csv", _csv(_swap(NEW, 44, 46))),
        de.UnsortedInputError,
        47,
        "date",
        "increasing date order",
    ),
    Case("calendar_gap", _file("p.csv", _csv(GAPPED)), de.CalendarGapError, 26, "date", "max_gap_days=10"),
    Case(
        "different_calendar",
        _file("p.csv", _csv(SPARSE)),
        de.CalendarMismatchError,
        23,
        "date",
        "max_missing_frac",
    ),
    Case(
        "row_already_stored",
        _file("p.csv", _csv(_price_lines(19, 21))),
        de.DuplicateRowError,
        2,
        "date",
        "already exists in the store",
    ),
    Case(
        "pool_ticker_absent",
        _file("p.csv", _csv(NEW)),
        de.UnknownTickerError,
        None,
        "ticker",
        "'ZZZ'",
        ImportConfig(pool=("AAA", "ZZZ")),
    ),
    Case(
        "news_unknown_ticker",
        _prices_and("news", "n.csv", _news([(DATES[30], "AAA", "ok"), (DATES[31], "ZZZ", "who")])),
        de.UnknownTickerError,
        3,
        "ticker",
        "no prices in the store",
    ),
    Case(
        "news_bad_date",
        _prices_and("news", "n.csv", _news([("31/12/2021", "AAA", "x")])),
        de.DateParseError,
        2,
        "date",
        "31/12/2021",
    ),
    Case(
        "news_empty_headline",
        _prices_and("news", "n.csv", _news([(DATES[30], "AAA", "")])),
        de.BadValueError,
        2,
        "headline",
        "empty",
    ),
    Case(
        "news_bad_json",
        _prices_and(
            "news", "n.jsonl", '{"date": "2021-04-01", "ticker": "AAA", "headline": "a"}\n\n{"date": \n'
        ),
        de.FileFormatError,
        3,
        None,
        "invalid JSON",
    ),
    Case(
        "news_json_not_object",
        _prices_and("news", "n.jsonl", '["2021-04-01", "AAA", "a"]\n'),
        de.FileFormatError,
        1,
        None,
        "expected a JSON object",
    ),
    Case(
        "company_duplicate",
        _prices_and("companies", "c.csv", "ticker,name,sector,description\nAAA,A,S,d\nAAA,A2,S,d\n"),
        de.DuplicateRowError,
        3,
        "ticker",
        "duplicate ticker",
    ),
    Case(
        "company_no_description",
        _prices_and("companies", "c.csv", "ticker,name,sector\nAAA,A,S\n"),
        de.MissingColumnError,
        None,
        "description",
        "required column",
    ),
    Case(
        "company_outside_pool_strict",
        _prices_and("companies", "c.csv", "symbol,security,gics_sector,business_description\nZZZ,Z,S,d\n"),
        de.UnknownTickerError,
        2,
        "ticker",
        "no prices",
        ImportConfig(companies_outside_pool="error"),
    ),
    Case(
        "corrupt_parquet",
        _file("p.parquet", b"PAR1 definitely not parquet"),
        de.FileFormatError,
        None,
        None,
        "cannot read as Parquet",
    ),
    Case(
        "herculean_no_prices",
        lambda d: _herculean(d, prices=False),
        de.FileFormatError,
        None,
        None,
        "needs prices.parquet",
    ),
    Case(
        "herculean_duplicate_highlights",
        lambda d: _herculean(d, news_dup=True),
        de.DuplicateRowError,
        2,
        "date",
        "highlights",
    ),
]


@pytest.fixture()
def base_store(tmp_path: Path) -> MarketStore:
    """Sessions 0-19 of AAA/BBB/CCC plus companies and one news item."""
    (tmp_path / "base.csv").write_text(_csv(_price_lines(0, 20)))
    (tmp_path / "companies.csv").write_text(
        "ticker,name,sector,description\nAAA,Aaa Inc,S1,d\nBBB,Bbb Inc,S1,d\nCCC,Ccc Inc,S2,d\n"
    )
    (tmp_path / "news.csv").write_text(_news([(DATES[3], "AAA", "AAA opens a plant")]))
    store = MarketStore(tmp_path / "market.sqlite")
    import_files(
        store,
        prices=[tmp_path / "base.csv"],
        companies=[tmp_path / "companies.csv"],
        news=[tmp_path / "news.csv"],
    )
    yield store
    store.close()


def test_corpus_is_large_and_distinct() -> None:
    assert len(CASES) >= 20
    assert len({c.name for c in CASES}) == len(CASES)
    assert len({(c.error, c.text) for c in CASES}) >= 20  # distinct errors, not one message 20 times


def test_unmutated_file_imports(base_store: MarketStore, tmp_path: Path) -> None:
    (tmp_path / "p.csv").write_text(_csv(NEW))
    report = import_files(base_store, prices=[tmp_path / "p.csv"])
    assert report.written["prices"] == len(NEW)
    assert base_store.info().n_price_rows == 3 * 40


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_malformed_input(case: Case, base_store: MarketStore, tmp_path: Path) -> None:
    before = base_store.digest()
    files = tmp_path / "in"
    files.mkdir()
    kwargs = case.write(files)
    with pytest.raises(case.error) as info:
        import_files(base_store, config=case.config, **kwargs)
    exc = info.value
    assert isinstance(exc, de.DataValidationError)
    assert case.text in str(exc), str(exc)
    assert "np." not in str(exc), str(exc)  # plain numbers, never numpy reprs
    assert exc.row == case.row, str(exc)
    assert exc.column == case.column, str(exc)
    assert exc.path is not None and str(files) in exc.path, str(exc)
    if case.row is not None:
        assert f"{exc.row_kind} {case.row}" in str(exc)
    assert base_store.digest() == before
    with sqlite3.connect(base_store.path) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_failure_while_writing_rolls_back(
    base_store: MarketStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash after the prices are inserted (news write fails) leaves no prices behind."""
    (tmp_path / "p.csv").write_text(_csv(NEW))
    (tmp_path / "n.csv").write_text(_news([(DATES[30], "AAA", "fine")]))
    before = base_store.digest()

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(MarketStore, "_write_news", boom)
    with pytest.raises(RuntimeError, match="disk full"):
        import_files(base_store, prices=[tmp_path / "p.csv"], news=[tmp_path / "n.csv"])
    assert base_store.digest() == before
    assert base_store.info().n_price_rows == 60


def test_replace_overwrites_stored_rows(base_store: MarketStore, tmp_path: Path) -> None:
    (tmp_path / "p.csv").write_text(_csv([ln.replace(",1019", ",7") for ln in _price_lines(19, 21)]))
    import_files(base_store, prices=[tmp_path / "p.csv"], config=ImportConfig(on_conflict="replace"))
    assert base_store.bars("AAA", DATES[19], DATES[19])[0].volume == 7


def test_error_attributes_for_parquet_rows(base_store: MarketStore, tmp_path: Path) -> None:
    frame = pd.DataFrame({"date": pd.to_datetime(DATES[20:23]), "ticker": "AAA", "close": [1.0, np.nan, 2.0]})
    frame.to_parquet(tmp_path / "p.parquet")
    with pytest.raises(de.BadValueError) as info:
        import_files(base_store, prices=[tmp_path / "p.parquet"])
    assert (info.value.row, info.value.row_kind, info.value.column) == (2, "row", "close")
