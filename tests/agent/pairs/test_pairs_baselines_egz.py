"""EG+Z: entries, holds, exits and a reversal on exact sessions of a hand-designed spread, the
returns by hand, the z against a plain reference, the gap rule, causality and config errors."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from agent.pairs.baselines.common import PairSeries, spread_zscores, tradable
from agent.pairs.baselines.eg_z import EGZConfig, egz_actions, egz_step
from agent.pairs.baselines.ledger import settle_actions
from localfin.errors import ConfigError

# Spread s = log A - 2 log B (hedge ratio 2). Sessions 0-5 are history; the test window is
# sessions 6-18 (13 sessions, 12 transitions). z over the trailing 6 sessions (ddof 1):
#  t:  6      7      8      9      10     11     12     13     14     15     16     17
#  z: +2.037 +0.753 -0.489 -0.702 -0.612 -0.702 -0.360 -2.041 +2.018 +0.789 -0.351 -0.434
S = [0, 0.01, 0, 0.01, 0, 0.01, 0.20, 0.12, 0.02, 0.0, 0.01, 0.0, 0.01, -0.8, 5.0, 3.0, 0.5, 0.4, 0.3]
B = 20.0 + np.arange(len(S)) % 3  # 20, 21, 22, 20, ...
A = np.exp(np.array(S)) * B**2
DATES = np.arange("2022-01-03", "2022-01-22", dtype="datetime64[D]")
CFG = EGZConfig(entry_z=2.0, exit_z=0.5, z_window=6)
EXPECTED = [
    "SHORT_LONG",  # step 1 (t=6): z >= 2, A rich
    "SHORT_LONG",  # held: 0.5 < |z| < 2
    "FLAT",  # |z| <= 0.5: exit
    "FLAT",
    "FLAT",
    "FLAT",
    "FLAT",  # |z| <= 0.5 while flat: nothing
    "LONG_SHORT",  # t=13: z <= -2, A cheap
    "SHORT_LONG",  # t=14: z >= 2 while long: reversed
    "SHORT_LONG",
    "FLAT",  # t=16: exit
    "FLAT",
]


def _series(a: np.ndarray = A, b: np.ndarray = B) -> PairSeries:
    return PairSeries(
        "AAA", "BBB", DATES, a.astype(float), b.astype(float), 6, hedge_ratio=2.0, half_life=3.0
    )


def _ret(t: int) -> float:
    """LONG_SHORT return of transition t -> t+1 under No-Beta: 0.5 r_A - 0.5 r_B."""
    return 0.5 * (A[t + 1] / A[t] - 1) - 0.5 * (B[t + 1] / B[t] - 1)


def test_z_matches_a_plain_reference() -> None:
    z = spread_zscores(_series(), 6)
    for t in range(5, len(S)):
        win = S[t - 5 : t + 1]
        assert z[t] == pytest.approx((win[-1] - statistics.mean(win)) / statistics.stdev(win), abs=1e-9)
    assert np.all(np.isnan(z[:5]))


def test_entries_and_exits_on_exact_sessions_with_returns_by_hand() -> None:
    s = _series()
    actions, notes = egz_actions(s, tradable(s, "no_beta"), CFG)
    assert actions == EXPECTED
    assert notes[0] == "z=+2.0373" and notes[7] == "z=-2.0407"
    led = settle_actions(s, actions, "no_beta")
    sign = {"LONG_SHORT": 1.0, "SHORT_LONG": -1.0, "FLAT": 0.0}
    by_hand = [sign[a] * _ret(6 + i) for i, a in enumerate(EXPECTED)]
    assert [r.realized for r in led.records] == pytest.approx(by_hand, abs=1e-15)
    assert led.metrics().cumulative_return == pytest.approx(np.prod(1 + np.array(by_hand)) - 1, abs=1e-14)
    assert led.metrics().action_counts == {"LONG_SHORT": 1, "SHORT_LONG": 4, "FLAT": 7}


def test_thresholds_are_config_fields() -> None:
    s = _series()
    # entry 2.1 is never reached on this path; exit 0.8 closes step 2 (|z| = 0.753) already
    assert egz_actions(s, tradable(s, "no_beta"), EGZConfig(2.1, 0.5, 6))[0] == ["FLAT"] * 12
    wide_exit = egz_actions(s, tradable(s, "no_beta"), EGZConfig(2.0, 0.8, 6))[0]
    assert wide_exit[:3] == ["SHORT_LONG", "FLAT", "FLAT"] and wide_exit[9:] == ["FLAT"] * 3


def test_step_rule_boundaries() -> None:
    cfg = EGZConfig()
    assert egz_step("FLAT", 2.0, cfg) == "SHORT_LONG" and egz_step("FLAT", -2.0, cfg) == "LONG_SHORT"
    assert egz_step("FLAT", 1.99, cfg) == "FLAT"
    assert egz_step("LONG_SHORT", -0.5, cfg) == "FLAT" and egz_step("LONG_SHORT", -0.51, cfg) == "LONG_SHORT"
    assert egz_step("SHORT_LONG", 0.5, cfg) == "FLAT" and egz_step("SHORT_LONG", -2.5, cfg) == "LONG_SHORT"


def test_a_gap_holds_flat_and_the_rule_resumes() -> None:
    b = B.copy()
    b[7] = np.nan  # B has no close at t=7 (step 2): no z, no position; the rule's state survives
    s = _series(b=b)
    cfg = EGZConfig(entry_z=2.0, exit_z=0.2, z_window=6)
    actions, notes = egz_actions(s, tradable(s, "no_beta"), cfg)
    # t=8: z over common sessions 2-6 and 8 is -0.02 / sqrt(0.031 / 5) = -0.254, inside the hold
    # band: the short resumes
    assert notes[2] == "z=-0.2540"
    assert actions[:3] == ["SHORT_LONG", "FLAT", "SHORT_LONG"] and notes[1] == "z=nan"
    led = settle_actions(s, actions, "no_beta", notes=notes)
    assert [r.note for r in led.records[:3]] == [
        "z=+2.0373; missing price",
        "z=nan; missing price",
        "z=-0.2540",
    ]
    assert led.records[0].realized == 0.0 and led.records[1].realized == 0.0
    assert led.records[2].realized == pytest.approx(-_ret(8), abs=1e-15)


@pytest.mark.parametrize("t_cut", [0, 3, 7, 10])
def test_changing_prices_after_t_never_changes_actions_up_to_t(t_cut: int) -> None:
    rng = np.random.default_rng(t_cut)
    s = _series()
    base, _ = egz_actions(s, tradable(s, "no_beta"), CFG)
    a, b = A.copy(), B.astype(float).copy()
    after = slice(6 + t_cut + 1, None)
    a[after] *= np.exp(rng.normal(0, 0.5, len(a[after])))
    b[after] *= np.exp(rng.normal(0, 0.5, len(b[after])))
    b[6 + t_cut + 2 :: 3] = np.nan
    s2 = _series(a, b)
    moved, _ = egz_actions(s2, tradable(s2, "no_beta"), CFG)
    assert moved[: t_cut + 1] == base[: t_cut + 1]
    assert moved != base or t_cut >= 10  # the perturbation does reach later decisions


@pytest.mark.parametrize(
    ("kwargs", "msg"),
    [
        ({"entry_z": 0.5, "exit_z": 0.5}, "entry_z=0.5; allowed: a finite number > exit_z=0.5"),
        ({"exit_z": -0.1}, "exit_z=-0.1; allowed: a finite number >= 0"),
        ({"z_window": 2}, "z_window=2; allowed: >= 3 sessions"),
        ({"entry_z": math.inf}, "entry_z=inf"),
    ],
)
def test_config_errors_name_the_field(kwargs: dict, msg: str) -> None:
    with pytest.raises(ConfigError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        EGZConfig(**kwargs)
