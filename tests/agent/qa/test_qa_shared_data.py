"""Every item of the shared TAT-QA dev and FinMMR easy files loads, scores, and scores 100% when
the gold is given as the prediction (skips where ../shared/data is absent; about 2 s)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from agent.qa.data.datasets import load_items
from agent.qa.scoring.scoring import gold_as_prediction, score_answer


@pytest.mark.parametrize(
    ("dataset", "name", "n_items"),
    [("tatqa", "tatqa_dev.jsonl", 1668), ("finmmr", "finmmr_easy_validation.jsonl", 300)],
)
def test_gold_against_itself_scores_100_percent(shared_data, dataset, name, n_items):
    path = shared_data / "qa" / name
    if not path.is_file():
        pytest.skip(f"{path} absent")
    out = load_items(dataset, path, require_images=False)
    assert len(out.items) == n_items and out.skipped == ()
    wrong = [
        (it.item_id, s.detail)
        for it in out.items
        if not (s := score_answer(dataset, it.gold, gold_as_prediction(dataset, it.gold))).correct
        or s.score < 1.0
    ]
    assert wrong == []
    for it in out.items:
        q = it.question
        assert q.text and q.answer_format
        assert q.dataset == dataset


def test_finmmr_items_whose_images_are_absent_are_listed(shared_data):
    path = shared_data / "qa" / "finmmr_easy_validation.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} absent")
    out = load_items("finmmr", path)
    # 30 Chinese items list images this copy lacks; 3 list none and load without one
    assert (len(out.items), len(out.skipped)) == (270, 30)
    assert Counter(s.reason.split(":")[0] for s in out.skipped) == {"image file missing": 30}
    assert sum(not it.question.images for it in out.items) == 3
    assert all(p.endswith((".png", ".jpg", ".jpeg")) for it in out.items for p in it.question.images)
    assert all(Path(p).is_file() for it in out.items for p in it.question.images)


def test_a_wrong_answer_scores_zero_on_real_items(shared_data):
    path = shared_data / "qa" / "tatqa_dev.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} absent")
    items = load_items("tatqa", path, limit=200).items
    numeric = [it for it in items if it.gold.answer_type == "number"]
    assert numeric
    for it in numeric:
        off = float(it.gold.answer) * 1.5 + 1.0
        assert not score_answer("tatqa", it.gold, f"{off} {it.gold.scale}").correct
