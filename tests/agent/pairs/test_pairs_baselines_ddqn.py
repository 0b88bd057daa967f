"""EG-DDQN: it learns a planted mean-reverting spread (AR(1), half-life 4 sessions) better than
chance out of sample with fixed seeds; training reads nothing of the test window; a decision at t
never changes when prices after t change; runs are reproducible to the bit; config errors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from agent.pairs.baselines.common import PairSeries, tradable
from agent.pairs.baselines.eg_ddqn import DDQNConfig, ddqn_features, train_and_act
from agent.pairs.baselines.ledger import settle_actions
from localfin.errors import ConfigError

HISTORY, TRAIN, TEST = 400, 80, 300  # sessions: earlier history, training window, test window
HALF_LIFE = 2.0
CFG = DDQNConfig(history_sessions=300, episodes=6, eps_decay_episodes=4)
FIRST = HISTORY + TRAIN  # index of step 001


def _planted(seed: int = 11) -> PairSeries:
    """log A = log B + s, s an AR(1) with the given half-life (sd of shocks 1%), B a random walk."""
    rng = np.random.default_rng(seed)
    n = FIRST + TEST
    phi = 0.5 ** (1.0 / HALF_LIFE)
    s = np.zeros(n)
    for t in range(1, n):
        s[t] = phi * s[t - 1] + rng.normal(0, 0.01)
    lb = np.log(40.0) + np.cumsum(rng.normal(0, 0.012, n))
    dates = np.datetime64("2010-01-04") + np.arange(n)
    return PairSeries(
        "AAA", "BBB", dates, np.exp(lb + s), np.exp(lb), FIRST, hedge_ratio=1.0, half_life=HALF_LIFE
    )


def _train(series: PairSeries, seed: int = 5):
    ok = tradable(series, "no_beta")
    return train_and_act(
        series, ok, CFG, train_first=HISTORY, train_last=FIRST - 1, exposure="no_beta", betas=None, seed=seed
    )


@pytest.fixture(scope="module")
def trained():
    series = _planted()
    return series, _train(series)


def test_learns_the_planted_spread_better_than_chance(trained) -> None:
    series, res = trained
    led = settle_actions(series, list(res.actions), "no_beta")
    m = led.metrics()
    # 500 seeded uniform-random policies over the same transitions
    ls = np.array([r.ret_long_short for r in led.records])
    best = np.array([r.best for r in led.records])
    rng = np.random.default_rng(2024)
    draws = rng.integers(0, 3, size=(500, len(ls)))
    sign = np.array([1.0, -1.0, 0.0])[draws]
    random_cr = np.prod(1.0 + sign * ls, axis=1) - 1.0
    names = np.array(["LONG_SHORT", "SHORT_LONG", "FLAT"])[draws]
    random_acc = (names == best).mean(axis=1)
    assert m.cumulative_return > np.quantile(random_cr, 0.99)
    assert m.action_accuracy > np.quantile(random_acc, 0.99)
    assert m.action_counts["LONG_SHORT"] > 20 and m.action_counts["SHORT_LONG"] > 20  # it trades both ways
    curve = res.curve
    assert [c["episode"] for c in curve] == list(range(1, CFG.episodes + 1))
    assert curve[0]["epsilon"] == 1.0 and curve[-1]["epsilon"] == pytest.approx(CFG.eps_end)
    assert all(c["loss"] is not None and c["loss"] >= 0 for c in curve[1:])
    assert curve[-1]["greedy_return"] > 0 and res.info["history_used"] == 300
    assert res.info["train_sessions"] == [str(series.dates[HISTORY - 300]), str(series.dates[FIRST - 1])]


def test_training_is_blind_to_the_test_window_and_actions_are_causal(trained) -> None:
    series, res = trained
    cut = 120  # change every price after step 121
    rng = np.random.default_rng(1)
    a, b = series.price_a.copy(), series.price_b.copy()
    later = slice(FIRST + cut + 1, None)
    a[later] *= np.exp(rng.normal(0, 0.2, len(a[later])))
    b[later] *= np.exp(rng.normal(0, 0.2, len(b[later])))
    moved = dataclasses.replace(series, price_a=a, price_b=b)
    res2 = _train(moved)
    assert res2.curve == res.curve  # bit-identical training: same seeds, no test-window data
    assert res2.actions[: cut + 1] == res.actions[: cut + 1]
    assert res2.notes[: cut + 1] == res.notes[: cut + 1]  # the Q-values too
    assert res2.actions != res.actions  # the change does reach later decisions


def test_features_use_only_the_past() -> None:
    series = _planted()
    feats, valid = ddqn_features(series, CFG, FIRST - 10)
    t = FIRST + 5
    cut = dataclasses.replace(
        series,
        dates=series.dates[: t + 2],
        price_a=series.price_a[: t + 2],
        price_b=series.price_b[: t + 2],
    )
    f2, v2 = ddqn_features(cut, CFG, FIRST - 10)
    assert np.array_equal(feats[: t + 1], f2[: t + 1]) and np.array_equal(valid[: t + 1], v2[: t + 1])
    assert valid[FIRST - 10 :].all() and not valid[: FIRST - 10].any()


@pytest.mark.parametrize(
    ("kwargs", "msg"),
    [
        ({"gamma": 1.0}, r"gamma=1.0; allowed: \[0, 1\)"),
        ({"min_replay": 8, "batch_size": 32}, "min_replay=8; allowed: batch_size=32 <= min_replay"),
        ({"eps_start": 0.1, "eps_end": 0.2}, "eps_start=0.1, eps_end=0.2"),
        ({"z_lags": 0}, "z_lags=0; allowed: an integer >= 1"),
        ({"lr": 0.0}, "lr=0.0; allowed: a finite number > 0"),
        ({"history_sessions": -1}, "history_sessions=-1"),
    ],
)
def test_config_errors_name_the_field(kwargs: dict, msg: str) -> None:
    with pytest.raises(ConfigError, match=msg):
        DDQNConfig(**kwargs)


def test_training_window_must_end_before_step_001() -> None:
    series = _planted()
    with pytest.raises(ConfigError, match="allowed: 0 <= first <= last < step 001"):
        train_and_act(
            series,
            tradable(series, "no_beta"),
            CFG,
            train_first=HISTORY,
            train_last=FIRST,
            exposure="no_beta",
            betas=None,
            seed=0,
        )
