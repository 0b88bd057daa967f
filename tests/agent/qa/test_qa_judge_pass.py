"""The judge pass of a FinTMMBench evaluation: verdicts become the score, an unusable judge reply
counts incorrect with its reason, a rerun replays both journals with zero model calls, and the
judge's journal (the only place the gold answer goes) is separate from the solver's."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing

import pytest

from agent.qa.core.items import Gold, QAItem, Question
from agent.qa.evaluation.evaluate import EvalConfig, evaluate
from agent.qa.scoring.judge_pass import JUDGE_JOURNAL, JUDGE_SCORES, deferred_scorer, judge_run
from agent.qa.solver.react import SolverConfig
from localfin.errors import InputError
from serving.chat.scripted import Rule, ScriptedBackend

# gold strings that occur nowhere but in the gold (so a leak into a solver prompt is visible)
_GOLDS = {"t-0": "Zyqorp Holdings 7713", "t-1": "Wexalin Corp 4409", "t-2": "Quorvane Ltd 5581"}
_SOLVER_SAYS = {"t-0": "ZYQ-A", "t-1": "WEX-B", "t-2": "QUO-C"}


def _items() -> list[QAItem]:
    return [
        QAItem(Question(i, "fintmmbench", f"Which company closed higher in case {i}?"), Gold(g, "free"))
        for i, g in _GOLDS.items()
    ]


def _solver() -> ScriptedBackend:
    def reply(req) -> str:
        q = next(m.content for m in req.messages if m.role == "user")
        iid = next(i for i in _SOLVER_SAYS if f"case {i}?" in q)
        return f"I read it.\nAnswer: {_SOLVER_SAYS[iid]}"

    return ScriptedBackend([Rule("qa_base", reply)])


def _judge() -> ScriptedBackend:
    def reply(req) -> str:
        user = req.messages[-1].content
        if "Candidate answer: ZYQ-A" in user:
            return json.dumps({"verdict": "correct", "reason": "same company"})
        if "Candidate answer: WEX-B" in user:
            return json.dumps({"verdict": "incorrect", "reason": "another company"})
        return "I think it is probably fine"  # not JSON: unusable

    return ScriptedBackend([Rule("judge", reply)])


def _run(tmp_path, solver, judge):
    items = _items()
    run = tmp_path / "run"
    s = evaluate(items, solver, run, EvalConfig("base", SolverConfig(model="m")), scorer=deferred_scorer())
    return s, judge_run(run, items, judge, "judge-m"), run


def _call_types(path) -> set[str]:
    with closing(sqlite3.connect(path)) as db:
        return {r[0] for r in db.execute("SELECT call_type FROM calls")}


def test_judge_pass_scores_by_verdict_and_counts_an_unusable_reply_incorrect(tmp_path):
    solver, judge = _solver(), _judge()
    s, js, run = _run(tmp_path, solver, judge)
    assert s.accuracy == 0.0  # the solver run leaves judged sets to the judge pass
    assert (js.n, js.correct, js.unusable, js.model_calls, js.replayed) == (3, 1, 1, 3, 0)
    assert js.accuracy == pytest.approx(1 / 3) and js.judge_model == "judge-m"
    doc = json.loads((run / JUDGE_SCORES).read_text(encoding="utf-8"))
    by_id = {r["item_id"]: r for r in doc["items"]}
    assert doc["accuracy"] == pytest.approx(1 / 3) and doc["judge_model"] == "judge-m"
    assert by_id["t-0"]["correct"] and "same company" in by_id["t-0"]["detail"]
    assert not by_id["t-1"]["correct"] and "another company" in by_id["t-1"]["detail"]
    assert not by_id["t-2"]["correct"] and "unusable" in by_id["t-2"]["detail"]
    assert by_id["t-2"]["answer"] == "QUO-C"
    assert all(r.model == "judge-m" and r.call_type == "judge" for r in judge.calls)


def test_gold_goes_to_the_judge_only_and_the_journals_are_separate(tmp_path):
    solver, judge = _solver(), _judge()
    _run(tmp_path, solver, judge)
    solver_text = " ".join(m.content for r in solver.calls for m in r.messages)
    assert solver.calls and not any(g in solver_text for g in _GOLDS.values())
    judge_text = " ".join(r.messages[-1].content for r in judge.calls)
    assert all(g in judge_text for g in _GOLDS.values())
    run = tmp_path / "run"
    assert _call_types(run / "journal.sqlite") == {"qa_base"}
    assert _call_types(run / JUDGE_JOURNAL) == {"judge"}


def test_rerun_replays_solver_and_judge_with_zero_model_calls(tmp_path):
    _, first, run = _run(tmp_path, _solver(), _judge())
    before = (run / JUDGE_SCORES).read_text(encoding="utf-8")
    solver, judge = _solver(), _judge()
    s, js, _ = _run(tmp_path, solver, judge)
    assert solver.calls == [] and judge.calls == []
    assert s.model_calls == 0 and js.model_calls == 0 and js.replayed == 3
    assert (js.correct, js.accuracy) == (first.correct, first.accuracy)
    assert json.loads(before)["items"] == json.loads((run / JUDGE_SCORES).read_text("utf-8"))["items"]


def test_judge_pass_refuses_a_run_without_the_items_answers(tmp_path):
    items = _items()
    run = tmp_path / "run"
    evaluate(items[:2], _solver(), run, EvalConfig("base", SolverConfig(model="m")), scorer=deferred_scorer())
    with pytest.raises(InputError, match="no answer for 1 item"):
        judge_run(run, items, _judge(), "judge-m")


def test_deferred_scorer_scores_other_benchmarks_as_usual():
    score = deferred_scorer()
    assert score("finmmr", Gold(12.0), "12").correct
    out = score("fintmmbench", Gold("x", "free"), "x")
    assert not out.correct and JUDGE_SCORES in out.detail
