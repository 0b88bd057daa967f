"""The generated demo QA set: deterministic files, both splits hold every kind, and every text
question's gold can be recomputed from its own context (image kinds: tests/agent/qa/test_qa_ocr.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agent.qa.data.datasets import load_items
from agent.qa.data.demo_set import DEMO_KINDS, build_demo_set
from agent.qa.scoring.scoring import gold_as_prediction, score_answer
from localfin.errors import ConfigError


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_demo_set(tmp_path_factory.mktemp("demo_qa"), seed=0)


@pytest.fixture(scope="module")
def demo_items(demo_dir: Path):
    out = load_items("demo", demo_dir)
    assert out.skipped == ()
    return out.items


def test_splits_sizes_and_kinds(demo_items):
    train = [i for i in demo_items if i.split == "train"]
    test = [i for i in demo_items if i.split == "test"]
    assert (len(train), len(test)) == (24, 24)
    for part in (train, test):
        assert {i.gold.extra["kind"] for i in part} == set(DEMO_KINDS)
    assert len({i.item_id for i in demo_items}) == 48
    images = [i for i in demo_items if i.question.images]
    assert images and all(Path(p).is_file() and p.endswith(".png") for i in images for p in i.question.images)
    assert all("<image 1>" in i.question.context for i in images)


def test_same_seed_same_bytes_other_seed_other_set(demo_dir, tmp_path):
    a = build_demo_set(tmp_path / "a", seed=0, n_train=3, n_test=3)
    b = build_demo_set(tmp_path / "b", seed=0, n_train=3, n_test=3)
    assert (a / "items.jsonl").read_bytes() == (b / "items.jsonl").read_bytes()
    pngs = sorted((a / "images").glob("*.png"))
    assert pngs
    for png in pngs:  # identical to the same image of the full build (another selection)
        assert png.read_bytes() == (b / "images" / png.name).read_bytes()
        assert png.read_bytes() == (demo_dir / "images" / png.name).read_bytes()
    c = build_demo_set(tmp_path / "c", seed=1, n_train=3, n_test=3)
    assert (a / "items.jsonl").read_bytes() != (c / "items.jsonl").read_bytes()


def _table(context: str) -> list[list[str]]:
    return [
        [c.strip() for c in ln.strip("|").split("|")] for ln in context.splitlines() if ln.startswith("|")
    ]


def _num(cell: str) -> float:
    return float(cell.replace(",", "").replace("$", ""))


def _recompute(kind: str, question: str, context: str) -> float:
    rows = _table(context)
    if kind in ("growth", "ratio"):
        stmt = {r[0]: (_num(r[1]), _num(r[2])) for r in rows[1:]}
        if kind == "growth":
            r14, r15 = stmt["Revenue"]
            return (r15 - r14) / r14 * 100
        return stmt["Gross profit"][1] / stmt["Operating expenses"][1]
    if kind == "table_diff":
        later, earlier = re.findall(r"\d{4}-\d{2}-\d{2}", question)[:2]
        close = {r[0]: _num(r[4]) for r in rows[1:]}
        return close[later] - close[earlier]
    if kind == "count":
        threshold = float(re.search(r"\$(\d+\.\d+)", question).group(1))
        return sum(_num(r[1]) > threshold for r in rows[1:])
    raise AssertionError(kind)


def test_text_questions_are_answerable_from_their_own_context(demo_items):
    text_kinds = {"growth", "ratio", "table_diff", "count"}
    checked = 0
    for it in demo_items:
        kind = it.gold.extra["kind"]
        if kind not in text_kinds:
            continue
        value = _recompute(kind, it.question.text, it.question.context)
        assert abs(value - it.gold.answer) <= it.gold.extra["abs_tol"] + 1e-9, it.item_id
        checked += 1
    assert checked >= 4 * 4


def test_computed_golds_are_not_written_in_the_context(demo_items):
    for it in demo_items:
        kind, d = it.gold.extra["kind"], it.gold.extra["decimals"]
        if kind in ("chart_value", "count"):
            continue  # reading one value / counting: the number is the point or trivially small
        shown = f"{it.gold.answer:,.{d}f}"
        assert shown not in it.question.context, (it.item_id, shown)
        assert f"{it.gold.answer:.{d}f}" not in it.question.context


def test_answer_format_matches_the_asked_decimals(demo_items):
    for it in demo_items:
        d = it.gold.extra["decimals"]
        fmt = it.question.answer_format
        if it.gold.answer_type == "count":
            assert fmt == "an integer count"
        else:
            assert f"rounded to {d} decimal places" in fmt, (it.item_id, fmt)


def test_gold_scores_right_and_a_near_miss_wrong(demo_items):
    for it in demo_items:
        assert score_answer("demo", it.gold, gold_as_prediction("demo", it.gold)).correct
        off = it.gold.answer + 3 * it.gold.extra["abs_tol"] + (1 if it.gold.answer_type == "count" else 0)
        assert not score_answer("demo", it.gold, str(off)).correct


def test_items_file_is_our_documented_layout(demo_dir):
    rec = json.loads((demo_dir / "items.jsonl").read_text().splitlines()[0])
    assert set(rec) == {
        "id",
        "split",
        "kind",
        "ticker",
        "question",
        "context",
        "images",
        "answer",
        "answer_type",
        "decimals",
    }


def test_bad_arguments(tmp_path):
    with pytest.raises(ConfigError, match="n_train"):
        build_demo_set(tmp_path, n_train=0)
    with pytest.raises(ConfigError, match="at most 72"):
        build_demo_set(tmp_path, n_train=40, n_test=40)
    with pytest.raises(ConfigError, match="seed"):
        build_demo_set(tmp_path, seed=-1)
