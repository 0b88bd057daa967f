"""Backtest metrics against hand computations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agent.pairs.market.metrics import (
    compute_metrics,
    cumulative_return,
    drawdown_curve,
    lifecycle_shares,
    max_drawdown,
    pair_switches,
    sharpe,
    sharpe_se,
    sortino,
    win_rate,
)
from localfin.errors import ConfigError


def test_cumulative_return_and_drawdown_by_hand():
    r = [0.10, -0.20, 0.05]
    # equity 1.1, 0.88, 0.924; peak 1.1 -> drawdowns 0, -0.2, -0.16
    assert cumulative_return(r) == pytest.approx(1.1 * 0.8 * 1.05 - 1)
    np.testing.assert_allclose(drawdown_curve(r), [0.0, -0.2, 0.924 / 1.1 - 1])
    assert max_drawdown(r) == pytest.approx(-0.2)
    assert max_drawdown([-0.1]) == pytest.approx(-0.1)  # the start counts as a peak


def test_sharpe_and_its_standard_error_by_hand():
    r = np.array([0.01, -0.005, 0.02, 0.0])
    mean, sd = r.mean(), r.std(ddof=1)
    assert sharpe(r) == pytest.approx(math.sqrt(252) * mean / sd)
    sr = mean / sd
    assert sharpe_se(r) == pytest.approx(math.sqrt(252) * math.sqrt((1 + sr * sr / 2) / 4))
    assert math.isnan(sharpe([0.0, 0.0, 0.0]))  # always flat: undefined, not zero


def test_sortino_win_rate_and_switches():
    r = [0.02, -0.01, 0.0, 0.01]
    down = math.sqrt((0.01**2) / 4)
    assert sortino(r) == pytest.approx(math.sqrt(252) * np.mean(r) / down)
    assert win_rate(r, ["LONG_SHORT", "SHORT_LONG", "FLAT", "LONG_SHORT"]) == pytest.approx(2 / 3)
    assert pair_switches(["A/B", "A/B", None, "A/B", "C/D", None, "E/F"]) == 2


def test_compute_metrics_collects_everything():
    m = compute_metrics(
        [0.01, -0.02, 0.0],
        actions=["LONG_SHORT", "SHORT_LONG", "FLAT"],
        matched=[True, False, True],
        pairs=["A/B", "A/B", "C/D"],
    )
    assert m.n_transitions == 3 and m.action_accuracy == pytest.approx(2 / 3)
    assert m.action_counts == {"LONG_SHORT": 1, "SHORT_LONG": 1, "FLAT": 1} and m.pair_switches == 1
    assert m.to_dict()["max_drawdown"] == pytest.approx(1.01 * 0.98 / 1.01 - 1)


def test_action_accuracy_counts_only_transitions_with_a_held_pair():
    # two held transitions (one matched), two without a pair: FLAT "matches" there by construction
    m = compute_metrics(
        [0.01, 0.0, 0.0, -0.01],
        actions=["LONG_SHORT", "FLAT", "FLAT", "SHORT_LONG"],
        matched=[True, True, True, False],
        pairs=["A/B", None, "", "A/B"],
    )
    assert m.action_accuracy == pytest.approx(1 / 2)
    # a run that never held a pair has no accuracy (it printed 1.00 before)
    never = compute_metrics([0.0] * 4, actions=["FLAT"] * 4, matched=[True] * 4, pairs=[None] * 4)
    assert math.isnan(never.action_accuracy)
    # without the pairs every transition counts, as before
    assert compute_metrics([0.0, 0.0], actions=["FLAT"] * 2, matched=[True, False]).action_accuracy == 0.5
    with pytest.raises(ConfigError, match="pairs has 1 entries for 2 returns"):
        compute_metrics([0.0, 0.0], pairs=["A/B"])


def test_lifecycle_shares():
    s = lifecycle_shares(["HEALTHY", "HEALTHY", "WARNING", "BREAK", "", None, "HEALTHY", "WARNING"])
    assert s == {"HEALTHY": 3 / 8, "WARNING": 2 / 8, "BREAK": 1 / 8, "none": 2 / 8}
    assert all(math.isnan(v) for v in lifecycle_shares([]).values())
    with pytest.raises(ConfigError, match="unknown lifecycle states"):
        lifecycle_shares(["OK"])


def test_a_zero_variance_run_shows_a_sharpe_of_zero_with_its_note(tmp_path):
    from agent.pairs.experiment.summary import sharpe_cell
    from agent.pairs.market.metrics import ZERO_VARIANCE_MARK, ZERO_VARIANCE_NOTE, table_sharpe
    from agent.pairs.market.records import read_json, write_json

    flat = compute_metrics([0.0] * 10, actions=["FLAT"] * 10)
    assert math.isnan(flat.sharpe)  # the ratio itself stays undefined (0 / 0)
    assert table_sharpe(flat) == (0.0, True)
    # as metrics.json holds it (NaN written as null) and as the summary prints it
    write_json(tmp_path / "m.json", flat.to_dict())
    doc = read_json(tmp_path / "m.json")
    assert doc["sharpe"] is None and table_sharpe(doc) == (0.0, True)
    assert sharpe_cell(doc) == f"0.00{ZERO_VARIANCE_MARK}" and "undefined" in ZERO_VARIANCE_NOTE
    # constant non-zero returns are not a run without a position: undefined, n/a
    value, zero = table_sharpe(compute_metrics([0.001] * 10))
    assert math.isnan(value) and not zero and sharpe_cell(compute_metrics([0.001] * 10).to_dict()) == "n/a"
    # one transition: undefined for want of returns, not shown as zero
    assert not table_sharpe(compute_metrics([0.0]))[1]
    moving = compute_metrics([0.01, -0.005, 0.002])
    assert table_sharpe(moving) == (moving.sharpe, False)
