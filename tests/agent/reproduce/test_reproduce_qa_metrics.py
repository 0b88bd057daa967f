"""The reproduce QA runner scores every set in its benchmark's own metric: FinTMMBench by a judge
pass (judged accuracy, verdicts in judge_scores.json, a rerun replays), FinMME by its
six-dimension Avg (a hand computation on four items), each beside the paper's figure; and the
``qa.judge_model`` key is checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.qa.scoring.judge_pass import JUDGE_SCORES
from agent.reproduce.run import reproduce
from agent.reproduce.spec import parse_repro
from bank.embedder import HashingEmbedder
from localfin.errors import ConfigError
from serving.chat.scripted import Rule, ScriptedBackend
from serving.models.registry import default_registry

# question text -> what the scripted solver answers
_ANSWERS = {
    "Which firm had the higher close on day one?": "Apple",
    "Which firm had the higher volume on day two?": "Netflix",
    "Which candle is the tallest?": "A",
    "Which trend holds over the period shown?": "B",
    "Why did the price fall after the report?": "A",
    "What is the value of the last bar?": "10.55",
}


def _write_sets(root: Path) -> None:
    tmm = root / "benchmarks" / "fintmm"
    tmm.mkdir(parents=True)
    qa = [
        {"uuid": "tmm-1", "question": "Which firm had the higher close on day one?",
         "answers": [{"answer": "Apple Inc.", "source": []}]},
        {"uuid": "tmm-2", "question": "Which firm had the higher volume on day two?",
         "answers": [{"answer": "Adobe", "source": []}]},
    ]  # fmt: skip
    (tmm / "QA.json").write_text(json.dumps(qa), encoding="utf-8")
    mme = root / "benchmarks" / "finmme" / "data"
    mme.mkdir(parents=True)
    opts = ["A. first", "B. second", "C. third"]
    q = list(_ANSWERS)
    rows = [  # gold; the scripted solver's answer (_ANSWERS); dimensions
        {"id": 1, "question_text": q[2], "question_type": "single_choice",
         "answer": "A", "options": opts, "cognitive_dimension": "fg"},  # A: right (fg, single)
        {"id": 2, "question_text": q[3], "question_type": "single_choice",
         "answer": "B", "options": opts, "cognitive_dimension": "compre"},  # B: right (compre, single)
        {"id": 3, "question_text": q[4], "question_type": "multiple_choice",
         "answer": "AC", "options": opts, "cognitive_dimension": "reason"},  # A: wrong (reason, multi)
        {"id": 4, "question_text": q[5], "question_type": "numerical",
         "answer": "10.5", "tolerance": 0.1, "unit": "", "cognitive_dimension": "fg"},  # 10.55: right (cal)
    ]  # fmt: skip
    (mme / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


_CONFIG = {
    "reproduce": {
        "name": "tiny_table1", "paper": "finacumen", "table": "Table 1", "title": "tiny", "kind": "qa",
        "differs": ["a tiny test set"],
    },
    "qa": {
        "model": "smollm2-135m", "variants": ["base"], "tools": ["python"],
        "sets": [
            {"label": "FinTMMBench", "dataset": "fintmmbench", "path": "fintmm"},
            {"label": "FinMME Avg", "dataset": "finmme", "path": "finmme", "split": "test"},
        ],
    },
    "paper": [
        {"row": "Base", "column": "FinTMMBench", "value": 16.2, "unit": "accuracy %",
         "match": {"set": "FinTMMBench", "variant": "base"}},
        {"row": "Base", "column": "FinMME Avg", "value": 27.84, "unit": "FinMME Avg %",
         "match": {"set": "FinMME Avg", "variant": "base"}},
    ],
}  # fmt: skip


def _backend() -> ScriptedBackend:
    def solve(req) -> str:  # the model-only Base: free text ending in its answer line
        user = next(m.content for m in req.messages if m.role == "user")
        answer = next(a for q, a in _ANSWERS.items() if q in user)
        return f"I read the data.\nAnswer: {answer}"

    def judge(req) -> str:
        ok = "Candidate answer: Apple" in req.messages[-1].content
        return json.dumps({"verdict": "correct" if ok else "incorrect", "reason": "compared"})

    return ScriptedBackend([Rule("qa_base", solve), Rule("judge", judge)])


def _reproduce(tmp_path: Path, backend: ScriptedBackend):
    cfg = parse_repro(_CONFIG, tmp_path / "tiny.toml")
    return reproduce(
        cfg, tmp_path / "out", backend=backend, registry=default_registry(), data_root=tmp_path,
        embedder=HashingEmbedder(),
    )  # fmt: skip


def test_fintmmbench_and_finmme_sets_get_their_own_metrics(tmp_path: Path) -> None:
    _write_sets(tmp_path)
    backend = _backend()
    res = _reproduce(tmp_path, backend)
    rows = {r["set"]: r for r in res.rows}
    assert not any("NOT evaluated" in n or "plain accuracy" in n for n in res.notes)
    # FinTMMBench: 1 of 2 answers judged correct, by the solver's model (the default judge)
    tmm = rows["FinTMMBench"]
    assert tmm["accuracy_pct"] == 50.0 and tmm["metric"] == "judge accuracy (smollm2-135m)"
    judge_calls = [r for r in backend.calls if r.call_type == "judge"]
    # the judge pass (2) and the judge check (2 gold answers, 2 perturbed ones: here the other
    # item's answer, since neither holds a number, a yes/no or a direction word)
    assert len(judge_calls) == 6 and {r.model for r in judge_calls} == {"smollm2-135m"}
    # the check's two rates beside the column: "Apple Inc." judged right, "Adobe" not; the
    # swapped wrong answers: "Adobe" for Apple caught, "Apple Inc." for Adobe judged right
    assert (tmm["judge_gold_right_pct"], tmm["judge_wrong_caught_pct"]) == (50.0, 50.0)
    assert any(
        n.startswith("judge check on FinTMMBench: 1 of 2 gold answers judged right") for n in res.notes
    )
    run = tmp_path / "out" / "runs" / "fintmmbench-base"
    verdicts = json.loads((run / JUDGE_SCORES).read_text(encoding="utf-8"))
    assert [i["correct"] for i in verdicts["items"]] == [True, False]
    # FinMME by hand: compre 1/1, fg 2/2, reason 0/1, single 2/2, multi 0/1, cal 1/1 -> Avg 4/6
    # (plain item accuracy would be 3/4)
    mme = rows["FinMME Avg"]
    assert mme["metric"] == "FinMME Avg" and mme["finmme_avg_pct"] == round(100 * 4 / 6, 2)
    assert "accuracy_pct" not in mme
    doc = json.loads((tmp_path / "out" / "reproduction.json").read_text(encoding="utf-8"))
    dims = doc["qa_details"]["finmme"]["finmme-avg-base"]
    assert dims["accuracy"] == {
        "compre": 1.0,
        "fg": 1.0,
        "reason": 0.0,
        "single": 1.0,
        "multi": 0.0,
        "cal": 1.0,
    }
    assert dims["counts"]["fg"] == 2 and dims["item_accuracy"] == 0.75 and dims["missing"] == []
    assert doc["qa_details"]["judge"]["fintmmbench-base"]["correct"] == 1
    # the macro row averages the headline figures (judged accuracy and FinMME Avg)
    assert rows["macro"]["accuracy_pct"] == round((50.0 + round(100 * 4 / 6, 2)) / 2, 2)
    # each paper figure sits beside the matching metric of ours
    ours = {f["column"]: f["ours"] for f in doc["paper_vs_ours"]}
    assert ours == {"FinTMMBench": 50.0, "FinMME Avg": round(100 * 4 / 6, 2)}
    text = res.report.read_text(encoding="utf-8")
    assert "| Base | FinMME Avg | 27.84 | FinMME Avg % | 66.67 |" in text


def test_rerun_replays_solver_and_judge_without_model_calls(tmp_path: Path) -> None:
    _write_sets(tmp_path)
    first = _reproduce(tmp_path, _backend())
    backend = _backend()
    again = _reproduce(tmp_path, backend)
    assert backend.calls == []
    assert [r.get("accuracy_pct") for r in again.rows] == [r.get("accuracy_pct") for r in first.rows]


def test_judge_model_key() -> None:
    def plan(**qa):
        doc = json.loads(json.dumps(_CONFIG))
        doc["qa"].update(qa)
        return parse_repro(doc, Path("x.toml"))

    assert plan().qa.judge == "smollm2-135m"
    cfg = plan(backend="openai", base_url="http://127.0.0.1:8000/v1", judge_model="qwen3-4b")
    assert cfg.qa.judge == "qwen3-4b" and cfg.model_keys == ("smollm2-135m", "qwen3-4b")
    inproc = plan(judge_model="qwen3-4b")  # in process the judge gets its own engine
    assert inproc.qa.separate_judge and inproc.qa.needs_judge and inproc.qa.judge_gpu_memory == 0.25
    with pytest.raises(ConfigError, match=r"qa\.judge_gpu_memory=0\.9; allowed: 0\.05\.\.0\.6"):
        plan(judge_model="qwen3-4b", judge_gpu_memory=0.9)
    with pytest.raises(ConfigError, match=r"unknown key.*qa\.judge"):
        plan(judge="qwen3-4b")


def test_a_separate_in_process_judge_gets_its_own_engine_and_a_share_of_the_gpu() -> None:
    from agent.reproduce.engine_plan import declared_inventory, place
    from agent.reproduce.qa.engines import judge_engine as _judge_engine
    from agent.reproduce.spec import load_repro

    cfg = load_repro("finacumen_table1")
    plan = cfg.qa
    placed = place(cfg, declared_inventory("h100", 1), registry=default_registry())
    _, solver, spec = _judge_engine(plan, default_registry(), own=True, placed=placed)
    assert spec is not None and (spec.kind, spec.model) == ("vllm", "qwen3-4b-nothink")
    assert solver.engine.layout.share == 0.65  # 0.90 - 0.25, on the judge's GPU
    assert spec.engine.layout.share == 0.25
    # a backend given by the caller serves both; the solver's own judge needs nothing
    assert _judge_engine(plan, default_registry(), own=False)[2] is None
    from dataclasses import replace

    assert _judge_engine(replace(plan, judge_model=""), default_registry(), own=True)[2] is None
    served = replace(plan, backend="openai", base_url="http://a:1/v1", judge_base_url="http://b:2/v1")
    assert _judge_engine(served, default_registry(), own=True)[2].base_url == "http://b:2/v1"
