"""The market-data lookup tool against plain numpy on the same store, and its refusals."""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pytest

from agent.data.store import MarketStore
from agent.qa.tools.base import Tool
from agent.qa.tools.lookup import INDICATORS, LookupTool
from kernels import half_life, spread_zscore


@pytest.fixture(scope="module")
def store(synthetic_store_path):
    s = MarketStore(synthetic_store_path, create=False)
    yield s
    s.close()


@pytest.fixture(scope="module")
def tool(store):
    return LookupTool(store)


def _closes(store, tickers, start=None, end=None):
    h = store.prices(tickers, start, end)
    keep = ~np.isnan(h.values).any(axis=1)
    return h.dates[keep], h.values[keep]


def test_is_a_tool_with_a_bounded_schema(tool):
    assert isinstance(tool, Tool)
    props = tool.args_schema["properties"]
    assert tool.args_schema["additionalProperties"] is False
    assert props["indicator"]["enum"] == list(INDICATORS)
    assert props["symbol"]["maxLength"] == 12 and props["window"]["maximum"] >= 252


def test_close_on_a_session_and_on_a_holiday(tool, store):
    bar = store.bars("GRNF", "2015-03-02", "2015-03-02")[0]
    r = tool({"symbol": "GRNF", "indicator": "close", "date": "2015-03-02"})
    assert r.ok and r.numbers == (round(bar.close, 2),)
    r = tool({"symbol": "grnf", "indicator": "close", "date": "2015-12-25"})  # Christmas: no session
    before = store.bars("GRNF", "2015-12-18", "2015-12-24")[-1]
    assert r.ok and r.numbers == (round(before.close, 2),)
    assert "no session on 2015-12-25" in r.text


def test_price_range_lists_or_summarises(tool):
    short = tool({"symbol": "KSTR", "indicator": "high", "start": "2014-01-02", "end": "2014-01-10"})
    assert short.ok and len(short.numbers) == short.text.count("\n")
    long = tool({"symbol": "KSTR", "indicator": "close", "start": "2014-01-02", "end": "2014-12-31"})
    assert long.ok and "min" in long.text and len(long.numbers) == 5


def test_return_and_volatility_match_numpy(tool, store):
    _, v = _closes(store, ["MLWD"], "2016-01-04", "2016-06-30")
    r = tool({"symbol": "MLWD", "indicator": "return", "start": "2016-01-04", "end": "2016-06-30"})
    assert r.ok and r.numbers[0] == pytest.approx((v[-1, 0] / v[0, 0] - 1) * 100, abs=1e-4)
    _, w = _closes(store, ["MLWD"], None, "2016-06-30")
    lr = np.diff(np.log(w[-60:, 0]))
    r = tool({"symbol": "MLWD", "indicator": "volatility", "window": 60, "date": "2016-06-30"})
    assert r.ok
    assert r.numbers[0] == pytest.approx(lr.std(ddof=1) * 100, abs=1e-4)
    assert r.numbers[1] == pytest.approx(lr.std(ddof=1) * 100 * math.sqrt(252), abs=1e-3)


def test_pair_indicators_match_kernels_and_the_planted_pair(tool, store):
    args = {"symbol": "HRBK", "other": "GRNF", "start": "2013-01-02", "end": "2019-12-31"}
    _, v = _closes(store, ["HRBK", "GRNF"], "2013-01-02", "2019-12-31")
    ry, rx = np.diff(np.log(v[:, 0])), np.diff(np.log(v[:, 1]))
    beta_ret = np.polyfit(rx, ry, 1)[0]
    assert tool(args | {"indicator": "beta"}).numbers[0] == pytest.approx(beta_ret, abs=1e-4)
    b, a = np.polyfit(np.log(v[:, 1]), np.log(v[:, 0]), 1)
    hr = tool(args | {"indicator": "hedge_ratio"})
    assert hr.numbers == pytest.approx((round(b, 4), round(a, 4)), abs=1e-4)
    assert 0.8 < b < 1.2  # planted beta 1.0
    spread = np.log(v[:, 0]) - b * np.log(v[:, 1])
    hl = tool(args | {"indicator": "half_life"})
    assert hl.numbers[0] == pytest.approx(half_life(spread), abs=0.01)
    assert 4.0 < hl.numbers[0] < 16.0  # planted half-life 8 sessions
    z = tool(args | {"indicator": "zscore"})
    assert z.numbers[0] == pytest.approx(spread_zscore(spread), abs=1e-4)


def test_missing_sessions_are_dropped_not_filled(tool, store):
    # PNDR halts on 2017-09-06..08: a window over them holds only sessions where both trade
    r = tool(
        {"symbol": "PNDR", "other": "GRNF", "indicator": "beta", "start": "2017-09-01", "end": "2017-09-15"}
    )
    n_all = len(store.calendar("2017-09-01", "2017-09-15", ["GRNF"]))
    assert r.ok and f"({n_all - 3} sessions)" in r.text
    listed = store.info().tickers
    vtrx = next(t for t in listed if t.ticker == "VTRX").first
    r = tool({"symbol": "VTRX", "indicator": "close", "date": str(vtrx - dt.timedelta(days=30))})
    assert not r.ok and r.error == "bad_args"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({"symbol": "ZZZZ", "indicator": "close", "date": "2015-03-02"}, "not in the market store"),
        ({"symbol": "GRNF", "indicator": "eps", "date": "2015-03-02"}, "indicator='eps'; allowed"),
        ({"symbol": "GRNF", "indicator": "close", "date": "03/02/2015"}, "YYYY-MM-DD"),
        ({"symbol": "GRNF", "indicator": "close", "date": "2015-02-30"}, "not a calendar date"),
        ({"symbol": "GRNF", "indicator": "return", "start": "2016-01-04", "end": "2015-01-02"}, "after end"),
        ({"symbol": "GRNF", "indicator": "return"}, "give a period"),
        ({"symbol": "GRNF", "indicator": "return", "start": "2016-01-04", "window": 20}, "not both"),
        ({"symbol": "GRNF", "indicator": "volatility", "window": 2}, "window=2; allowed: 3.."),
        ({"symbol": "GRNF", "indicator": "volatility", "window": True}, "window=True"),
        ({"symbol": "GRNF", "indicator": "beta", "window": 50}, "needs other"),
        ({"symbol": "GRNF", "indicator": "beta", "other": "GRNF", "window": 50}, "must differ"),
        ({"symbol": "GRNF", "indicator": "close", "date": "2015-03-02", "window": 5}, "not both"),
        ({"symbol": "GRNF", "indicator": "close", "date": "2015-03-02", "sql": "drop"}, "unknown argument"),
        ({"symbol": "GRNF", "indicator": "return", "start": "2040-01-02"}, "needs at least 2"),
        ({"symbol": 7, "indicator": "close"}, "symbol=7"),
    ],
)
def test_bad_calls_come_back_as_clear_errors(tool, args, needle):
    r = tool(args)
    assert not r.ok and r.error == "bad_args"
    assert needle in r.text
    assert r.numbers == ()


def test_not_a_mapping(tool):
    r = tool(["GRNF"])  # type: ignore[arg-type]
    assert not r.ok and "object" in r.text
