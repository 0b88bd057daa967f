"""The baseline runner on the synthetic market: the screen's top pair at step 001, N-1 settled
transitions on the pool calendar, run folders the report reads, one run alone equal to the same
run inside run_all, the rolling study's tables; and the rolling study on the real staples/energy
data (slow)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agent.data.store import MarketStore
from agent.pairs.baselines.eg_ddqn import DDQNConfig
from agent.pairs.baselines.eg_z import EGZConfig
from agent.pairs.baselines.equal_weight import EqualWeightConfig
from agent.pairs.baselines.fixed_direction import LONG_SHORT_CONFIG, SHORT_LONG_CONFIG
from agent.pairs.baselines.rolling import run_rolling, yearly_windows
from agent.pairs.baselines.runner import RunSettings, run_all, run_baseline
from agent.pairs.market.records import read_json, read_steps
from agent.pairs.screen.causal import ScreenConfig, screen_store
from localfin.errors import ConfigError

POOL = ["GRNF", "HRBK", "KSTR", "MLWD", "NRGX", "OKSN", "PTRV", "SLTN"]
TRAIN = ("2016-11-01", "2016-12-30")
TEST = ("2017-01-02", "2017-03-31")
SMALL_DDQN = DDQNConfig(history_sessions=150, episodes=3, eps_decay_episodes=2, min_replay=64)
STAPLES = ["KO", "PEP", "PG", "MDLZ", "CPB", "CAG", "K", "HRL", "SJM", "TSN"]
CONFIGS = (LONG_SHORT_CONFIG, SHORT_LONG_CONFIG, EqualWeightConfig(), EGZConfig(), SMALL_DDQN)


@pytest.fixture(scope="module")
def store(synthetic_store_path: Path) -> MarketStore:
    with MarketStore(synthetic_store_path) as s:
        yield s


@pytest.fixture(scope="module")
def results(store: MarketStore, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("baselines")
    return out, run_all(store, pool=POOL, train=TRAIN, test=TEST, out_dir=out, configs=CONFIGS, seed=3)


def test_every_baseline_writes_a_run_folder_on_the_screen_top_pair(store: MarketStore, results) -> None:
    out, res = results
    sessions = store.calendar(*TEST, tickers=POOL)
    top = screen_store(store, sessions[0].item(), pool=POOL).candidates[0]
    assert len(res) == 10
    for r in res:
        doc = read_json(r.run_dir / "metrics.json")
        steps = read_steps(r.run_dir / "steps.parquet")
        assert r.run_dir == out / "runs" / f"{r.method}-{r.exposure}-seed3"
        assert (doc["kind"], doc["method"], doc["exposure"], doc["seed"]) == (
            "baseline",
            r.method,
            r.exposure,
            3,
        )
        assert len(steps) == len(sessions) - 1 == doc["metrics"]["n_transitions"]
        assert [s.date for s in steps] == [str(d) for d in sessions[:-1]]
        assert [s.step for s in steps] == list(range(1, len(sessions)))
        assert np.prod([1 + s.realized for s in steps]) - 1 == pytest.approx(
            doc["metrics"]["cumulative_return"]
        )
        if r.method != "equal_weight":
            assert {s.pair for s in steps} == {f"{top.ticker_a}/{top.ticker_b}"}
            assert doc["extra"]["screen"]["hedge_ratio"] == top.hedge_ratio
    by = {(r.method, r.exposure): r for r in res}
    assert by["long_short", "no_beta"].metrics.action_counts["LONG_SHORT"] == len(sessions) - 1
    ls = read_steps(by["long_short", "no_beta"].run_dir / "steps.parquet")
    sl = read_steps(by["short_long", "no_beta"].run_dir / "steps.parquet")
    assert [s.realized for s in sl] == [-s.realized for s in ls]
    egz = by["eg_z", "no_beta"].metrics.action_counts
    assert egz["FLAT"] < len(sessions) - 1 and (egz["LONG_SHORT"] or egz["SHORT_LONG"])


def test_ddqn_training_curve_is_saved(results) -> None:
    _, res = results
    for r in (x for x in res if x.method == "eg_ddqn"):
        doc = json.loads((r.run_dir / "training.json").read_text())
        assert [e["episode"] for e in doc["episodes"]] == [1, 2, 3]
        assert {"return", "greedy_return", "loss", "epsilon"} <= set(doc["episodes"][0])
        assert doc["history_used"] == 150 and doc["train_sessions"][1] == "2016-12-30"
        assert r.extra["training"]["file"] == "training.json"


def test_one_run_alone_equals_the_same_run_in_run_all(store: MarketStore, results, tmp_path: Path) -> None:
    out, _ = results
    for cfg, exposure in ((EGZConfig(), "beta"), (SMALL_DDQN, "no_beta")):
        alone = run_baseline(
            store, cfg, pool=POOL, train=TRAIN, test=TEST, exposure=exposure, out_dir=tmp_path, seed=3
        )
        same = pd.read_parquet(out / "runs" / alone.run_id / "steps.parquet")
        pd.testing.assert_frame_equal(pd.read_parquet(alone.run_dir / "steps.parquet"), same)


def test_beta_exposure_uses_the_rolling_beta(results) -> None:
    _, res = results
    by = {(r.method, r.exposure): r for r in res}
    nb = read_steps(by["long_short", "no_beta"].run_dir / "steps.parquet")
    b = read_steps(by["long_short", "beta"].run_dir / "steps.parquet")
    assert [s.realized for s in nb] != [s.realized for s in b]
    assert by["equal_weight", "beta"].metrics == by["equal_weight", "no_beta"].metrics


def test_bad_calls_are_refused(store: MarketStore, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="must end before step 001"):
        run_baseline(store, EGZConfig(), pool=POOL, train=TEST, test=TEST, exposure="beta", out_dir=tmp_path)
    with pytest.raises(ConfigError, match="exposure='gross'; allowed: no_beta, beta"):
        run_baseline(
            store, EGZConfig(), pool=POOL, train=TRAIN, test=TEST, exposure="gross", out_dir=tmp_path
        )
    with pytest.raises(ConfigError, match="one config per method"):
        run_all(
            store, pool=POOL, train=TRAIN, test=TEST, out_dir=tmp_path, configs=(EGZConfig(), EGZConfig(3.0))
        )
    with pytest.raises(ConfigError, match="window end 2017-01-01 is before its start 2017-03-01"):
        run_baseline(
            store,
            EGZConfig(),
            pool=POOL,
            train=TRAIN,
            test=("2017-03-01", "2017-01-01"),
            exposure="beta",
            out_dir=tmp_path,
        )
    with pytest.raises(ConfigError, match=r"pool=.*allowed: at least 2 distinct tickers"):
        run_all(store, pool=["GRNF", "GRNF"], train=TRAIN, test=TEST, out_dir=tmp_path)
    with pytest.raises(ConfigError, match="cost_bps=-1"):
        RunSettings(cost_bps=-1)


def test_rolling_windows_and_tables(store: MarketStore, tmp_path: Path) -> None:
    pools = {"staples": ["GRNF", "HRBK", "MLWD", "OKSN", "PNDR"], "energy": ["KSTR", "NRGX", "PTRV", "SLTN"]}
    wins = yearly_windows(store, pools["energy"], [2012, 2019, 2020], train_sessions=40)
    assert [w[0] for w in wins] == [2019, 2020]  # the synthetic market starts in 2013
    _, train, test = wins[0]
    year_cal = store.calendar("2019-01-01", "2019-12-31", tickers=pools["energy"])
    assert (test.start, test.end) == (year_cal[0].item(), year_cal[-1].item())
    cal = store.calendar(end=test.start, tickers=pools["energy"])
    assert train.end < test.start and train.start == cal[-41].item()
    strict = RunSettings(screen=ScreenConfig(max_pvalue=0.01))
    res = run_rolling(
        store,
        pools,
        years=[2019, 2020],
        out_dir=tmp_path,
        configs=(LONG_SHORT_CONFIG, EqualWeightConfig(), EGZConfig()),
        settings=strict,
    )
    assert len(res.rows) == 2 * 2 * 2 * 3
    agg = {(a["pool"], a["exposure"], a["method"]): a for a in res.aggregates}
    a = agg["energy", "no_beta", "eg_z"]
    crs = [
        r.cumulative_return
        for r in res.rows
        if (r.pool, r.exposure, r.method) == ("energy", "no_beta", "eg_z")
    ]
    assert a["windows"] == 2 and a["mean_return"] == pytest.approx(np.mean(crs))
    assert a["compounded_return"] == pytest.approx((1 + crs[0]) * (1 + crs[1]) - 1)
    md = (tmp_path / "rolling.md").read_text()
    assert "### energy, beta: cumulative return per year (%)" in md and "| 2020 |" in md
    doc = json.loads((tmp_path / "rolling.json").read_text())
    assert len(doc["rows"]) == len(res.rows) and doc["no_candidate_years"] == res.no_candidate_years
    assert (tmp_path / "energy" / "2019" / "runs" / "eg_z-beta-seed0" / "metrics.json").is_file()
    for pool, years in res.no_candidate_years.items():
        flagged = {r.year for r in res.rows if r.pool == pool and r.no_candidate}
        assert flagged == set(years)


@pytest.mark.slow
def test_rolling_on_real_staples_and_energy(shared_data: Path, tmp_path: Path) -> None:
    from agent.data.importer import import_files

    with MarketStore(tmp_path / "real.sqlite") as store:
        import_files(
            store,
            prices=[shared_data / "prices" / "staples_energy_daily_2003_2023.csv"],
            companies=[shared_data / "companies.csv"],
        )
        pools = {"energy": ["XOM", "CVX", "COP", "APA"], "staples": STAPLES}
        res = run_rolling(store, pools, years=[2005, 2015], out_dir=tmp_path / "roll")
        top = screen_store(store, "2015-01-02", pool=pools["energy"]).candidates[0]
    # the screen ranks every tradeable pair (energy's ten-year half-lives all exceed 60 sessions,
    # which the former default band [1, 60] turned into a year without a pair)
    assert res.no_candidate_years == {"energy": [], "staples": []}
    rows = {(r.pool, r.year, r.exposure, r.method): r for r in res.rows}
    assert rows["staples", 2005, "no_beta", "eg_ddqn"].n_transitions == 251
    energy = rows["energy", 2015, "no_beta", "eg_z"]
    assert energy.pair == f"{top.ticker_a}/{top.ticker_b}" and top.half_life > 60
    assert not energy.no_candidate and energy.n_transitions == 251
    assert dataclasses.asdict(rows["energy", 2015, "beta", "equal_weight"])["cumulative_return"] < 0
