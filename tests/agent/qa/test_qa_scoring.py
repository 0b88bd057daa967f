"""Golden tests of every scorer on hand-made items, with near misses on each side of each
tolerance."""

from __future__ import annotations

import pytest

from agent.qa.core.items import Gold, QAItem, Question
from agent.qa.scoring.scoring import (
    ItemScore,
    choice_letters,
    finmme_avg,
    gold_as_prediction,
    judge_requests,
    judge_scores,
    score_answer,
)
from localfin.errors import ConfigError
from serving.chat.types import ChatResult, Usage


def _ok(dataset: str, gold: Gold, pred: str) -> bool:
    return score_answer(dataset, gold, pred).correct


# --- BizBench SEC-NUM: 1% relative ------------------------------------------------------------
BIZ = Gold("1,234", "number")


@pytest.mark.parametrize(
    ("pred", "correct"),
    [
        ("1,234", True),
        ("$1,234", True),
        ("1234.0", True),
        ("1,246.3", True),  # +0.997%: inside
        ("1,221.7", True),  # -0.997%: inside
        ("1,246.4", False),  # +1.005%: outside
        ("1,221.6", False),  # -1.005%: outside
        ("1234 million", True),  # value as written matches
        ("0.1234", False),
        ("1,234 and 1,300", False),  # two numbers: not guessed
        ("n/a", False),
        ("", False),
    ],
)
def test_bizbench_one_percent(pred, correct):
    assert _ok("bizbench", BIZ, pred) is correct


def test_bizbench_scale_words_and_signs():
    # the magnitude word is ignored, never applied: a rescaled answer does not pass either way
    assert not _ok("bizbench", Gold("4,500,000"), "$4.5 million")
    assert not _ok("bizbench", Gold("4,500,000"), "4.5m")
    assert _ok("bizbench", Gold("4,500"), "4,500 thousand")
    assert not _ok("bizbench", Gold("45.25"), "0.04525 thousand")
    assert _ok("bizbench", Gold("(12.3)"), "-12.3")
    assert not _ok("bizbench", Gold("(12.3)"), "12.3")
    assert _ok("bizbench", Gold("12.3%"), "12.3")  # percent signs are ignored
    assert not _ok("bizbench", Gold("12.3%"), "0.123")
    assert _ok("bizbench", Gold("0"), "0.0")
    assert not _ok("bizbench", Gold("0"), "0.001")


# --- FinMMR: the authors' get_acc (0.2% relative; its equality on 3,000 rows is in
# test_qa_finmmr_official.py) ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("gold", "pred", "correct"),
    [
        (99.0, "98.802", True),  # exactly -0.2%: inclusive
        (99.0, "99.198", True),
        (99.0, "98.80", False),  # -0.202%
        (99.0, "99.2", False),
        (-10, "-10%", True),
        (-10, "-10.02", True),  # 0.2%
        (-10, "-10.03", False),
        (2.776, "2.781", True),  # +0.18%
        (2.776, "2.7825", False),  # +0.23%
        (1779.0, "1,779 million", True),  # magnitude word ignored, as the benchmark does
        (1779.0, "$1,779", True),
        (-16458.0, "(16,458)", False),  # official quirk: Python's tuple (16, 458), read as 16
        (-16458.0, "-16458", True),
        (-16458.0, "-16,458", False),  # the same tuple quirk: (-16, 458)
        (45.25, "0.04525 thousand", False),  # the magnitude word is ignored, never applied
        (10.144329896907216, "10.14", True),
        (10.144329896907216, "10.12", False),
    ],
)
def test_finmmr_point_two_percent(gold, pred, correct):
    assert _ok("finmmr", Gold(gold), pred) is correct


def test_finmmr_yes_no_gold():
    assert _ok("finmmr", Gold(True), "Yes")
    assert not _ok("finmmr", Gold(True), "no")
    assert not _ok("finmmr", Gold(False), "maybe")


# --- TAT-QA: EM and F1 as the official evaluator on (answer, scale) (values checked against it;
# the 9,190-row equality under both mappings is in test_qa_tatqa_official.py) ------------------
SPAN_MILLION = Gold(["$1,496.5"], "span", "million")
ARITH_MILLION = Gold(-12.6, "number", "million")
ARITH_PCT = Gold(-22.22, "number", "percent")
MULTI = Gold(["fixed-price type", "cost-plus type", "time-and-material type"], "multi-span")


