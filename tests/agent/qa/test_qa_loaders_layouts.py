"""BizBench, FinMME and FinTMMBench in the layouts their authors release, built small here (we
have no local copies):

- BizBench: huggingface.co/datasets/kensho/bizbench, card at commit 0a793f2: ``data/train-00000-
  of-00001-300a28d2e31daec3.parquet`` and ``data/test-00000-of-00001-7b139510152259c8.parquet``,
  columns question, answer, task, context, context_type (strings), options (sequence of
  strings), program (string).
- FinMME: huggingface.co/datasets/luojunyu/FinMME as github.com/luo-junyu/FinMME's eval.py
  (@ 702cb3a) reads it: one ``train`` split, fields question_text, question_type, answer,
  options, unit, tolerance, verified_caption, related_sentences, knowledge_domain, image (the
  datasets Image struct {bytes, path}); the parquet file names are the hub's usual ones.
- FinTMMBench: github.com/lijunfeng99/FinTMMBench @ 6d01685: ``QA.json`` + ``data/``
  (StockPrice.json, FinancialTable.json, News.json, Chart/<TICKER>_<PERIOD>_Kline.png); the
  question records in the format of its generation prompts' #Return block.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest

from agent.qa.data.datasets import load_items
from localfin.errors import ConfigError, InputError

BIZ_TRAIN = "train-00000-of-00001-300a28d2e31daec3.parquet"
BIZ_TEST = "test-00000-of-00001-7b139510152259c8.parquet"


def _png() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (255, 255, 255)).save(buf, format="PNG")
    return buf.getvalue()


def _bizbench(root: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(
        [
            ("question", pa.string()),
            ("answer", pa.string()),
            ("task", pa.string()),
            ("context", pa.string()),
            ("context_type", pa.string()),
            ("options", pa.list_(pa.string())),
            ("program", pa.string()),
        ]
    )
    test = {
        "question": ["Total revenue", "Write a function", "Net income", "Operating income", "EPS"],
        "answer": ["1,234", "def f(): pass", "(12.3)", "about half", "2.5"],
        "task": ["SEC-NUM", "FinCode", "SEC-NUM", "SEC-NUM", "FinKnow"],
        "context": ["Revenue was $1,234 thousand ...", None, "Net loss of $(12.3) million", "...", None],
        "context_type": ["text", None, "text", "text", None],
        "options": [None, None, None, None, ["1.5", "2.5"]],
        "program": [None, "...", None, None, None],
    }
    (root / "data").mkdir(parents=True)
    pq.write_table(pa.table(test, schema=schema), root / "data" / BIZ_TEST)
    pq.write_table(pa.table({k: v[:1] for k, v in test.items()}, schema=schema), root / "data" / BIZ_TRAIN)
    return root


def test_bizbench_release_layout_sec_num_by_default(tmp_path):
    root = _bizbench(tmp_path / "bizbench")
    out = load_items("bizbench", root)
    assert [i.item_id for i in out.items] == ["bizbench-test-0-1", "bizbench-test-0-3", "bizbench-train-0-1"]
    first = out.items[0]
    assert first.question.text == "Total revenue" and "1,234 thousand" in first.question.context
    assert (first.gold.answer, first.split, first.subset) == ("1,234", "test", "SEC-NUM")
    assert [s.line for s in out.skipped] == [4] and "does not read as a number" in out.skipped[0].reason
    # the data/ folder and one file read the same; a split reads only its own files
    assert [i.item_id for i in load_items("bizbench", root / "data").items] == [i.item_id for i in out.items]
    assert [i.item_id for i in load_items("bizbench", root / "data" / BIZ_TRAIN).items] == [
        "bizbench-train-0-1"
    ]
    assert [i.item_id for i in load_items("bizbench", root, split="train").items] == ["bizbench-train-0-1"]
    (root / "data" / "test-broken.parquet").write_bytes(b"not parquet")
    with pytest.raises(InputError, match=r"test-broken\.parquet"):
        load_items("bizbench", root)


def test_bizbench_subset_is_the_task_and_an_unknown_one_lists_those_present(tmp_path):
    root = _bizbench(tmp_path / "bizbench")
    knows = load_items("bizbench", root, subset="finknow")  # case and dashes do not matter
    assert [(i.item_id, i.subset, i.question.options) for i in knows.items] == [
        ("bizbench-test-0-5", "FinKnow", ("1.5", "2.5"))
    ]
    assert len(load_items("bizbench", root, subset="SEC-Num")) == 3
    with pytest.raises(InputError, match=r"'ConvFinQA' matches no row.*SEC-NUM \(4\).*FinCode \(1\)"):
        load_items("bizbench", root, subset="ConvFinQA")
    export = tmp_path / "bizbench_test.jsonl"
    export.write_text(
        json.dumps({"question": "Revenue", "answer": "10", "task": "SEC-NUM", "context": "c"}) + "\n"
    )
    assert [(i.item_id, i.split) for i in load_items("bizbench", export).items] == [
        ("bizbench-test-0-1", "test")
    ]


def _finmme_rows(png: bytes) -> list[dict]:
    base = {
        "unit": "",
        "tolerance": None,
        "verified_caption": "",
        "related_sentences": "",
        "knowledge_domain": "",
    }
    return [
        base
        | {
            "id": 101,
            "question_text": "What is the trend of the index over the period?",
            "question_type": "single_choice",
            "answer": "B",
            "options": "A. up B. down C. flat",
            "verified_caption": "Index level 2020-2023",
            "related_sentences": "The index fell.",
            "knowledge_domain": "Equity",
            "image": {"bytes": png, "path": "x.png"},
        },
        base
        | {
            "id": 102,
            "question_text": "What was revenue in 2023?",
            "question_type": "numerical",
            "answer": "12.5",
            "options": None,
            "unit": "billion USD",
            "tolerance": 0.1,
            "knowledge_domain": "TMT",
            "image": {"bytes": png, "path": "y.png"},
        },
        base
        | {
            "id": 103,
            "question_text": "Why did margins fall?",
            "question_type": "essay",
            "answer": "A",
            "options": None,
            "image": {"bytes": png, "path": "z.png"},
        },
    ]


def test_finmme_hub_parquet_with_inline_images(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    png = _png()
    rows = _finmme_rows(png)
    data = tmp_path / "FinMME" / "data"
    data.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), data / "train-00000-of-00001.parquet")
    cache = tmp_path / "cache"
    out = load_items("finmme", tmp_path / "FinMME", image_cache=cache)
    assert len(out.items) == 2 and out.skipped[0].line == 3 and "question_type" in out.skipped[0].reason
    choice, num = out.items
    assert (choice.item_id, choice.split, choice.subset) == ("finmme-101", "train", "")
    assert choice.question.options == ("A. up", "B. down", "C. flat")
    assert choice.gold.answer == "B" and choice.gold.extra["dimensions"] == ("compre", "single")
    assert "Caption: Index level" in choice.question.context
    assert num.gold.answer == 12.5 and num.gold.extra["tolerance"] == 0.1
    assert num.gold.extra["dimensions"] == ("fg", "cal")
    assert "billion USD" in num.question.answer_format
    assert Path(choice.question.images[0]).read_bytes() == png
    assert str(cache) in choice.question.images[0]
    # the hub's converted layout (default/train/0000.parquet): the folder names the split
    conv = tmp_path / "converted" / "default" / "train"
    conv.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows[:1]), conv / "0000.parquet")
    again = load_items("finmme", tmp_path / "converted" / "default", image_cache=cache)
    assert [(i.item_id, i.split) for i in again.items] == [("finmme-101", "train")]
    assert again.items[0].question.images == choice.question.images  # same bytes, same cached file
    export = tmp_path / "finmme_test.json"
    export.write_text(json.dumps([rows[0] | {"id": 7, "image": {"bytes": base64.b64encode(png).decode()}}]))
    assert [(i.item_id, i.split) for i in load_items("finmme", export, image_cache=cache).items] == [
        ("finmme-7", "test")
    ]
    with pytest.raises(ConfigError, match="finmme has no subsets"):
        load_items("finmme", export, subset="numerical")


def _fintmm_repo(root: Path, questions: object) -> Path:
    (root / "data" / "Chart").mkdir(parents=True)
    (root / "data" / "Chart" / "AAPL_2022-W10_Kline.png").write_bytes(_png())
    price = {"uuid": "sp-1", "Company": "Apple Inc.", "Symbol": "AAPL", "Date": "2022-03-04", "close": 163.17}
    (root / "data" / "StockPrice.json").write_text(json.dumps([price]))
    (root / "data" / "News.json").write_text(
        json.dumps([{"uuid": "n-1", "Title": "Apple up", "Date": "2022-03-04"}])
    )
    (root / "QA.json").write_text(json.dumps(questions))
    return root


_Q1 = {
    "uuid": "q-1",
    "question": "What was Apple's closing price on 2022-03-04?",
    "answers": [{"answer": "163.17 USD", "explanation": "...", "confidence": 0.9, "source": ["sp-1"]}],
    "type": "StockPrice",
}
_Q2 = {
    "question": "Was AAPL's week of 2022-W10 bullish?",
    "answers": [
        {"answer": "No", "explanation": "...", "confidence": 0.8, "source": ["Chart_AAPL_2022-W10_Kline"]}
    ],
    "type": "Chart",
}


@pytest.mark.parametrize(
    ("shape", "ids"),
    [
        ("array", ["q-1", "fintmm-2"]),
        ("object", ["q-1", "fintmm-2"]),
        ("groups", ["q-1", "fintmm-1-2"]),
    ],
)
def test_fintmmbench_release_layout_in_every_shape_of_its_qa_format(tmp_path, shape, ids):
    bad = {"question": "broken", "answers": []}
    qa = {
        "array": [_Q1, _Q2, bad],
        "object": {"questions": [_Q1, _Q2, bad]},
        "groups": [{"questions": [_Q1, _Q2]}, {"questions": [bad]}],
    }[shape]
    root = _fintmm_repo(tmp_path / "FinTMMBench", qa)
    out = load_items("fintmmbench", root)
    assert [i.item_id for i in out.items] == ids
    assert all(i.split == "test" and i.question.context == "" and not i.question.images for i in out.items)
    assert out.items[0].gold.answer == "163.17 USD" and out.items[0].gold.answer_type == "free"
    assert out.items[0].gold.extra["sources"] == ["sp-1"]
    assert len(out.skipped) == 1 and "answers" in out.skipped[0].reason
    oracle = load_items("fintmmbench", root, oracle_context=True)
    assert "163.17" in oracle.items[0].question.context
    assert oracle.items[1].question.images == (str(root / "data" / "Chart" / "AAPL_2022-W10_Kline.png"),)
    assert [i.split for i in load_items("fintmmbench", root, split="train").items] == ["train", "train"]
