"""Loaders on hand-made files in every layout: items built, bad records listed with their
reason, unreadable files refused by name, and nothing of the gold in what the agent sees."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from agent.qa.data.datasets import DATASETS, load_items
from localfin.errors import ConfigError, InputError


def _png() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (255, 255, 255)).save(buf, format="PNG")
    return buf.getvalue()


def _jsonl(path: Path, records: list[object | str]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


TATQA_OK = {
    "id": "t1",
    "split": "dev",
    "question": "What is the change in Other in 2019 from 2018?",
    "table": [["", "2019", "2018"], ["Other", "44.1", "56.7"]],
    "paragraphs": ["Sales by contract type (in millions):"],
    "answer": -12.6,
    "scale": "million",
    "answer_type": "arithmetic",
    "answer_from": "table",
    "derivation": "44.1-56.7",
}


def test_tatqa_items_and_every_bad_line_listed(tmp_path):
    f = _jsonl(
        tmp_path / "tatqa_dev.jsonl",
        [
            TATQA_OK,
            "{not json",
            TATQA_OK | {"id": "t2", "answer_type": "essay"},
            TATQA_OK | {"id": "t3", "question": "  "},
            [1, 2],
            TATQA_OK | {"id": "t4", "answer_type": "multi-span", "answer": ["a", "", "b"], "scale": ""},
            TATQA_OK | {"id": "t5", "scale": "lakh"},
        ],
    )
    out = load_items("tatqa", f)
    assert [i.item_id for i in out.items] == ["t1", "t4"]
    t1 = out.items[0]
    assert t1.split == "dev"
    assert "Sales by contract type" in t1.question.context
    assert "| Other | 44.1 | 56.7 |" in t1.question.context
    assert t1.gold.answer == -12.6 and t1.gold.scale == "million" and t1.gold.answer_type == "number"
    assert out.items[1].gold.answer == ["a", "b"]
    reasons = {(s.line, s.item_id): s.reason for s in out.skipped}
    assert set(reasons) == {(2, ""), (3, "t2"), (4, "t3"), (5, ""), (7, "t5")}
    assert "invalid JSON" in reasons[(2, "")]
    assert "answer_type 'essay'" in reasons[(3, "t2")]
    assert "'question'" in reasons[(4, "t3")]
    assert "scale 'lakh'" in reasons[(7, "t5")]
    assert all(s.path == str(f) for s in out.skipped)


def test_question_does_not_depend_on_the_gold(tmp_path):
    a = TATQA_OK
    b = TATQA_OK | {"id": "t1", "answer": 999.0, "scale": "", "derivation": "other"}
    qa = load_items("tatqa", _jsonl(tmp_path / "a.jsonl", [a])).items[0].question
    qb = load_items("tatqa", _jsonl(tmp_path / "b.jsonl", [b])).items[0].question
    assert qa == qb
    assert "12.6" not in qa.context + qa.text + qa.answer_format


FINMMR_OK = {
    "id": "easy-validation-0",
    "split": "easy_validation",
    "question": "what was the percentage change? Answer to the nearest integer.",
    "context": "notes ( millions ) 2008 2007 .\n\n<image 1>\n\nbalance at december 31",
    "answer": -10,
    "python_solution": "answer = (99 - 110) / 110 * 100",
    "language": "English",
    "grade": "Easy",
    "images": "['finmmr_images/1-1.png']",
    "images_available": True,
}


def test_finmmr_shared_layout_parses_python_list_text_safely(tmp_path):
    (tmp_path / "finmmr_images").mkdir()
    (tmp_path / "finmmr_images" / "1-1.png").write_bytes(_png())
    marker = tmp_path / "pwned"
    f = _jsonl(
        tmp_path / "finmmr.jsonl",
        [
            FINMMR_OK,
            FINMMR_OK | {"id": "e1", "images": ["finmmr_images/1-1.png"]},
            FINMMR_OK | {"id": "e2", "images": f"__import__('os').system('touch {marker}')"},
            FINMMR_OK | {"id": "e3", "images": "['finmmr_images/9-1.png']"},
            FINMMR_OK | {"id": "e4", "images": "[]", "images_available": False, "language": "Chinese"},
            FINMMR_OK | {"id": "e5", "answer": "n/a"},
        ],
    )
    out = load_items("finmmr", f)
    # e4 lists no image at all: it loads (without one); e3's listed image is not in this copy
    assert [i.item_id for i in out.items] == ["easy-validation-0", "e1", "e4"]
    item = out.items[0]
    assert (item.split, item.subset) == ("validation", "easy")
    assert item.question.images == (str(tmp_path / "finmmr_images" / "1-1.png"),)
    assert out.items[2].question.images == ()
    assert item.question.answer_format.endswith("as an integer")
    assert item.gold.answer == -10 and "solution" in item.gold.extra
    reasons = {s.item_id: s.reason for s in out.skipped}
    assert set(reasons) == {"e2", "e3", "e5"} and out.incomplete == ()
    assert "not a list literal" in reasons["e2"]
    assert not marker.exists()  # the text was never executed
    assert "image file missing" in reasons["e3"] and "9-1.png" in reasons["e3"]
    assert "not a number" in reasons["e5"]
    loose = load_items("finmmr", f, require_images=False)
    assert {i.item_id for i in loose.items} == {"easy-validation-0", "e1", "e3", "e4"}
    assert next(i for i in loose.items if i.item_id == "e3").question.images == ()
    assert [(n.item_id, n.line) for n in loose.incomplete] == [("e3", 4)]
    assert "9-1.png" in loose.incomplete[0].reason and "(1 of 1)" in loose.incomplete[0].reason


def _finmmr_repo(root: Path) -> Path:
    (root / "images").mkdir(parents=True)
    (root / "images" / "5-1.png").write_bytes(_png())
    for split in ("validation", "test"):
        d = root / "data" / split
        d.mkdir(parents=True)
        rec = {
            "question_id": f"easy-{split}-0",
            "question": "What is the interest coverage ratio for 2018? Answer to three decimal places.",
            "context": "<image 1>",
            "ground_truth": 10.144329896907216,
            "python_solution": "def solution():\n    return 984 / 97\n",
            "images": ["./MultiFinance/images/5-1.png"],
            "grade": "Easy",
            "language": "English",
            "source": "DocMath-Eval",
        }
        (d / f"easy_{split}.json").write_text(json.dumps([rec, rec | {"question_id": f"easy-{split}-1"}]))
    return root


def test_finmmr_released_repository_layout(tmp_path):
    root = _finmmr_repo(tmp_path / "FinMMR")
    both = load_items("finmmr", root)
    assert sorted(i.split for i in both.items) == ["test", "test", "validation", "validation"]
    test = load_items("finmmr", root, split="test", subset="easy")
    assert [i.item_id for i in test.items] == ["easy-test-0", "easy-test-1"]
    assert test.items[0].question.images == (str(root / "images" / "5-1.png"),)
    assert test.items[0].gold.answer == pytest.approx(10.1443298969)
    one = load_items("finmmr", root / "data" / "validation" / "easy_validation.json", limit=1)
    assert len(one.items) == 1 and one.items[0].split == "validation"
    with pytest.raises(InputError, match="hard"):
        load_items("finmmr", root, subset="hard")
    with pytest.raises(ConfigError, match="subset"):
        load_items("finmmr", root, subset="extreme")


def test_unreadable_inputs_raise_naming_the_file(tmp_path):
    with pytest.raises(InputError, match="nothere"):
        load_items("tatqa", tmp_path / "nothere.jsonl")
    bad = tmp_path / "broken.json"
    bad.write_text("{ not json")
    with pytest.raises(InputError, match=r"broken\.json"):
        load_items("finmmr", bad)
    obj = tmp_path / "obj.json"
    obj.write_text('{"a": 1}')
    with pytest.raises(InputError, match="expected an array"):
        load_items("finmmr", obj)
    with pytest.raises(InputError, match=r"QA\.json"):
        load_items("fintmmbench", tmp_path)


def test_arguments_are_validated():
    assert DATASETS == ("tatqa", "finmmr", "bizbench", "fintmmbench", "finmme", "demo")
    with pytest.raises(ConfigError, match="allowed"):
        load_items("squad", ".")
    with pytest.raises(ConfigError, match="limit"):
        load_items("tatqa", ".", limit=0)
    with pytest.raises(ConfigError, match="split"):
        load_items("tatqa", ".", split="not a name!")
    with pytest.raises(ConfigError, match="tatqa has no subsets"):
        load_items("tatqa", ".", subset="easy")


def test_split_and_limit(tmp_path):
    recs = [TATQA_OK | {"id": f"t{k}"} for k in range(5)] + [TATQA_OK | {"id": "x", "split": "test"}]
    f = _jsonl(tmp_path / "t.jsonl", recs)
    assert len(load_items("tatqa", f, limit=2).items) == 2
    assert [i.item_id for i in load_items("tatqa", f, split="test").items] == ["x"]
    dup = _jsonl(tmp_path / "d.jsonl", [TATQA_OK, TATQA_OK, TATQA_OK])
    out = load_items("tatqa", dup)  # a repeated id keeps every record, numbered
    first = out.items[0].item_id
    assert [i.item_id for i in out.items] == [first, f"{first}#2", f"{first}#3"]
    assert out.renamed == ((first, f"{first}#2"), (first, f"{first}#3"))
