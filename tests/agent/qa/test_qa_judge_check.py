"""The judge check: a judge's verdicts on known answers (gold: should be right; perturbed:
should be wrong), journaled and replayed, on a scripted judge (unit tests only)."""

from __future__ import annotations

import json

import pytest

from agent.qa.core.items import Gold, QAItem, Question
from agent.qa.scoring.judge_check import JUDGE_CHECK_FILE, judge_check, perturb
from localfin.errors import ConfigError
from serving.chat.scripted import Rule, ScriptedBackend

GOLDS = ["Yes", "12.5%", "The closing price increased", "Apple Inc.", "No, it fell", "1,234 million USD"]


def _items() -> list[QAItem]:
    return [
        QAItem(Question(f"t-{i}", "fintmmbench", f"Question {i}?"), Gold(g, "free"))
        for i, g in enumerate(GOLDS)
    ]


def _judge(rule) -> ScriptedBackend:
    def reply(req) -> str:
        user = req.messages[-1].content
        ref = user.split("Reference answer: ")[1].split("\n")[0]
        cand = user.split("Candidate answer: ")[1].split("\n")[0]
        return json.dumps({"verdict": "correct" if rule(ref, cand) else "incorrect", "reason": "r"})

    return ScriptedBackend([Rule("judge", reply)])


def test_every_perturbation_rule_makes_a_different_answer():
    assert perturb("Yes") == ("yes_no", "No")
    assert perturb("no, it fell") == ("yes_no", "yes, it fell")
    assert perturb("12.5%") == ("number", "18.8%")
    assert perturb("1,234 million USD") == ("number", "1,851 million USD")
    assert perturb("0") == ("number", "1")
    assert perturb("The price increased") == ("direction", "The price decreased")
    assert perturb("Apple Inc.", ["apple inc.", "Microsoft"]) == ("swapped", "Microsoft")
    assert perturb("Apple Inc.", ["Apple Inc."]) is None


def test_a_faithful_judge_scores_full_marks_and_a_lenient_one_is_caught(tmp_path):
    items = _items()
    good = judge_check(items, _judge(lambda ref, cand: ref == cand), "judge-m", tmp_path / "good")
    assert (good.n, good.gold_right, good.wrong_n, good.wrong_caught) == (6, 6, 6, 6)
    assert good.gold_right_rate == good.wrong_caught_rate == 1.0
    assert good.perturbations == {"yes_no": 2, "number": 2, "direction": 1, "swapped": 1}
    lenient = judge_check(items, _judge(lambda ref, cand: True), "judge-m", tmp_path / "lenient")
    assert lenient.gold_right_rate == 1.0 and lenient.wrong_caught_rate == 0.0
    strict = judge_check(items, _judge(lambda ref, cand: False), "judge-m", tmp_path / "strict")
    assert strict.gold_right_rate == 0.0 and strict.wrong_caught_rate == 1.0
    doc = json.loads((tmp_path / "good" / JUDGE_CHECK_FILE).read_text(encoding="utf-8"))
    assert len(doc["verdicts"]) == 12 and doc["gold_right_rate"] == 1.0
    assert {v["kind"] for v in doc["verdicts"]} == {"gold", "yes_no", "number", "direction", "swapped"}


def test_a_rerun_replays_the_journal_and_an_unusable_reply_counts_as_incorrect(tmp_path):
    items = _items()[:2]
    first = judge_check(items, _judge(lambda ref, cand: ref == cand), "judge-m", tmp_path)
    again = judge_check(items, ScriptedBackend([Rule("judge", "not json")]), "judge-m", tmp_path)
    assert (again.model_calls, again.replayed) == (0, first.model_calls)
    assert again.gold_right_rate == 1.0
    broken = judge_check(items, ScriptedBackend([Rule("judge", "not json")]), "judge-m", tmp_path / "b")
    assert broken.unusable == 4 and broken.gold_right == 0 and broken.wrong_caught == 2
    with pytest.raises(ConfigError, match="at least one item"):
        judge_check([], ScriptedBackend([]), "judge-m", tmp_path / "c")
