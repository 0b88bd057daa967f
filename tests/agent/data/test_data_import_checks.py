"""The importer's consistency checks beyond single cells: close jumps (listed, or an error in
strict mode, inside a file and across the seam with the store), OHLC tolerance, ticker case,
and the settings' own validation. Rejections leave the store unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.data import errors as de
from agent.data.calendar import business_sessions
from agent.data.importer import import_files
from agent.data.loaders import load_prices
from agent.data.store import MarketStore
from agent.data.validate import ImportConfig

DATES = [str(d) for d in business_sessions("2021-03-01", 30)]
HEADER = "date,ticker,open,high,low,close,adj_close,volume"


def _rows(ticker: str, start: int, stop: int, scale: dict[int, float] | None = None) -> list[str]:
    out = []
    for i in range(start, stop):
        c = (20.0 + 0.1 * i) * (scale or {}).get(i, 1.0)
        out.append(f"{DATES[i]},{ticker},{c:.2f},{c * 1.01:.2f},{c * 0.99:.2f},{c:.2f},{c:.2f},100")
    return out


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join([HEADER, *lines]) + "\n")
    return path


@pytest.fixture()
def store(tmp_path: Path):
    s = MarketStore(tmp_path / "m.sqlite")
    import_files(s, prices=[_write(tmp_path / "base.csv", _rows("AAA", 0, 15) + _rows("BBB", 0, 15))])
    yield s
    s.close()


def test_a_1000x_close_is_listed_and_imported_by_default(store: MarketStore, tmp_path: Path) -> None:
    f = _write(tmp_path / "p.csv", _rows("AAA", 15, 30, {20: 1000.0}) + _rows("BBB", 15, 30))
    report = import_files(store, prices=[f])
    assert report.written["prices"] == 30
    assert [(j.ticker, str(j.date), j.row) for j in report.jumps] == [
        ("AAA", DATES[20], 7),
        ("AAA", DATES[21], 8),
    ]
    up, down = report.jumps
    assert up.close == down.prev_close > up.prev_close and 990 < up.factor < 1010 and 990 < down.factor < 1010
    text = up.describe()
    assert "close 21.9 -> 22000 (up x1e+03" in text and "line 7" in text and "np." not in text


def test_a_seam_jump_against_the_store(store: MarketStore, tmp_path: Path) -> None:
    """The file itself is smooth, but its first close is 100x the last stored one."""
    scaled = {i: 100.0 for i in range(15, 30)}
    f = _write(tmp_path / "p.csv", _rows("AAA", 15, 30, scaled) + _rows("BBB", 15, 30))
    before = store.digest()
    with pytest.raises(
        de.BadValueError, match=r"close moves from 21\.4 on .* \(in the store\) to 2150"
    ) as info:
        import_files(store, prices=[f], config=ImportConfig(on_jump="error"))
    assert (info.value.row, info.value.column) == (2, "close")
    assert store.digest() == before
    report = import_files(store, prices=[f])
    assert [(j.ticker, str(j.prev_date), j.row) for j in report.jumps] == [("AAA", DATES[14], 2)]


def test_moves_within_the_factor_are_not_jumps(store: MarketStore, tmp_path: Path) -> None:
    f = _write(tmp_path / "p.csv", _rows("AAA", 15, 30, {20: 2.9}) + _rows("BBB", 15, 30))
    assert import_files(store, prices=[f]).jumps == []
    with pytest.raises(de.DataConfigError, match=r"max_daily_factor=1\.0 must be a finite number > 1"):
        ImportConfig(max_daily_factor=1.0)


def test_ohlc_tolerance_is_a_named_setting(tmp_path: Path) -> None:
    lines = _rows("AAA", 0, 10)
    cells = lines[4].split(",")
    cells[5] = f"{float(cells[3]) * 1.0005:.4f}"  # close 0.05 % above high: rounding, not an error
    lines[4] = ",".join(cells)
    f = _write(tmp_path / "p.csv", lines)
    assert len(load_prices(f)) == 10
    with pytest.raises(de.BadValueError, match=r"ohlc_tolerance=0\.0001") as info:
        load_prices(f, config=ImportConfig(ohlc_tolerance=0.0001))
    assert (info.value.row, info.value.column) == (6, "close")
    with pytest.raises(de.DataConfigError, match=r"ohlc_tolerance=0\.5"):
        ImportConfig(ohlc_tolerance=0.5)


def test_tickers_are_upper_cased(store: MarketStore, tmp_path: Path) -> None:
    f = _write(tmp_path / "p.csv", [r.replace(",AAA,", ",aaa,") for r in _rows("AAA", 15, 30)])
    (tmp_path / "n.csv").write_text(f"date,ticker,headline\n{DATES[16]},Aaa,news\n")
    import_files(store, prices=[f], news=[tmp_path / "n.csv"], config=ImportConfig(pool=(" aaa",)))
    assert store.tickers() == ("AAA", "BBB")
    assert store.info().tickers[0].n_rows == 30
    assert store.news("AAA", DATES[16])[0].headline == "news"


def test_cli_import_lists_the_jumps(store: MarketStore, tmp_path: Path, cli) -> None:
    f = _write(tmp_path / "p.csv", _rows("AAA", 15, 30, {20: 1000.0}) + _rows("BBB", 15, 30))
    store.close()
    r = cli("data", "import", "--prices", f, "--store", store.path)
    assert r.code == 0, r.err
    assert "2 close moves beyond max_daily_factor=3" in r.out
    assert f"AAA {DATES[19]} -> {DATES[20]}: close 21.9 -> 22000" in r.out
    r = cli("data", "import", "--prices", f, "--store", store.path, "--strict-jumps", "--replace")
    assert r.code == 2 and r.err.count("error:") == 1 and "on_jump='error'" in r.err


def test_real_prices_pass_and_the_largest_move_is_listed_at_a_lower_factor(shared_data: Path) -> None:
    """The shared file's closes are split-adjusted: nothing beyond the default factor 3; at
    factor 2 only APA's -54 % of 2020-03-09 (oil price war and Covid crash) is listed."""
    path = shared_data / "prices" / "staples_energy_daily_2003_2023.csv"
    if not path.is_file():
        pytest.skip(f"{path} absent")
    assert load_prices(path).jumps == ()
    jumps = load_prices(path, config=ImportConfig(max_daily_factor=2.0)).jumps
    assert [(j.ticker, str(j.date)) for j in jumps] == [("APA", "2020-03-09")]
    assert 2.1 < jumps[0].factor < 2.2
