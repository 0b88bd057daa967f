"""Settlement arithmetic of all three actions under both exposures, by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agent.pairs.market.settlement import (
    FLAT,
    LONG_SHORT,
    SHORT_LONG,
    best_action,
    causal_betas,
    leg_weights,
    no_beta_weights,
    settle,
    signed_position,
)
from localfin.errors import ConfigError


def test_no_beta_settlement_by_hand():
    # A: 100 -> 102 (+2%), B: 50 -> 49.5 (-1%); LONG_SHORT = 0.5*0.02 - 0.5*(-0.01) = 0.015
    s = settle(SHORT_LONG, (100.0, 102.0), (50.0, 49.5), leg_weights("no_beta"))
    assert s.returns[LONG_SHORT] == pytest.approx(0.015)
    assert s.returns[SHORT_LONG] == pytest.approx(-0.015)
    assert s.returns[FLAT] == 0.0
    assert s.realized == pytest.approx(-0.015) and s.best == LONG_SHORT and not s.matched


def test_equal_share_legs_by_hand():
    # one share of A (100) against one of B (50), gross 1: w_A = 100/150, w_B = 50/150;
    # LONG_SHORT = (2/3)(+2%) - (1/3)(-1%) = 0.01667 = (dP_A - dP_B) / (P_A + P_B) = (2 + 0.5) / 150
    w = no_beta_weights("equal_shares", 100.0, 50.0)
    assert (w.w_a, w.w_b) == pytest.approx((2 / 3, 1 / 3))
    s = settle(LONG_SHORT, (100.0, 102.0), (50.0, 49.5), w)
    assert s.returns[LONG_SHORT] == pytest.approx(2.5 / 150)
    assert no_beta_weights("dollar_neutral", 100.0, 50.0) == leg_weights("no_beta")
    assert no_beta_weights("equal_shares", math.nan, 50.0) == leg_weights("no_beta")  # no price: even legs
    with pytest.raises(ConfigError, match="no_beta_legs='dollar'; allowed: dollar_neutral, equal_shares"):
        no_beta_weights("dollar", 1.0, 1.0)


def test_beta_settlement_by_hand():
    # beta 1.5: w_A = 1/2.5 = 0.4, w_B = 1.5/2.5 = 0.6; r_A = +1%, r_B = +2%
    w = leg_weights("beta", 1.5)
    assert (w.w_a, w.w_b) == pytest.approx((0.4, 0.6))
    s = settle(LONG_SHORT, (10.0, 10.1), (20.0, 20.4), w)
    assert s.returns[LONG_SHORT] == pytest.approx(0.4 * 0.01 - 0.6 * 0.02)  # -0.008
    assert s.best == SHORT_LONG and s.realized == pytest.approx(-0.008)


def test_turnover_cost_and_ties():
    w = leg_weights("no_beta")
    # entering from flat turns over 1 unit: 10 bps -> 0.001; flipping turns over 2 -> 0.002
    s = settle(LONG_SHORT, (1.0, 1.0), (1.0, 1.0), w, cost_bps=10)
    assert s.cost == pytest.approx(0.001) and s.realized == pytest.approx(-0.001)
    flip = settle(SHORT_LONG, (1.0, 1.0), (1.0, 1.0), w, previous=signed_position(LONG_SHORT, w), cost_bps=10)
    assert flip.cost == pytest.approx(0.002)
    # no move at all: every action earns 0, FLAT is the best and all of them match it
    assert s.best == FLAT and s.matched
    assert best_action({LONG_SHORT: 0.0, SHORT_LONG: 0.0, FLAT: 0.0}) == FLAT


def test_missing_prices_earn_nothing_and_are_flagged():
    s = settle(LONG_SHORT, (100.0, math.nan), (50.0, 51.0), leg_weights("no_beta"))
    assert s.missing and s.realized == 0.0


def test_bad_values_are_named():
    with pytest.raises(ConfigError, match="exposure='half'"):
        leg_weights("half")
    with pytest.raises(ConfigError, match="beta=nan"):
        leg_weights("beta", math.nan)
    with pytest.raises(ConfigError, match="action='BUY'"):
        settle("BUY", (1.0, 1.0), (1.0, 1.0), leg_weights("no_beta"))


def test_causal_betas_ignore_the_future():
    rng = np.random.default_rng(0)
    b = np.cumsum(rng.normal(0, 0.01, 200))
    a = 1.3 * b + rng.normal(0, 0.002, 200)
    full = causal_betas(a, b, 20)
    cut = causal_betas(a[:120], b[:120], 20)
    np.testing.assert_array_equal(full[:120], cut)
    assert np.isnan(full[18]) and np.isfinite(full[19])
    assert full[-1] == pytest.approx(1.3, abs=0.1)