@pytest.mark.parametrize(
    ("gold", "pred", "em", "f1"),
    [
        (SPAN_MILLION, "$1,496.5 million", 1, 1.0),
        (SPAN_MILLION, "1496.5 million", 1, 1.0),
        (SPAN_MILLION, "1,496.5", 0, 0.0),  # scale missing: 1496.5 against 1,496,500,000
        (SPAN_MILLION, "1,496.5 thousand", 0, 0.0),  # the scale word multiplies the value
        (SPAN_MILLION, "1,202.9 million", 0, 0.0),  # number gate: the gold number is absent
        (ARITH_MILLION, "-12.6 million", 1, 1.0),
        # split to (-12.604, million): the official pair rounds to 2 decimals, then scales
        (ARITH_MILLION, "-12.604 million", 1, 1.0),
        (ARITH_MILLION, "(12.6) million", 1, 1.0),  # an accounting negative keeps its scale as a pair
        (ARITH_MILLION, "-12.64 million", 0, 0.0),
        (ARITH_MILLION, "-12.6", 0, 0.0),  # arithmetic: F1 = EM, scale required
        (ARITH_PCT, "-22.22%", 1, 1.0),
        (ARITH_PCT, "-22.22 percent", 1, 1.0),
        (ARITH_PCT, "-0.2222", 1, 1.0),  # a percent written as a fraction
        (Gold("4", "count"), "4", 1, 1.0),
        (Gold("4", "count"), "5", 0, 0.0),
        (Gold(["2019"], "span"), "2019", 1, 1.0),
        (Gold(["2019"], "span"), "2018", 0, 0.0),
        (Gold(["the fixed-price contracts"], "span"), "Fixed-price contracts.", 1, 1.0),
        (MULTI, '["cost-plus type", "fixed-price type", "time-and-material type"]', 1, 1.0),
        (MULTI, "fixed-price type; cost-plus type", 0, 0.86),  # one bag of words, F1 to 2 places
        (MULTI, "fixed-price type\ncost-plus type\ntime and material type", 0, 0.6),
    ],
)
def test_tatqa_em_and_f1(gold, pred, em, f1):
    s = score_answer("tatqa", gold, pred)
    assert s.correct is bool(em)
    assert s.score == pytest.approx(f1, abs=1e-9)


# --- FinMME: letter sets and absolute tolerance --------------------------------------------------
def test_finmme_choice_letter_sets():
    gold = Gold("AC", "choice", extra={"dimensions": ("fg", "multi")})
    assert _ok("finmme", gold, "A, C")
    assert _ok("finmme", gold, "Answer: C,A")
    assert _ok("finmme", gold, "(A) and (C)")
    assert not _ok("finmme", gold, "A")
    assert not _ok("finmme", gold, "A, B, C")
    assert choice_letters("The answer is B because revenue fell.") == {"B"}


def test_finmme_numerical_absolute_tolerance():
    gold = Gold(12.5, "number", extra={"tolerance": 0.1, "dimensions": ("fg", "cal")})
    assert _ok("finmme", gold, "12.6")  # on the tolerance: inclusive
    assert _ok("finmme", gold, "12.4%")
    assert not _ok("finmme", gold, "12.61")
    assert not _ok("finmme", Gold(12.5, "number", extra={"tolerance": 0.0}), "12.51")


def test_finmme_avg_is_the_mean_of_six_dimensions():
    golds = [
        Gold("A", "choice", extra={"dimensions": ("fg", "single")}),
        Gold("AB", "choice", extra={"dimensions": ("reason", "multi")}),
        Gold(1.0, "number", extra={"dimensions": ("compre", "cal")}),
        Gold(2.0, "number", extra={"dimensions": ("fg", "cal")}),
    ]
    scores = [
        ItemScore(True, 1.0, ""),
        ItemScore(False, 0.0, ""),
        ItemScore(True, 1.0, ""),
        ItemScore(False, 0.0, ""),
    ]
    out = finmme_avg(golds, scores)
    assert out.accuracy == {"compre": 1.0, "fg": 0.5, "reason": 0.0, "single": 1.0, "multi": 0.0, "cal": 0.5}
    assert out.avg == pytest.approx(3.0 / 6)
    assert out.missing == ()
    partial = finmme_avg(golds[:1], scores[:1])
    assert partial.missing == ("compre", "reason", "multi", "cal")
    with pytest.raises(ConfigError, match="dimensions"):
        finmme_avg([Gold("A", "choice")], [ItemScore(True, 1.0, "")])


