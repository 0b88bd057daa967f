"""The benchmarks' files exactly as their authors release them (``../shared/data/qa/released``):
TAT-QA's ``dataset_raw/tatqa_dataset_dev.json`` and FinMMR's easy validation file with its
``images/`` load every question, give the same items as the reshaped JSONL copies, and score
100 % when the gold is given as the prediction. Skips where the shared data is absent (~2 s)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from agent.qa.data.datasets import load_items
from agent.qa.scoring.scoring import gold_as_prediction, score_answer
from localfin.errors import ConfigError, InputError

TATQA_DEV = "qa/released/tatqa/dataset_raw/tatqa_dataset_dev.json"
FINMMR = "qa/released/finmmr"
FINMMR_EASY = "qa/released/finmmr/data/validation/easy_validation.json"


def _need(shared_data: Path, rel: str) -> Path:
    path = shared_data / rel
    if not path.exists():
        pytest.skip(f"{path} absent")
    return path


def _not_perfect(dataset: str, items) -> list[tuple[str, str]]:
    return [
        (it.item_id, s.detail)
        for it in items
        if not (s := score_answer(dataset, it.gold, gold_as_prediction(dataset, it.gold))).correct
        or s.score < 1.0
    ]


def test_released_tatqa_dev_loads_every_question_with_its_table_and_paragraphs(shared_data):
    path = _need(shared_data, TATQA_DEV)
    assert len(json.loads(path.read_text(encoding="utf-8"))) == 278  # documents
    out = load_items("tatqa", path)
    assert (len(out.items), out.skipped, out.incomplete) == (1668, (), ())
    assert {it.split for it in out.items} == {"dev"}  # from the file name
    assert Counter(it.gold.extra["tatqa_answer_type"] for it in out.items) == {
        "arithmetic": 718,
        "span": 701,
        "multi-span": 217,
        "count": 32,
    }
    first = out.items[0]
    assert first.item_id == "23801627-ff77-4597-8d24-1c99e2452082"
    assert first.question.context.startswith("Sales by Contract Type:")
    assert "Table:\n|  |  | Years Ended September 30, |  |" in first.question.context
    assert "| Total sales | $1,496.5 | $1,202.9 | $1,107.7 |" in first.question.context
    assert all("Table:\n| " in it.question.context for it in out.items)
    # the folder finds dataset_raw/ and the file by the split asked for
    assert len(load_items("tatqa", path.parents[1], split="dev")) == 1668


def test_released_tatqa_dev_gives_the_same_items_as_the_reshaped_jsonl(shared_data):
    released = load_items("tatqa", _need(shared_data, TATQA_DEV)).items
    jsonl = {it.item_id: it for it in load_items("tatqa", _need(shared_data, "qa/tatqa_dev.jsonl")).items}
    assert set(jsonl) == {it.item_id for it in released}
    for it in released:
        twin = jsonl[it.item_id]
        assert it.question == twin.question
        assert (it.gold.answer, it.gold.scale, it.gold.answer_type) == (
            twin.gold.answer,
            twin.gold.scale,
            twin.gold.answer_type,
        )


def test_released_tatqa_dev_gold_scores_100_percent(shared_data):
    out = load_items("tatqa", _need(shared_data, TATQA_DEV))
    assert _not_perfect("tatqa", out.items) == []


def test_released_finmmr_easy_loads_300_with_and_without_images(shared_data):
    root = _need(shared_data, FINMMR)
    out = load_items("finmmr", root, require_images=False)
    assert (len(out.items), out.skipped) == (300, ())
    assert {(it.split, it.subset) for it in out.items} == {("validation", "easy")}
    with_images = [it for it in out.items if it.question.images]
    assert len(with_images) == 267
    assert all(
        Path(p).is_file() and Path(p).parent == root / "images"
        for it in with_images
        for p in it.question.images
    )
    assert {it.gold.extra["language"] for it in with_images} == {"English"}
    # 33 Chinese items without images: 30 list files this copy lacks (recorded), 3 list none
    without = [it for it in out.items if not it.question.images]
    assert len(without) == 33 and {it.gold.extra["language"] for it in without} == {"Chinese"}
    assert len(out.incomplete) == 30 and {n.item_id for n in out.incomplete} < {it.item_id for it in without}
    assert all(n.reason.startswith("image file missing: ") for n in out.incomplete)
    assert sum(it.gold.extra["n_images_listed"] == 0 for it in without) == 3


def test_released_finmmr_easy_skips_by_default_only_items_whose_images_are_absent(shared_data):
    root = _need(shared_data, FINMMR)
    out = load_items("finmmr", root)
    assert (len(out.items), len(out.skipped), out.incomplete) == (270, 30, ())
    assert Counter(s.reason.split(": ")[0] for s in out.skipped) == {"image file missing": 30}
    assert all(s.path.endswith("easy_validation.json") and s.item_id for s in out.skipped)
    assert sum(not it.question.images for it in out.items) == 3  # no image listed: loaded
    # the file itself, inside the repository, reads the same as the folder
    one = load_items("finmmr", _need(shared_data, FINMMR_EASY))
    assert [it.item_id for it in one.items] == [it.item_id for it in out.items]
    assert [it.question for it in one.items] == [it.question for it in out.items]


def test_released_finmmr_easy_gold_scores_100_percent(shared_data):
    out = load_items("finmmr", _need(shared_data, FINMMR), require_images=False)
    assert _not_perfect("finmmr", out.items) == []


def test_released_finmmr_subset_and_split(shared_data):
    root = _need(shared_data, FINMMR)
    assert len(load_items("finmmr", root, subset="easy", split="validation", require_images=False)) == 300
    with pytest.raises(InputError, match=r"subset=medium, split=any"):
        load_items("finmmr", root, subset="medium")
    with pytest.raises(InputError, match=r"subsets there: easy \(300\)"):
        load_items("finmmr", _need(shared_data, FINMMR_EASY), subset="medium", require_images=False)
    with pytest.raises(InputError, match=r"splits there: validation"):
        load_items("finmmr", root, split="test")
    with pytest.raises(ConfigError, match="allowed: easy, medium, hard"):
        load_items("finmmr", root, subset="extreme")
