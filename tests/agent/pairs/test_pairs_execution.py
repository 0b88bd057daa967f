"""Execution settings (agent.pairs.market.execution): the papers' protocol is the old settlement to
the bit; next-open fills, costs, slippage and borrow against hand computations; a missing open is
an error naming the setting; the baselines' ledgers under both exposures re-settle from their tape."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agent.pairs.baselines.common import PairSeries, pair_betas, tradable
from agent.pairs.baselines.eg_z import EGZConfig, egz_actions
from agent.pairs.baselines.ledger import settle_actions
from agent.pairs.market.execution import (
    FRICTIONS,
    PAPER,
    Book,
    ExecutionSettings,
    resettle,
    settle_transition,
)
from agent.pairs.market.settlement import (
    ACTIONS,
    FLAT,
    LONG_SHORT,
    SHORT_LONG,
    LegWeights,
    leg_weights,
    settle,
    signed_position,
)
from agent.pairs.market.tape import Decision, PriceTape, Quote
from localfin.errors import ConfigError, InputError

W = leg_weights("no_beta")


def test_settings_validate_and_name_the_key():
    with pytest.raises(ConfigError, match=r"experiment.execution='open'; allowed: close, next_open"):
        ExecutionSettings("open")
    with pytest.raises(ConfigError, match=r"experiment.slippage_bps=-1.0; allowed: 0..1000"):
        ExecutionSettings(slippage_bps=-1.0)
    with pytest.raises(ConfigError, match=r"experiment.borrow_bps_per_year=nan"):
        ExecutionSettings(borrow_bps_per_year=math.nan)
    assert PAPER.label() == "close, no costs"
    assert FRICTIONS.label() == "next open, 5 bps cost, 5 bps slippage, 50 bps/yr borrow"
    assert ExecutionSettings.from_dict(FRICTIONS.to_dict()) == FRICTIONS


def _random_path(rng, n):
    a = 50 * np.exp(np.cumsum(rng.normal(0, 0.02, n)))
    b = 30 * np.exp(np.cumsum(rng.normal(0, 0.02, n)))
    a[rng.integers(0, n, 3)] = np.nan  # a few halts
    return a, b


@pytest.mark.parametrize("cost", [0.0, 7.5])
def test_the_papers_close_is_the_old_settlement_to_the_bit(cost):
    rng = np.random.default_rng(3)
    a, b = _random_path(rng, 80)
    actions = [ACTIONS[k] for k in rng.integers(0, 3, 79)]
    betas = rng.uniform(0.3, 1.8, 80)
    nan = math.nan

    def quote(t, i):
        p = a if t == "A" else b
        return Quote(float(p[i]), nan, float(p[i + 1]))

    book = Book(ExecutionSettings(cost_bps=cost), quote)
    prev = (0.0, 0.0)
    for i, act in enumerate(actions):
        w = leg_weights("beta", float(betas[i])) if i % 2 else W
        old = settle(act, (a[i], a[i + 1]), (b[i], b[i + 1]), w, previous=prev, cost_bps=cost)
        new = book.settle(i, ("A", "B"), act, w)
        prev = signed_position(act, w)
        assert dict(new.returns) == dict(old.returns)
        assert (new.best, new.matched, new.missing) == (old.best, old.matched, old.missing)
        if cost == 0:
            assert new.realized == old.realized  # bit-identical
        else:
            assert new.realized == pytest.approx(old.realized, abs=1e-17)
        assert new.position == prev


def _q(c0, o1, c1):
    return Quote(c0, o1, c1)


def test_next_open_fills_at_the_open_and_carries_the_overnight_move():
    s = ExecutionSettings("next_open")
    # decided at close t (A 100, B 50), filled at open t+1 (A 101, B 49), settled at close t+1
    f1 = settle_transition(LONG_SHORT, W, (_q(100, 101, 103), _q(50, 49, 49.5)), (0.0, 0.0), None, True, s)
    intraday = 0.5 * (103 / 101 - 1) - 0.5 * (49.5 / 49 - 1)
    assert f1.realized == pytest.approx(intraday, abs=1e-15)  # nothing held overnight before
    # exit to FLAT decided at close t+1: the position rides the night to the next open
    f2 = settle_transition(
        FLAT,
        W,
        (_q(103, 104, 90), _q(49.5, 50, 80)),
        f1.position,
        (_q(103, 104, 90), _q(49.5, 50, 80)),
        True,
        s,
    )
    overnight = 0.5 * (104 / 103 - 1) - 0.5 * (50 / 49.5 - 1)
    assert f2.realized == pytest.approx(overnight, abs=1e-15)  # the close of t+2 does not matter
    assert f2.returns[LONG_SHORT] == pytest.approx(
        (1 + overnight) * (1 + 0.5 * (90 / 104 - 1) - 0.5 * (80 / 50 - 1)) - 1
    )
    assert f2.position == (0.0, 0.0) and f2.turnover == 1.0


def test_costs_slippage_and_borrow_by_turnover_and_session():
    s = ExecutionSettings("close", cost_bps=10.0, slippage_bps=4.0, borrow_bps_per_year=252.0)
    legs = (_q(10, 10, 10), _q(10, 10, 10))  # flat prices: only costs move the equity
    enter = settle_transition(LONG_SHORT, W, legs, (0.0, 0.0), None, True, s)
    assert enter.turnover == 1.0
    assert enter.fees == pytest.approx(10e-4) and enter.slippage == pytest.approx(4e-4)
    assert enter.borrow == pytest.approx(252e-4 / 252 * 0.5)  # one session on the short half
    hold = settle_transition(LONG_SHORT, W, legs, enter.position, legs, True, s)
    assert hold.turnover == 0.0 and hold.fees == 0.0 and hold.borrow == pytest.approx(enter.borrow)
    flip = settle_transition(SHORT_LONG, W, legs, hold.position, legs, True, s)
    assert flip.turnover == 2.0 and flip.fees == pytest.approx(20e-4)
    switch = settle_transition(LONG_SHORT, W, legs, flip.position, legs, False, s)  # another pair
    assert switch.turnover == 2.0  # close the old legs (1), open the new ones (1)
    out = settle_transition(FLAT, W, legs, switch.position, legs, True, s)
    assert out.borrow == 0.0 and out.realized == pytest.approx(-14e-4)
    # a negative beta makes B a second long leg: nothing to borrow
    neg = settle_transition(LONG_SHORT, LegWeights(0.6, -0.4), legs, (0.0, 0.0), None, True, s)
    assert neg.borrow == 0.0


def test_a_missing_open_is_an_error_naming_the_setting():
    s = ExecutionSettings("next_open")
    with pytest.raises(InputError, match=r"execution='next_open' needs an open price.*KO/PEP"):
        settle_transition(
            LONG_SHORT, W, (_q(1, math.nan, 1), _q(1, 1, 1)), (0, 0), None, True, s, where="KO/PEP"
        )
    # a halt (no bar at all on t+1) is not an error: that part earns 0, flagged missing
    halt = settle_transition(LONG_SHORT, W, (_q(1, math.nan, math.nan), _q(1, 1, 1)), (0, 0), None, True, s)
    assert halt.missing and halt.returns[LONG_SHORT] == 0.0


def _series(n=140, first=80, seed=5):
    rng = np.random.default_rng(seed)
    common = np.cumsum(rng.normal(0, 0.01, n))
    spread = np.zeros(n)
    for t in range(1, n):
        spread[t] = 0.85 * spread[t - 1] + rng.normal(0, 0.01)
    a = 40 * np.exp(common + spread)
    b = 20 * np.exp(common)
    oa = a * np.exp(rng.normal(0, 0.004, n))
    ob = b * np.exp(rng.normal(0, 0.004, n))
    dates = np.arange(np.datetime64("2020-01-01"), np.datetime64("2020-01-01") + n).astype("datetime64[D]")
    return PairSeries("AAA", "BBB", dates, a, b, first, 1.0, 6.0, oa, ob)


@pytest.mark.parametrize("exposure", ["no_beta", "beta"])
@pytest.mark.parametrize("settings", [PAPER, FRICTIONS, ExecutionSettings(cost_bps=3.0)])
def test_a_ledger_resettles_from_its_tape_under_both_exposures(exposure, settings):
    s = _series()
    betas = pair_betas(s, 20)
    ok = tradable(s, exposure, betas)
    actions, notes = egz_actions(s, ok, EGZConfig(entry_z=1.0, exit_z=0.2, z_window=15))
    led = settle_actions(s, actions, exposure, betas=betas, execution=settings, notes=notes)
    assert sum(a != FLAT for a in actions) > 5
    again = resettle(led.decisions, led.prices, settings)
    assert [f.realized for f in again] == [r.realized for r in led.records]
    assert [f.best for f in again] == [r.best for r in led.records]
    # the paper run's decisions re-settled with frictions = the run executed with frictions
    paper = settle_actions(s, actions, exposure, betas=betas, notes=notes)
    fr = resettle(paper.decisions, paper.prices, settings)
    assert [f.realized for f in fr] == pytest.approx([r.realized for r in led.records], abs=1e-15)


def test_equal_weight_buys_at_the_next_open_and_pays_entry_costs_only():
    days = ("2020-01-02", "2020-01-03", "2020-01-06")
    closes = np.array([[10.0, 20.0], [11.0, 19.0], [12.0, 21.0]])
    opens = np.array([[9.0, 19.0], [10.5, 20.0], [11.0, 20.0]])
    tape = PriceTape(days, ("X", "Y"), closes, opens)
    rows = [
        Decision(i + 1, days[i], days[i + 1], "", "HOLD", math.nan, math.nan, basket="X,Y") for i in range(2)
    ]
    paper = resettle(rows, tape, PAPER)
    assert paper[0].realized == pytest.approx((11 / 10 + 19 / 20) / 2 - 1)
    s = ExecutionSettings("next_open", cost_bps=5.0, slippage_bps=5.0, borrow_bps_per_year=100.0)
    fr = resettle(rows, tape, s)
    v1 = (11 / 10.5 + 19 / 20) / 2  # bought at the open of step 002
    v2 = (12 / 10.5 + 21 / 20) / 2
    assert fr[0].realized == pytest.approx(v1 - 1 - 10e-4)
    assert fr[1].realized == pytest.approx(v2 / v1 - 1)  # no borrow, no further cost
    assert fr[1].cost == 0.0