# --- demo: half a unit of the asked decimals --------------------------------------------------
def test_demo_abs_tolerance_and_counts():
    gold = Gold(21.44, "number", extra={"abs_tol": 0.005})
    assert _ok("demo", gold, "21.44%")
    assert _ok("demo", gold, "21.4449")
    assert not _ok("demo", gold, "21.446")
    count = Gold(7, "count", extra={"abs_tol": 0.5})
    assert _ok("demo", count, "7")
    assert not _ok("demo", count, "8")
    assert not _ok("demo", count, "7 million")


# --- gold written as a prediction scores 100% ---------------------------------------------------
@pytest.mark.parametrize(
    ("dataset", "gold"),
    [
        ("tatqa", SPAN_MILLION),
        ("tatqa", ARITH_MILLION),
        ("tatqa", ARITH_PCT),
        ("tatqa", MULTI),
        ("tatqa", Gold(["12.5%"], "span", "percent")),
        ("finmmr", Gold(-10)),
        ("bizbench", BIZ),
        ("finmme", Gold("BD", "choice")),
    ],
)
def test_gold_as_prediction_is_correct(dataset, gold):
    s = score_answer(dataset, gold, gold_as_prediction(dataset, gold))
    assert s.correct and s.score == 1.0


def test_score_answer_rejects_unknown_dataset_and_judge_benchmark():
    with pytest.raises(ConfigError, match="allowed"):
        score_answer("mmlu", BIZ, "1")
    with pytest.raises(ConfigError, match="judge_requests"):
        score_answer("fintmmbench", Gold("Apple", "free"), "Apple")
    with pytest.raises(ConfigError, match="string"):
        score_answer("bizbench", BIZ, 1234)  # type: ignore[arg-type]


# --- FinTMMBench: judge requests and verdicts -------------------------------------------------
def _item(answer: str) -> QAItem:
    return QAItem(
        Question("q1", "fintmmbench", "Which company had the higher close on 2022-03-04?"),
        Gold(answer, "free"),
    )


def _result(parsed: object, *, finish: str = "stop", error: str | None = None) -> ChatResult:
    return ChatResult(
        text="{}",
        reasoning=None,
        parsed=parsed,
        parse_error=error,
        finish_reason=finish,
        usage=Usage(10, 5),
        latency_s=0.1,
        backend="scripted",
        model="judge",
        revision="",
        call_type="judge",
        request_key="k",
    )


def test_judge_requests_are_bounded_schema_calls():
    reqs = judge_requests([_item("Apple Inc."), _item("Adobe")], ["Apple", "Netflix"], "tiny-qwen3")
    assert len(reqs) == 2
    r = reqs[0]
    assert r.call_type == "judge" and r.temperature == 0.0 and r.model == "tiny-qwen3"
    schema = r.json_schema
    assert schema["additionalProperties"] is False
    assert schema["properties"]["verdict"]["enum"] == ["correct", "incorrect"]
    assert schema["properties"]["reason"]["maxLength"] <= 200
    user = r.messages[-1].content
    assert "Apple Inc." in user and "Apple" in user
    with pytest.raises(ConfigError, match="same length"):
        judge_requests([_item("x")], [], "m")


def test_judge_scores_read_verdicts_and_count_bad_replies_wrong():
    scores = judge_scores(
        [
            _result({"verdict": "correct", "reason": "same company"}),
            _result({"verdict": "incorrect", "reason": "different company"}),
            _result(None, error="reply is not JSON"),
            _result({"verdict": "correct", "reason": "cut"}, finish="length"),
        ]
    )
    assert [s.correct for s in scores] == [True, False, False, False]
    assert "unusable" in scores[2].detail and "unusable" in scores[3].detail
