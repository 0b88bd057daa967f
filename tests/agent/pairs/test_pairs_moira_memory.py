"""Counterfactual records, their code-written lessons, the reflection's diagnostic counts and the
pair-quality memory, by hand."""

from __future__ import annotations

from agent.pairs.market.settlement import FLAT, LONG_SHORT, SHORT_LONG, best_action
from agent.pairs.moira.memory import CounterfactualRecord, PairMemory, lesson_for, reflection_summary


def _rets(ls: float) -> dict[str, float]:
    return {LONG_SHORT: ls, SHORT_LONG: -ls, FLAT: 0.0}


def test_lessons_of_all_outcomes():
    assert lesson_for(LONG_SHORT, _rets(0.004), LONG_SHORT, True) == "right: best action"
    assert lesson_for(FLAT, _rets(0.0), FLAT, True) == "right: no side earned"
    assert lesson_for(FLAT, _rets(-0.0052), SHORT_LONG, False) == "missed: SHORT_LONG earned +0.52%"
    assert lesson_for(LONG_SHORT, _rets(-0.003), SHORT_LONG, False) == "wrong side: SHORT_LONG earned +0.30%"
    assert best_action(_rets(0.0)) == FLAT


def _rec(step, action, ls, z, rel):
    best = best_action(_rets(ls))
    matched = _rets(ls)[action] >= _rets(ls)[best]
    return CounterfactualRecord(step, "A/B", action, ls, -ls, best, matched, z, rel, "")


def test_reflection_summary_counts():
    recs = [
        _rec(1, LONG_SHORT, 0.01, -1.2, -0.004),  # right; A cheap (z < 0) fell further: against reversion
        _rec(2, LONG_SHORT, -0.01, -1.0, 0.002),  # wrong side; A cheap rose: with reversion
        _rec(3, FLAT, 0.005, 0.5, 0.003),  # missed; A rich (z > 0) rose further: against reversion
        _rec(4, SHORT_LONG, -0.002, 1.5, -0.001),  # right; A rich fell: with reversion
    ]
    s = reflection_summary(recs)
    assert s == {
        "decisions": 4,
        "matched_best": 2,
        "flat_chosen": 1,
        "flat_missed_profit": 1,
        "wrong_side": 1,
        "best_long_short": 2,
        "best_short_long": 2,
        "best_flat": 0,
        "delta_against_reversion": 2,
    }
    assert [r.realized for r in recs] == [0.01, -0.01, 0.0, 0.002]


def test_pair_quality_memory():
    m = PairMemory()
    for reverted in (True, True, False, True):
        m.observe("A/B", reverted)
    m.observe("C/D", False)
    copy = m.copy()
    m.mark_break("A/B")
    assert copy.lines() == [
        "A/B: reverting (held 4 steps, spread moved toward its mean on 3)",
        "C/D: new (held 1 steps, spread moved toward its mean on 0)",
    ]
    assert (
        m.lines()[0]
        == "A/B: broken (held 4 steps, spread moved toward its mean on 3, ended in a lifecycle BREAK)"
    )
    assert len(m) == 2
