"""The ``[qa] scorer`` choice, end to end through ``reproduce`` on a scripted backend: FinMMR under
its ``official`` scorer (a journaled ``answer_extract`` call reads each answer, then ``get_acc``;
a rerun replays it), FinTMMBench under the authors' (SQuAD match in the trace, then the strict
judge, whose verdict stands), BizBench under the authors' exact match; and a config that names a
scorer a benchmark does not have is refused naming the allowed ones."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agent.reproduce.run import reproduce
from agent.reproduce.spec import parse_repro
from bank.embedder import HashingEmbedder
from localfin.errors import ConfigError
from serving.chat.scripted import Rule, ScriptedBackend
from serving.chat.types import ChatRequest
from serving.models.registry import default_registry


def _data(root: Path) -> None:
    finmmr = root / "benchmarks" / "finmmr" / "data" / "test"
    finmmr.mkdir(parents=True)
    recs = [
        {"question_id": f"easy-test-{i}", "question": f"By how much did revenue of unit {i} grow?",
         "context": f"Revenue 2019: {130 + i}; Revenue 2018: 100.", "ground_truth": 30 + i, "images": "[]",
         "grade": "Easy", "language": "English"}
        for i in range(4)
    ]  # fmt: skip
    (finmmr / "easy_test.json").write_text(json.dumps(recs), encoding="utf-8")
    tmm = root / "benchmarks" / "fintmmbench"
    (tmm / "data").mkdir(parents=True)
    qa = [
        {"uuid": f"q{i}", "type": "News", "question": f"Did unit {i}'s news lean positive?",
         "answers": [{"answer": "Yes", "source": []}]}
        for i in range(4)
    ]  # fmt: skip
    (tmm / "QA.json").write_text(json.dumps(qa), encoding="utf-8")
    biz = root / "benchmarks" / "bizbench"
    biz.mkdir(parents=True)
    rows = [{"question": f"Revenue of unit {i}?", "answer": "1,234", "task": "SEC-NUM", "context": "c",
             "split": "test"} for i in range(2)]  # fmt: skip
    (biz / "test.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")


def _backend() -> ScriptedBackend:
    def base(req: ChatRequest) -> str:
        q = req.messages[-1].content
        if "revenue of unit" in q.lower() and "grow" not in q:
            return "Answer: $1234" if "unit 0" in q else "Answer: 1,234.0"
        m = re.search(r"unit (\d)", q)
        unit = int(m.group(1)) if m else 0
        if "grow" in q:  # right for units 0 and 1, wrong after
            return f"Revenue rose from 100. Therefore, the answer is {30 + unit if unit < 2 else 99}."
        return "Answer: yes" if unit % 2 == 0 else "Answer: Yes, it did"

    def extract(req: ChatRequest) -> str:
        solution = req.messages[-1].content.split("Solution:", 1)[1]
        return json.dumps({"answer": re.findall(r"-?\d+(?:\.\d+)?", solution)[-1]})

    def judge(req: ChatRequest) -> str:
        user = req.messages[-1].content
        cand = re.search(r"Candidate answer: (.*)", user).group(1).strip().lower()
        ok = cand == "yes" and "strictly" in req.messages[0].content
        return json.dumps({"verdict": "correct" if ok else "incorrect", "reason": "r"})

    return ScriptedBackend([Rule("qa_base", base), Rule("answer_extract", extract), Rule("judge", judge)])


def _config(scorer: dict) -> dict:
    return {
        "reproduce": {"name": "tiny_scorers", "paper": "finacumen", "table": "t", "title": "t", "kind": "qa",
                      "differs": ["a tiny scripted test"]},
        "qa": {
            "model": "smollm2-135m", "variants": ["base"], "tools": ["reparse"], "judge_check_items": 0,
            "scorer": scorer,
            "sets": [
                {"label": "FinMMR Easy", "dataset": "finmmr", "path": "finmmr", "split": "test",
                 "subset": "easy", "require_images": False},
                {"label": "FinTMMBench", "dataset": "fintmmbench", "path": "fintmmbench"},
                {"label": "BizBench", "dataset": "bizbench", "path": "bizbench", "split": "test"},
            ],
        },
        "paper": [],
    }  # fmt: skip


def test_named_scorers_through_a_reproduction(tmp_path: Path) -> None:
    root = tmp_path / "data"
    _data(root)
    doc = _config({"finmmr": "official", "fintmmbench": "authors", "bizbench": "authors"})
    cfg = parse_repro(doc, tmp_path / "t.toml")
    backend = _backend()
    res = reproduce(cfg, tmp_path / "out", backend=backend, registry=default_registry(), data_root=root,
                    embedder=HashingEmbedder())  # fmt: skip
    rows = {r["set"]: r for r in res.rows if r.get("variant") == "base"}
    assert rows["FinMMR Easy"]["scorer"] == "official" and rows["FinMMR Easy"]["accuracy_pct"] == 50.0
    run = tmp_path / "out" / "runs" / "finmmr-easy-base"
    ex = json.loads((run / "extract_scores.json").read_text())
    assert ex["n"] == 4 and ex["correct"] == 2 and ex["extract_model"] == "smollm2-135m"
    assert [i["extracted"] for i in ex["items"]] == ["30", "31", "99", "99"]
    # the solver's own trace: placeholders until the extractor has read the answers
    trace = [json.loads(x) for x in (run / "trace.jsonl").read_text().splitlines()]
    assert not any(r["correct"] for r in trace) and "extract_scores.json" in trace[0]["score_detail"]
    # FinTMMBench: the SQuAD match in the trace (right for "yes"), the strict judge's verdict stands
    tmm = tmp_path / "out" / "runs" / "fintmmbench-base"
    trace = [json.loads(x) for x in (tmm / "trace.jsonl").read_text().splitlines()]
    assert [r["correct"] for r in trace] == [True, False, True, False]
    js = json.loads((tmm / "judge_scores.json").read_text())
    assert js["prompt"] == "qa_judge_strict" and js["correct"] == 2
    assert rows["FinTMMBench"]["scorer"] == "authors" and rows["FinTMMBench"]["accuracy_pct"] == 50.0
    # BizBench: "$1234" is right after dropping $ , and "1,234.0" as the same float
    assert rows["BizBench"]["scorer"] == "authors" and rows["BizBench"]["accuracy_pct"] == 100.0
    calls = [c.call_type for c in backend.calls]
    assert calls.count("answer_extract") == 4 and calls.count("judge") == 4
    assert any("scorers: bizbench authors" in n for n in res.notes)
    # a rerun replays the extractor and the judge from their journals
    again = _backend()
    reproduce(cfg, tmp_path / "out", backend=again, registry=default_registry(), data_root=root,
              embedder=HashingEmbedder())  # fmt: skip
    assert again.calls == []


def test_a_scorer_a_benchmark_does_not_have_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"qa.scorer.bizbench: scorer 'official' .*allowed: localfin"):
        parse_repro(_config({"bizbench": "official"}), Path("t.toml"))
    with pytest.raises(ConfigError, match="extract_model"):
        doc = _config({"finmmr": "official"})
        doc["qa"]["extract_model"] = "another-model"
        parse_repro(doc, Path("t.toml"))
