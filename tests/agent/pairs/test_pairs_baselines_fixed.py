"""Long-Short and Short-Long: hand-computed returns on a tiny price series under both
exposures, and the gap rule (no position from a session a leg lacks; 0 flagged missing)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agent.pairs.baselines.common import PairSeries, pair_betas, tradable
from agent.pairs.baselines.fixed_direction import (
    LONG_SHORT_CONFIG,
    SHORT_LONG_CONFIG,
    FixedDirectionConfig,
    fixed_actions,
)
from agent.pairs.baselines.ledger import settle_actions
from localfin.errors import ConfigError, LocalfinError

# Two history sessions, then a 4-session test window (3 transitions).
DATES = np.arange("2021-03-01", "2021-03-07", dtype="datetime64[D]")
A = np.array([90.0, 95.0, 100.0, 110.0, 99.0, 108.9])  # test: +10%, -10%, +10%
B = np.array([48.0, 49.0, 50.0, 52.5, 52.5, 49.875])  # test: +5%, 0%, -5%


def _series(a: np.ndarray = A, b: np.ndarray = B) -> PairSeries:
    return PairSeries("AAA", "BBB", DATES, a, b, first=2, hedge_ratio=1.0, half_life=5.0)


def _run(config: FixedDirectionConfig, exposure: str, betas: np.ndarray | None = None):
    s = _series()
    ok = tradable(s, exposure, betas)
    return settle_actions(s, fixed_actions(s, ok, config), exposure, betas=betas)


def test_long_short_no_beta_by_hand() -> None:
    led = _run(LONG_SHORT_CONFIG, "no_beta")
    # 0.5 r_A - 0.5 r_B per transition
    assert [r.realized for r in led.records] == pytest.approx([0.025, -0.05, 0.075], abs=1e-15)
    assert [r.action for r in led.records] == ["LONG_SHORT"] * 3
    assert [r.date for r in led.records] == ["2021-03-03", "2021-03-04", "2021-03-05"]
    assert [r.step for r in led.records] == [1, 2, 3]
    m = led.metrics()
    assert m.cumulative_return == pytest.approx(1.025 * 0.95 * 1.075 - 1, abs=1e-15)  # 0.04678125
    assert m.max_drawdown == pytest.approx(0.95 - 1, abs=1e-15)  # peak 1.025 -> 0.97375
    assert m.action_accuracy == pytest.approx(2 / 3)  # best on transitions 1 and 3
    assert led.records[-1].equity == pytest.approx(1.04678125, abs=1e-15)


def test_short_long_no_beta_by_hand() -> None:
    led = _run(SHORT_LONG_CONFIG, "no_beta")
    assert [r.realized for r in led.records] == pytest.approx([-0.025, 0.05, -0.075], abs=1e-15)
    assert led.metrics().cumulative_return == pytest.approx(0.975 * 1.05 * 0.925 - 1, abs=1e-15)
    assert [r.ret_long_short for r in led.records] == pytest.approx([0.025, -0.05, 0.075], abs=1e-15)


def test_beta_exposure_sizes_legs_by_the_rolling_beta() -> None:
    betas = np.full(len(DATES), 1.5)  # w_A = 1 / 2.5 = 0.4, w_B = 1.5 / 2.5 = 0.6
    led = _run(LONG_SHORT_CONFIG, "beta", betas)
    # 0.4 r_A - 0.6 r_B: 0.04 - 0.03, -0.04 - 0, 0.04 + 0.03
    assert [r.realized for r in led.records] == pytest.approx([0.01, -0.04, 0.07], abs=1e-15)
    led = _run(SHORT_LONG_CONFIG, "beta", betas)
    assert [r.realized for r in led.records] == pytest.approx([-0.01, 0.04, -0.07], abs=1e-15)


def test_beta_exposure_without_a_beta_holds_nothing() -> None:
    betas = np.array([1.0, 1.0, np.nan, 1.5, 1.5, 1.5])
    led = _run(LONG_SHORT_CONFIG, "beta", betas)
    assert [r.action for r in led.records] == ["FLAT", "LONG_SHORT", "LONG_SHORT"]
    assert [r.realized for r in led.records] == pytest.approx([0.0, -0.04, 0.07], abs=1e-15)
    assert led.records[0].note == "no beta" and led.n_no_beta == 1


def test_pair_betas_use_the_last_common_sessions_only() -> None:
    rng = np.random.default_rng(3)
    n = 60
    lb = np.cumsum(rng.normal(0, 0.01, n)) + 3.0
    la = 0.8 * lb + rng.normal(0, 0.005, n) + 1.0
    pa, pb = np.exp(la), np.exp(lb)
    pb[30] = np.nan  # B has no close on session 30
    s = PairSeries(
        "A", "B", np.arange(n).astype("datetime64[D]"), pa, pb, first=40, hedge_ratio=0.8, half_life=3.0
    )
    betas = pair_betas(s, 20)
    assert math.isnan(betas[30]) and math.isnan(betas[18]) and np.isfinite(betas[19])
    common = [t for t in range(n) if t != 30]
    for t in (19, 35, 45, 59):
        rows = [c for c in common if c <= t][-20:]
        assert betas[t] == pytest.approx(np.polyfit(lb[rows], la[rows], 1)[0], rel=1e-9)


def test_a_leg_without_a_close_means_no_position_and_a_missing_settlement() -> None:
    b = B.copy()
    b[3] = np.nan  # B lacks session 3 (step 2)
    s = _series(b=b)
    ok = tradable(s, "no_beta")
    actions = fixed_actions(s, ok, LONG_SHORT_CONFIG)
    assert actions == ["LONG_SHORT", "FLAT", "LONG_SHORT"]
    led = settle_actions(s, actions, "no_beta")
    # step 1 settles into the gap (0, missing); step 2 decides in it (FLAT, 0, missing)
    assert [r.realized for r in led.records] == [0.0, 0.0, pytest.approx(0.075, abs=1e-15)]
    assert [r.note for r in led.records] == ["missing price", "missing price", ""]
    assert led.n_missing == 2


def test_policy_holding_through_a_gap_is_refused() -> None:
    b = B.copy()
    b[3] = np.nan
    with pytest.raises(LocalfinError, match="not tradable"):
        settle_actions(_series(b=b), ["LONG_SHORT"] * 3, "no_beta")
    with pytest.raises(ConfigError, match="exactly one per transition"):
        settle_actions(_series(), ["LONG_SHORT"] * 2, "no_beta")


def test_config_validation() -> None:
    assert LONG_SHORT_CONFIG.method == "long_short" and SHORT_LONG_CONFIG.method == "short_long"
    with pytest.raises(ConfigError, match="direction='FLAT'; allowed: LONG_SHORT, SHORT_LONG"):
        FixedDirectionConfig("FLAT")


def test_long_short_with_equal_share_legs_by_hand() -> None:
    s = _series()
    ok = tradable(s, "no_beta", None)
    led = settle_actions(s, fixed_actions(s, ok, LONG_SHORT_CONFIG), "no_beta", no_beta_legs="equal_shares")
    # one share of each leg: (dP_A - dP_B) / (P_A + P_B) at the decision's closes
    want = [(10 - 2.5) / 150, (-11 - 0) / 162.5, (9.9 - (-2.625)) / 151.5]
    assert [r.realized for r in led.records] == pytest.approx(want, abs=1e-15)
