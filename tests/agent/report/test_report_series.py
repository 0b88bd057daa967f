"""The data behind the report's figures, against hand computations: equity and drawdown points,
the seeds' band, rolling accuracy, cumulative switches, the pair-selection matrix, action
counts, training cycles, the DDQN curve and the break-score evolution read from a trace."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import report_support as rs

from agent.pairs.market.metrics import pair_switches
from agent.report.load import load_run
from agent.report.series import (
    action_counts,
    break_scores,
    cumulative_switches,
    ddqn_curve,
    drawdown_points,
    equity_points,
    lifecycle_thresholds,
    moira_cycles,
    pair_share_matrix,
    rolling_accuracy,
    seed_band,
)


def test_equity_and_drawdown_points_start_at_one_and_zero() -> None:
    eq = equity_points([0.1, -0.2, 0.05])
    np.testing.assert_allclose(eq, [1.0, 1.1, 0.88, 0.924])
    np.testing.assert_allclose(
        drawdown_points([0.1, -0.2, 0.05]), [0.0, 0.0, 0.88 / 1.1 - 1, 0.924 / 1.1 - 1]
    )
    np.testing.assert_allclose(drawdown_points([-0.1]), [0.0, -0.1])  # the start is a peak


def test_seed_band_is_pointwise_min_max_and_needs_two_equal_curves() -> None:
    lo, hi = seed_band([np.array([1.0, 2.0, 0.5]), np.array([1.0, 1.0, 3.0])])
    np.testing.assert_array_equal(lo, [1.0, 1.0, 0.5])
    np.testing.assert_array_equal(hi, [1.0, 2.0, 3.0])
    assert seed_band([np.ones(3)]) is None
    assert seed_band([np.ones(3), np.ones(4)]) is None


def test_rolling_accuracy_over_a_trailing_window() -> None:
    m = [True, False, True, True, False]
    np.testing.assert_allclose(rolling_accuracy(m, 3), [1.0, 0.5, 2 / 3, 2 / 3, 2 / 3])
    np.testing.assert_allclose(rolling_accuracy(m, 1), [1, 0, 1, 1, 0])
    with pytest.raises(ValueError):
        rolling_accuracy(m, 0)


def test_cumulative_switches_end_at_the_runs_pair_switches() -> None:
    pairs = ["A/B", "A/B", None, "C/D", "C/D", None, None, "C/D", "A/B"]
    sw = cumulative_switches(pairs)
    np.testing.assert_array_equal(sw, [0, 0, 0, 1, 1, 1, 1, 1, 2])
    assert sw[-1] == pair_switches(pairs)
    assert cumulative_switches([]).size == 0


def test_pair_share_matrix_by_hand() -> None:
    pairs, cols, mat = pair_share_matrix(
        [("m s0", ["A/B", "A/B", "C/D", None]), ("ls", ["A/B", "A/B", "A/B", "A/B"])]
    )
    assert pairs == ["A/B", "C/D"] and cols == ["m s0", "ls"]
    np.testing.assert_allclose(mat, [[0.5, 1.0], [0.25, 0.0]])


def test_action_counts_and_pool_rows() -> None:
    assert action_counts(["FLAT", "LONG_SHORT", "FLAT"]) == {"LONG_SHORT": 1, "SHORT_LONG": 0, "FLAT": 2}
    assert action_counts(["HOLD", "HOLD"]) is None


def test_moira_cycles_count_accepted_rejected_and_no_replay() -> None:
    cv = moira_cycles(rs.moira_training([0.02, 0.01, 0.03, None, 0.0], [True, False, True, False, False]))
    assert cv is not None
    assert cv.cycles == (0, 1, 2, 3, 4)
    assert (cv.n_accepted, cv.n_rejected, cv.n_no_replay) == (1, 2, 1)  # the warmup is not an update
    assert math.isnan(cv.returns[3]) and cv.best_after[-1] == 0.03
    assert moira_cycles({"cycles": []}) is None and moira_cycles(None) is None


def test_ddqn_curve_reads_the_episodes() -> None:
    cur = ddqn_curve({"episodes": [{"episode": 1, "return": -0.1, "greedy_return": 0.0, "loss": None}]})
    assert cur is not None
    assert cur["episode"].tolist() == [1.0] and cur["return"].tolist() == [-0.1]
    assert math.isnan(cur["loss"][0])
    assert ddqn_curve({"cycles": []}) is None


def test_break_scores_from_the_trace(tmp_path: Path) -> None:
    rs.experiment(tmp_path, exposures=("no_beta",))
    run = load_run(tmp_path / "runs" / "full-no_beta-s0", tmp_path)
    v = break_scores(run.trace)
    assert v is not None
    assert v.steps == (1, 2, 3, 4, 5, 6)
    assert v.scores == (0.0, 0.34, 1.0, 0.0, 0.67, 0.0)
    assert v.levels[2] == "BREAK" and v.levels[4] == "WARNING"
    assert v.pairs == rs.PAIRS_MOIRA
    assert v.boundaries == ((2, True), (4, False))
    assert v.replacements == ((4, "AAA/BBB", "CCC/DDD"),)
    assert break_scores(run.trace, phase="train") is None  # no lifecycle rows in training
    assert break_scores(None) is None


def test_lifecycle_thresholds_from_the_manifest_or_the_spec_defaults() -> None:
    assert lifecycle_thresholds({"config": {"lifecycle": {"warning_factors": 1, "break_factors": 4}}}) == (
        0.25,
        1.0,
    )
    assert lifecycle_thresholds(None) == (pytest.approx(2 / 3), 1.0)
    assert lifecycle_thresholds({"config": {"lifecycle": {"break_factors": 0}}}) == (
        pytest.approx(2 / 3),
        1.0,
    )


def test_every_figure_along_the_test_window_has_one_axis_of_test_steps(tmp_path: Path, monkeypatch) -> None:
    """Six decisions over seven sessions: the equity at the close of steps 1..7 (1 before any
    settlement), the pair held and the rolling accuracy at steps 1..6, the lifecycle checks at
    steps 2..7 (the trace's numbers); every figure spans 0.5 .. 7.5 under the same label."""
    from agent.report import figures as fg
    from agent.report import series as sr
    from agent.report.series import BreakView

    drawn: list = []
    real_save = fg._save

    def keep(fig, path):
        drawn.append(fig)
        return real_save(fig, path)

    monkeypatch.setattr(fg, "_save", keep)
    r = [0.01, -0.02, 0.0, 0.01, 0.0, 0.005]
    fg.plot_equity(
        [fg.Curve("Moira", sr.equity_points(r), sr.drawdown_points(r), agent=True)], tmp_path / "e.png"
    )
    pairs = ["A/B"] * 3 + ["C/D"] * 3
    fg.plot_pair_timeline([("Moira", pairs, sr.cumulative_switches(pairs))], tmp_path / "p.png")
    fg.plot_rolling_accuracy(
        [("Moira", sr.rolling_accuracy([True, False] * 3, 3), 0.5)], 3, tmp_path / "a.png"
    )
    view = BreakView(
        (2, 3, 4, 5, 6, 7), (0.0, 0.3, 1.0, 1.0, 0.3, 0.0), ("HEALTHY",) * 6, ("A/B",) * 6, (), ()
    )
    fg.plot_break_scores([("Moira", view)], (2 / 3, 1.0), tmp_path / "b.png")
    assert len(drawn) == 4
    for fig in drawn:
        labelled = [a for a in fig.axes if a.get_xlabel()]
        assert labelled and labelled[-1].get_xlabel().startswith(fg.STEP_LABEL)
        assert tuple(round(x, 2) for x in labelled[-1].get_xlim()) == (0.5, 7.5), labelled[-1].get_xlim()
    equity_x = drawn[0].axes[0].lines[0].get_xdata()
    assert list(equity_x) == list(range(1, 8))  # the start at step 1, then after each settlement
