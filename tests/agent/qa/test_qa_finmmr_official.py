"""Our FinMMR scorer equals the authors' ``get_acc`` (addictedLL/FinMMR @ d8b12ccc) on every row of
the committed table (3,000 predictions over the released easy-validation gold, scored by the
authors' function; tests/agent/qa/data/README.md says how), and never evaluates model text."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from agent.qa.core.items import Gold
from agent.qa.scoring.finmmr_metric import finmmr_acc, finmmr_get_acc, finmmr_normalize
from agent.qa.scoring.scoring import score_answer

TABLE = Path(__file__).parent / "data" / "finmmr_official_scores.jsonl"


def _rows() -> list[dict]:
    return [json.loads(line) for line in TABLE.read_text(encoding="utf-8").splitlines()]


def test_the_table_is_large_and_has_both_verdicts():
    rows = _rows()
    assert len(rows) >= 2000 and len({r["question_id"] for r in rows}) == 300
    verdicts = Counter(r["official_get_acc"] for r in rows)
    assert verdicts[1] > 1000 and verdicts[0] > 500


def test_equal_to_get_acc_on_every_row():
    differ = [
        (r["prediction"], r["ground_truth"], r["official_get_acc"])
        for r in _rows()
        if finmmr_get_acc(r["prediction"], r["ground_truth"]) != r["official_get_acc"]
    ]
    assert differ == []


def test_score_answer_equals_the_official_evaluation_on_every_row():
    differ = [
        (r["prediction"], r["ground_truth"], r["official_cot_acc"])
        for r in _rows()
        if float(score_answer("finmmr", Gold(r["ground_truth"]), r["prediction"]).correct)
        != r["official_cot_acc"]
    ]
    assert differ == []


@pytest.mark.parametrize(
    ("pred", "gold", "acc", "why"),
    [
        ("45.25", 45.25, 1, "the gold itself"),
        ("45.34", 45.25, 1, "+0.199%: inside"),
        ("45.16", 45.25, 1, "-0.199%: inside"),
        ("45.35", 45.25, 0, "+0.22%: outside"),
        ("0.04525 thousand", 45.25, 0, "the magnitude word is ignored, never applied"),
        ("45.25 thousand", 45.25, 1, "the magnitude word is ignored"),
        ("1,779", 1779, 0, "Python reads 1,779 as the tuple (1, 779): the official quirk"),
        ("$1,779", 1779, 1, "not Python: cleaned, thousands separators dropped"),
        ("(16,458)", -16458, 0, "a tuple again: its first element 16"),
        ("(45.25)", 45.25, 1, "parentheses are Python grouping, not a negative"),
        ("x = 45.25", 45.25, 1, "the part after '='"),
        ("45.25 or 46", 45.25, 1, "the part before ' or '"),
        ("1.5 × 10^6", 1500000, 0, "10^k becomes math.pow, which the official module lacks"),
        ("1779, 10^3", 1779, 1, "Python: the tuple (1779, 10 XOR 3), read as 1779"),
        ("1.779 * 10^3", 1779, 0, "Python: 17.79 XOR 3 fails; cleaned, math.pow is missing"),
        ("10^3", 9, 1, "10 XOR 3"),
        ("round(45.251, 2)", 45.25, 1, "a pure builtin is computed"),
        ("[45.25, 1][0]", 45.25, 1, "indexing is computed"),
        ("90.5 / 2", 45.25, 1, "arithmetic is evaluated"),
        ("yes", 1, 1, "yes is True, and True == 1"),
        ("None", 45.25, 0, "no answer"),
        ("no answer (none)", 45.25, 0, "the CoT check: 'none' anywhere"),
    ],
)
def test_the_rules_and_quirks(pred, gold, acc, why):
    assert finmmr_acc(pred, gold) == acc, why


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('touch /tmp/localfin-pwned')",
        "open('/etc/passwd').read()",
        "(lambda: 45.25)()",
        "[x for x in range(10**9)]",
        "10 ** 10 ** 10",
        "'a' * 10 ** 12",
    ],
)
def test_model_text_is_never_evaluated(text):
    assert finmmr_normalize(text) is None
    assert not Path("/tmp/localfin-pwned").exists()


def test_equal_on_every_row_with_the_gold_the_released_file_loads(shared_data):
    """End to end: the released easy-validation file through ``load_items``, then ``score_answer``."""
    from agent.qa.data.datasets import load_items

    path = shared_data / "qa" / "released" / "finmmr" / "data" / "validation" / "easy_validation.json"
    if not path.is_file():
        pytest.skip(f"{path} absent")
    gold = {it.item_id: it.gold for it in load_items("finmmr", path, require_images=False).items}
    differ = []
    for r in _rows():
        s = score_answer("finmmr", gold[r["question_id"]], r["prediction"])
        if float(s.correct) != r["official_cot_acc"]:
            differ.append((r["question_id"], r["prediction"], s.detail))
    assert differ == []
