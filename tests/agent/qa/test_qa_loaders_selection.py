"""Which items a load selects: splits taken as the data names them (``test_gold``, FinMMR's
difficulty in the split field), ``subset`` in every layout, a file of which nothing loads
refused with its commonest reason, and TAT-QA's released ``dataset_raw`` layout (built here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.qa.data.datasets import load_items
from localfin.errors import ConfigError, InputError
from localfin_cli.main import main

_QUESTION = {
    "question": "What is the change in Other in 2019 from 2018?",
    "answer": -12.6,
    "derivation": "44.1-56.7",
    "answer_type": "arithmetic",
    "answer_from": "table",
    "rel_paragraphs": ["1"],
    "req_comparison": False,
    "scale": "million",
}


def _doc(n: int, *, gold: bool = True) -> dict:
    qs = [_QUESTION | {"uid": f"q{n}-{k}", "order": k} for k in (1, 2)]
    return {
        "table": {"uid": f"t{n}", "table": [["", "2019", "2018"], ["Other", "44.1", "56.7"]]},
        "paragraphs": [
            {"uid": f"p{n}-2", "order": 2, "text": "Second paragraph."},
            {"uid": f"p{n}-1", "order": 1, "text": "Sales by contract type (in millions):"},
        ],
        "questions": qs
        if gold
        else [{"uid": q["uid"], "order": q["order"], "question": q["question"]} for q in qs],
    }


def _dataset_raw(root: Path) -> Path:
    raw = root / "dataset_raw"
    raw.mkdir(parents=True)
    (raw / "tatqa_dataset_dev.json").write_text(json.dumps([_doc(1), _doc(2)]))
    (raw / "tatqa_dataset_test.json").write_text(json.dumps([_doc(3, gold=False)]))
    (raw / "tatqa_dataset_test_gold.json").write_text(json.dumps([_doc(3)]))
    return raw


def test_tatqa_dataset_raw_layout_one_item_per_question(tmp_path):
    raw = _dataset_raw(tmp_path / "TAT-QA")
    dev = load_items("tatqa", raw / "tatqa_dataset_dev.json")
    assert [(i.item_id, i.split) for i in dev.items] == [
        ("q1-1", "dev"),
        ("q1-2", "dev"),
        ("q2-1", "dev"),
        ("q2-2", "dev"),
    ]
    q = dev.items[0].question
    assert (
        q.context.index("Sales by contract") < q.context.index("Second paragraph") < q.context.index("Table:")
    )
    assert "| Other | 44.1 | 56.7 |" in q.context
    gold = dev.items[0].gold
    assert (gold.answer, gold.scale, gold.answer_type) == (-12.6, "million", "number")
    assert gold.extra["rel_paragraphs"] == ["1"] and gold.extra["derivation"] == "44.1-56.7"
    # the folder: every file but the answerless test file, whose gold twin sits beside it
    both = load_items("tatqa", tmp_path / "TAT-QA")
    assert sorted({i.split for i in both.items}) == ["dev", "test_gold"] and len(both) == 6
    gold_only = load_items("tatqa", tmp_path / "TAT-QA", split="test_gold")
    assert [i.item_id for i in gold_only.items] == ["q3-1", "q3-2"]


def test_a_file_of_which_nothing_loads_is_an_error_naming_the_commonest_reason(tmp_path):
    raw = _dataset_raw(tmp_path / "TAT-QA")
    with pytest.raises(
        InputError,
        match=r"all 2 records were skipped; commonest reason \(2 of 2\): question has no answer.*test_gold",
    ):
        load_items("tatqa", raw / "tatqa_dataset_test.json")
    with pytest.raises(InputError, match="commonest reason"):
        load_items("tatqa", tmp_path / "TAT-QA", split="test")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        "\n".join(
            [json.dumps({"question": "q?"}), json.dumps({"id": "x"}), "{nope", json.dumps({"question": "r?"})]
        )
    )
    with pytest.raises(
        InputError, match=r"bad\.jsonl.*all 4 records.*\(2 of 4\): field 'id' is missing or empty"
    ):
        load_items("tatqa", bad)
    # the reason counts by kind: the same fault naming different files is one reason
    (tmp_path / "imgs.jsonl").write_text(
        "\n".join(
            json.dumps({"id": f"m{k}", "question": "q?", "answer": 1, "images": [f"none/{k}.png"]})
            for k in range(3)
        )
        + "\n"
    )
    with pytest.raises(InputError, match=r"\(3 of 3\): image file missing: .*none/0\.png \(item m0\)"):
        load_items("finmmr", tmp_path / "imgs.jsonl")


def test_the_cli_exits_2_on_a_file_of_which_nothing_loads(tmp_path, capsys):
    raw = _dataset_raw(tmp_path / "TAT-QA")
    argv = [
        "qa",
        "eval",
        "--variant",
        "base",
        "--dataset",
        "tatqa",
        "--data",
        str(raw / "tatqa_dataset_test.json"),
    ]
    assert main([*argv, "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "commonest reason (2 of 2)" in err and err.count("error:") == 1


def test_splits_are_taken_as_the_data_names_them(tmp_path):
    rec = {"question": "q?", "answer_type": "span", "answer": ["a"], "paragraphs": ["p"], "scale": ""}
    f = tmp_path / "tatqa_mixed.jsonl"
    f.write_text(
        "\n".join(
            json.dumps(rec | {"id": f"t{k}", "split": s})
            for k, s in enumerate(["test_gold", "dev", "test_gold"])
        )
    )
    out = load_items("tatqa", f)
    assert [i.split for i in out.items] == ["test_gold", "dev", "test_gold"] and out.skipped == ()
    assert [i.item_id for i in load_items("tatqa", f, split="test_gold").items] == ["t0", "t2"]
    with pytest.raises(InputError, match=r"split 'train'.*splits there: test_gold \(2\), dev \(1\)"):
        load_items("tatqa", f, split="train")
    # a file naming no split: its name says it, else the split asked for, else TAT-QA's dev
    plain = rec | {"id": "p"}
    for name, asked, want in [
        ("tatqa_test_gold.jsonl", None, "test_gold"),
        ("mine.jsonl", "train", "train"),
        ("mine.jsonl", None, "dev"),
    ]:
        (tmp_path / name).write_text(json.dumps(plain) + "\n")
        assert load_items("tatqa", tmp_path / name, split=asked).items[0].split == want


def _finmmr_rows(path: Path, splits: list[str]) -> Path:
    rec = {
        "question": "What is x? Answer to the nearest integer.",
        "answer": 3,
        "context": "",
        "images": "[]",
    }
    path.write_text(
        "\n".join(json.dumps(rec | {"id": f"f{k}", "split": s}) for k, s in enumerate(splits)) + "\n"
    )
    return path


def test_finmmr_split_field_holding_the_difficulty(tmp_path):
    f = _finmmr_rows(tmp_path / "finmmr.jsonl", ["medium", "easy_validation", "hard_test", "validation"])
    out = load_items("finmmr", f)
    assert [(i.split, i.subset) for i in out.items] == [
        ("test", "medium"),
        ("validation", "easy"),
        ("test", "hard"),
        ("validation", ""),
    ]
    named = _finmmr_rows(tmp_path / "finmmr_medium_validation.jsonl", ["medium", "hard"])
    assert [(i.split, i.subset) for i in load_items("finmmr", named).items] == [
        ("validation", "medium"),
        ("validation", "hard"),
    ]
    assert [
        i.split
        for i in load_items(
            "finmmr", _finmmr_rows(tmp_path / "x.jsonl", ["medium"]), split="validation"
        ).items
    ] == ["validation"]


def _finmmr_repo(root: Path) -> Path:
    rec = {"question": "What is x?", "ground_truth": 2.5, "context": "", "images": []}
    for split in ("validation", "test"):
        (root / "data" / split).mkdir(parents=True)
        for sub in ("easy", "medium"):
            recs = [rec | {"question_id": f"{sub}-{split}-{k}", "grade": sub.title()} for k in range(2)]
            (root / "data" / split / f"{sub}_{split}.json").write_text(json.dumps(recs))
    (root / "images").mkdir()
    return root


def test_subset_works_in_every_finmmr_layout(tmp_path):
    root = _finmmr_repo(tmp_path / "FinMMR")
    jsonl = _finmmr_rows(
        tmp_path / "finmmr.jsonl", ["easy_validation", "medium_validation", "medium_validation"]
    )
    for path, n_medium in [
        (root, 4),
        (root / "data" / "validation" / "medium_validation.json", 2),
        (jsonl, 2),
    ]:
        got = load_items("finmmr", path, subset="medium")
        assert len(got) == n_medium and {i.subset for i in got.items} == {"medium"}
    assert [i.item_id for i in load_items("finmmr", root, subset="medium", split="test").items] == [
        "medium-test-0",
        "medium-test-1",
    ]
    with pytest.raises(InputError, match=r"subset 'hard'.*subsets there: medium \(2\), easy \(1\)"):
        load_items("finmmr", jsonl, subset="hard")
    with pytest.raises(InputError, match=r"subsets there: easy \(2\)"):
        load_items("finmmr", root / "data" / "test" / "easy_test.json", subset="medium")
    with pytest.raises(InputError, match="subset=hard"):
        load_items("finmmr", root, subset="hard")
    with pytest.raises(ConfigError, match=r"subset='Medium' for finmmr; allowed: easy, medium, hard"):
        load_items("finmmr", jsonl, subset="Medium")


@pytest.mark.parametrize("dataset", ["tatqa", "fintmmbench", "finmme", "demo"])
def test_a_subset_for_a_benchmark_without_subsets_is_refused(dataset, tmp_path):
    with pytest.raises(ConfigError, match=f"{dataset} has no subsets; allowed: None"):
        load_items(dataset, tmp_path, subset="easy")


def test_the_cli_passes_subset_and_names_the_run_after_it(tmp_path, capsys):
    f = _finmmr_rows(tmp_path / "finmmr.jsonl", ["easy_validation"])
    argv = [
        "qa",
        "eval",
        "--variant",
        "base",
        "--dataset",
        "finmmr",
        "--data",
        str(f),
        "--out",
        str(tmp_path / "r"),
    ]
    assert main([*argv, "--subset", "hard"]) == 2
    assert "subsets there: easy (1)" in capsys.readouterr().err
    assert main([*argv, "--subset", "extreme"]) == 2
    assert "allowed: easy, medium, hard" in capsys.readouterr().err
    from localfin_cli.qa_cmd import _default_run

    assert (
        _default_run("base", "finmmr", "m", "test", 0, None, "hard").name == "base-finmmr-test-hard-m-o0-nall"
    )
    assert _default_run("base", "finmmr", "m", None, 0, None).name == "base-finmmr-all-m-o0-nall"
