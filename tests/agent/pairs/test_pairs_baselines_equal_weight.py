"""Equal-Weight: 1/N buy-and-hold of the pool by hand on a tiny store (drifting weights, a late
listing left out, a halted ticker valued at its last close), and its run folder."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from agent.data.importer import import_files
from agent.data.store import MarketStore
from agent.data.validate import ImportConfig
from agent.pairs.baselines.equal_weight import HOLD, EqualWeightConfig, equal_weight_ledger
from agent.pairs.baselines.fixed_direction import LONG_SHORT_CONFIG
from agent.pairs.baselines.runner import RunSettings, run_all
from agent.pairs.market.records import read_json, read_steps
from agent.pairs.screen.causal import ScreenConfig

PRICES = """date,ticker,close
2021-06-01,AAA,10
2021-06-02,AAA,11
2021-06-03,AAA,12
2021-06-04,AAA,12
2021-06-07,AAA,9
2021-06-01,BBB,20
2021-06-02,BBB,20
2021-06-04,BBB,25
2021-06-07,BBB,24
2021-06-02,CCC,50
2021-06-03,CCC,55
2021-06-04,CCC,60
2021-06-07,CCC,66
"""


@pytest.fixture
def tiny_store(tmp_path: Path) -> MarketStore:
    csv = tmp_path / "prices.csv"
    csv.write_text(PRICES)
    with MarketStore(tmp_path / "tiny.sqlite") as store:
        import_files(store, prices=[csv], config=ImportConfig(max_missing_frac=0.5))
        yield store


def test_buy_and_hold_by_hand(tiny_store: MarketStore) -> None:
    sessions = tiny_store.calendar("2021-06-01", "2021-06-07", tickers=["AAA", "BBB", "CCC"])
    led, facts = equal_weight_ledger(tiny_store, ("AAA", "BBB", "CCC"), sessions)
    # V = 0.5 A/10 + 0.5 B/20 (CCC lists on the second session: left out; BBB's 06-03 gap carried)
    value = [1.0, 1.05, 1.10, 1.225, 1.05]
    by_hand = [value[i + 1] / value[i] - 1 for i in range(4)]
    assert [r.realized for r in led.records] == pytest.approx(by_hand, abs=1e-15)
    # drift, not a daily rebalance: a rebalanced book would earn 0.5 (12/11 - 1) on the second day
    assert led.records[1].realized != pytest.approx(0.5 * (12 / 11 - 1))
    assert led.metrics().cumulative_return == pytest.approx(0.05, abs=1e-14)
    assert facts["held"] == ["AAA", "BBB"] and facts["left_out"] == ["CCC"] and facts["n_carried"] == 2
    assert [r.note for r in led.records] == ["", "last close carried: BBB", "last close carried: BBB", ""]
    assert {r.action for r in led.records} == {HOLD} and all(r.pair == "" for r in led.records)
    m = led.metrics()
    assert m.win_rate == pytest.approx(0.75) and math.isnan(m.action_accuracy)
    assert m.action_counts == {"LONG_SHORT": 0, "SHORT_LONG": 0, "FLAT": 0}


def test_run_folder_and_no_candidate_pair(tiny_store: MarketStore, tmp_path: Path) -> None:
    """Four sessions are far too few for the screen: the pair baseline holds nothing, flagged;
    Equal-Weight (all three tickers trade on step 001 here) is the same under both exposures.
    The file has closes only, so the screen is told to use them (its default is adj_close)."""
    res = run_all(
        tiny_store,
        pool=["AAA", "BBB", "CCC"],
        train=("2021-06-01", "2021-06-01"),
        test=("2021-06-02", "2021-06-30"),
        out_dir=tmp_path / "exp",
        configs=(EqualWeightConfig(), LONG_SHORT_CONFIG),
        settings=RunSettings(screen=ScreenConfig(price_field="close")),
    )
    assert [r.run_id for r in res] == [
        "equal_weight-no_beta-seed0",
        "long_short-no_beta-seed0",
        "equal_weight-beta-seed0",
        "long_short-beta-seed0",
    ]
    ew, ls = res[0], res[1]
    v = [1 / 3 * (11 / 11 + 20 / 20 + 50 / 50)]
    v += [1 / 3 * (12 / 11 + 20 / 20 + 55 / 50), 1 / 3 * (12 / 11 + 25 / 20 + 60 / 50)]
    v += [1 / 3 * (9 / 11 + 24 / 20 + 66 / 50)]
    assert ew.metrics.cumulative_return == pytest.approx(v[-1] / v[0] - 1, abs=1e-14)
    assert res[2].metrics == ew.metrics
    doc = read_json(ew.run_dir / "metrics.json")
    assert (
        doc["kind"] == "baseline"
        and doc["method"] == "equal_weight"
        and doc["extra"]["exposure_applies"] is False
    )
    assert doc["metrics"]["n_transitions"] == 3 and doc["extra"]["test_window"] == [
        "2021-06-02",
        "2021-06-07",
    ]
    assert ls.extra["no_candidate"] is True and "no eligible pair" in ls.extra["no_candidate_reason"]
    steps = read_steps(ls.run_dir / "steps.parquet")
    assert [(s.action, s.realized, s.note) for s in steps] == [("FLAT", 0.0, "no candidate pair")] * 3
    assert math.isnan(ls.metrics.action_accuracy) and ls.metrics.cumulative_return == 0.0
    assert np.isnan(read_steps(ew.run_dir / "steps.parquet")[0].ret_long_short)
