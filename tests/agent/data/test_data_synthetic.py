"""The synthetic market: deterministic, realistic calendar, planted pairs and breaks as the
truth file says, news around the breaks, and files the loaders read back."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from agent.data.errors import DataConfigError
from agent.data.loaders import load_companies, load_news, load_prices
from agent.data.synthetic import PairSpec, SyntheticConfig, generate_market
from kernels import adf, engle_granger, half_life

SMALL = SyntheticConfig(seed=11, n_sessions=600, breaks=())


def test_same_seed_same_market_other_seed_differs() -> None:
    a, b, c = (
        generate_market(SMALL),
        generate_market(SMALL),
        generate_market(SyntheticConfig(seed=12, n_sessions=600, breaks=())),
    )
    assert a.prices.equals(b.prices) and a.news.equals(b.news) and a.truth == b.truth
    assert not a.prices["close"].equals(c.prices["close"])


def test_config_validation() -> None:
    with pytest.raises(DataConfigError, match="half_life"):
        SyntheticConfig(pairs=(PairSpec("GRNF", "HRBK", half_life=0.5, beta=1.0),))
    with pytest.raises(DataConfigError, match="two pairs"):
        SyntheticConfig(pairs=(PairSpec("GRNF", "HRBK", 5, 1.0), PairSpec("HRBK", "MLWD", 5, 1.0)), breaks=())


def test_files_round_trip_through_loaders(synthetic_files: dict, synthetic_truth: dict) -> None:
    p = load_prices(synthetic_files["prices"]).frame
    assert p["ticker"].nunique() == len(synthetic_truth["tickers"])
    assert set(load_news(synthetic_files["news"]).frame["ticker"]) <= set(p["ticker"])
    assert len(load_companies(synthetic_files["companies"])) == len(synthetic_truth["tickers"])
    days = p["date"].drop_duplicates().to_numpy().astype("datetime64[D]")
    weekday = (days.view("int64") - 4) % 7  # 1970-01-01 was a Thursday (weekday 3)
    assert ((days.view("int64") + 3) % 7 < 5).all(), "weekend session"
    assert (
        np.datetime64("2019-12-25") not in days and np.datetime64("2019-11-28") not in days
    )  # Christmas, Thanksgiving
    assert weekday.size == synthetic_truth["calendar"]["n_sessions"]


def test_planted_pairs_match_truth(synthetic_files: dict, synthetic_truth: dict) -> None:
    frame = load_prices(synthetic_files["prices"]).frame
    close = frame.pivot(index="date", columns="ticker", values="close")
    for p in synthetic_truth["pairs"]:
        stop = p["break"]["session"] if p["break"] else len(close)
        y, x = np.log(close[p["y"]].to_numpy()[:stop]), np.log(close[p["x"]].to_numpy()[:stop])
        spread = y - p["beta"] * x - p["alpha"]
        est = half_life(spread)
        # estimator -ln2/(phi-1) vs truth -ln2/ln(phi): a few percent apart, plus sampling noise
        assert 0.6 * p["half_life"] < est < 1.6 * p["half_life"], (p["pair"], est)
        assert engle_granger(y, x).pvalue < 0.01, p["pair"]
        if p["break"]:
            post = np.log(close[p["y"]].to_numpy()[stop:]) - p["beta"] * np.log(
                close[p["x"]].to_numpy()[stop:]
            )
            assert adf(post).pvalue > 0.05, p["pair"]  # decoupled after the break: a unit root


def test_news_around_breaks_and_decoys(synthetic_files: dict, synthetic_truth: dict) -> None:
    news = [json.loads(line) for line in Path(synthetic_files["news"]).read_text().splitlines()]
    for b in synthetic_truth["breaks"]:
        near = [n for n in news if n["ticker"] == b["ticker"] and n["kind"] == "structural"]
        assert len(near) == 3
        assert any(n["date"] == b["date"] for n in near)
        assert any(b["event"] in (n["headline"] + n["summary"]).lower() for n in near)
    decoys = [e for e in synthetic_truth["events"] if not e["material"]]
    assert len(decoys) == 4 and all(
        e["ticker"] not in {b["ticker"] for b in synthetic_truth["breaks"]} for e in decoys
    )
    kinds = {n["kind"] for n in news}
    assert kinds == {"routine", "sentiment", "structural", "decoy"}
    assert sum(any(ch.isdigit() for ch in n["headline"]) for n in news) > 0  # dates inside text, for masking
