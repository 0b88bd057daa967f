"""A FinAcumen reproduction on a scripted backend, end to end through ``reproduce``: the bank is
built from a train part held out of the same file as the test part (no overlap) and reported
per source with the embedder and its dimension; a k_max x bank-size sweep over two sets gets
bootstrap 95 % intervals on every row and macro row and a table of paired differences; the
retrieval analytics give rows per set and Global; skipped and incomplete records are reported."""

from __future__ import annotations

import json
import re
from pathlib import Path

from agent.reproduce.run import reproduce
from agent.reproduce.spec import parse_repro
from bank.embedder import HashingEmbedder
from serving.chat.scripted import Rule, ScriptedBackend
from serving.chat.types import ChatRequest
from serving.models.registry import default_registry


def _backend() -> ScriptedBackend:
    """Summaries and annotations that say how many entries came in (one ``lesson j`` each); a
    solver that answers 2019 - 2018 when three lessons reach it or the segment is even, else 0."""

    def summary(req: ChatRequest) -> str:
        props = req.json_schema["properties"]
        return json.dumps({"findings": ["subtract"][: props["findings"]["maxItems"]],
                           "cautions": ["check units"][: props["cautions"]["maxItems"]]})  # fmt: skip

    def annotate(req: ChatRequest) -> str:
        n = req.messages[-1].content.count("] Problem:")
        return json.dumps({"directives": [f"lesson {j}" for j in range(n)]})

    def solve(req: ChatRequest) -> str:
        if not any(m.role == "assistant" for m in req.messages):
            return json.dumps({"inputs": "table", "experience": "none", "plan": "subtract"})
        first = next(m.content for m in req.messages if m.role == "user")
        seg = int(re.search(r"segment (\d+)", first).group(1))
        a, b = (float(re.search(rf"{y}: ([\d.]+)", first).group(1)) for y in (2019, 2018))
        answer = f"{a - b:.2f}" if "lesson 2" in first or seg % 2 == 0 else "0"
        return json.dumps({"thought": "t", "action": "final_answer", "args": {"answer": answer}})

    def base(req: ChatRequest) -> str:  # the model-only Base: free text with its answer line
        return "I cannot compute it without tools.\nAnswer: 0"

    return ScriptedBackend(
        [
            Rule("bank_summarize", summary),
            Rule("qa_annotate", annotate),
            Rule("qa_base", base),
            Rule("qa_solve", solve),
        ]
    )


def _demo_file(
    path: Path, n: int, start: int, *, bad_line: bool = False, missing_image: bool = False
) -> None:
    """A demo-layout set of "change in revenue" items (gold 2019 - 2018, two decimals)."""
    path.mkdir(parents=True)
    rows = []
    for i in range(start, start + n):
        a, b = 1000.0 + 37 * i, 800.0 + 11 * i
        rows.append(
            {"id": f"{path.name}-{i}", "split": "test", "kind": "change",
             "question": "What is the change in revenue from 2018 to 2019? Round to 2 decimals.",
             "context": f"Revenue of segment {i} (in thousands)\nRevenue 2019: {a}\nRevenue 2018: {b}",
             "images": [], "answer": round(a - b, 2), "answer_type": "number", "decimals": 2}
        )  # fmt: skip
    if missing_image:
        rows[0]["images"] = ["images/absent.png"]
    lines = [json.dumps(r) for r in rows] + (['{"id": "broken", "question": 3}'] if bad_line else [])
    (path / "items.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


_CONFIG = {
    "reproduce": {
        "name": "tiny_sweep", "paper": "finacumen", "table": "k_max sweep", "title": "tiny", "kind": "qa",
        "differs": ["a tiny scripted test"],
    },
    "qa": {
        "model": "smollm2-135m", "variants": ["ft_fm"], "tools": ["reparse"], "k_max": [1, 3],
        "bank_sizes": [0, 6], "taus": [0.5, 0.65], "bank_k": 2, "max_steps": 4,
        "bank": [{"label": "pool train part", "dataset": "demo", "path": "pool", "split": "train",
                  "test_share": 0.5}],
        "sets": [
            {"label": "Set A", "dataset": "demo", "path": "pool", "split": "test", "test_share": 0.5},
            {"label": "Set B", "dataset": "demo", "path": "setb", "require_images": False},
        ],
    },
    "paper": [
        {"row": "k_max = 3", "column": "macro", "value": 63.11, "unit": "accuracy %",
         "match": {"set": "macro", "k_max": "3", "snapshot": "6"}},
    ],
}  # fmt: skip


def test_sweep_bank_and_analytics_as_the_paper(tmp_path: Path) -> None:
    root = tmp_path / "data"
    _demo_file(root / "benchmarks" / "pool", 16, 0, bad_line=True)
    _demo_file(root / "benchmarks" / "setb", 8, 40, missing_image=True)
    cfg = parse_repro(_CONFIG, tmp_path / "tiny.toml")
    res = reproduce(
        cfg, tmp_path / "out", backend=_backend(), registry=default_registry(), data_root=root,
        embedder=HashingEmbedder(),
    )  # fmt: skip
    doc = json.loads((tmp_path / "out" / "reproduction.json").read_text(encoding="utf-8"))
    det = doc["qa_details"]
    # the bank: the train half of "pool", never an item of its test half
    bank = det["bank"]
    row = bank["by_source"]["demo"]
    assert bank["items"] == 8 and (row["items"], row["in_bank_before"], row["run"], row["added"]) == (
        8,
        0,
        8,
        8,
    )
    assert row["trajectories"] == 16 and row["scored_by"] == "demo tolerance"
    assert bank["entries"] == 8 and bank["entries_by_source"] == {"demo": 8} and bank["trajectories"] == 16
    assert (
        bank["embedder"] == HashingEmbedder().model_id and bank["embedder_dim"] == 64 and bank["tau"] == 0.65
    )
    assert bank["snapshot_order"] == "stratified" and bank["snapshot_seed"] == 42
    trace = (tmp_path / "out" / "runs" / "bank_build" / "trace.jsonl").read_text(encoding="utf-8")
    bank_ids = {json.loads(x)["item_id"] for x in trace.splitlines()}
    run_a = tmp_path / "out" / "runs" / "set-a-ft_fm-n6-k3"
    test_ids = {json.loads(x)["item_id"] for x in (run_a / "trace.jsonl").read_text().splitlines()}
    assert len(bank_ids) == len(test_ids) == 8 and not bank_ids & test_ids
    # data: the broken record and the missing image are reported, not only counted away
    data = {r["label"]: r for r in det["data"]["sets"] + det["data"]["bank"]}
    assert data["Set A"]["skipped"] == 1 and data["Set B"]["incomplete"] == 1
    assert any("records skipped" in n for n in res.notes) and any("loaded incomplete" in n for n in res.notes)
    # every evaluation and macro row has its interval; k_max 1 -> 3 is a paired difference
    evals = [r for r in res.rows if r.get("variant") == "ft_fm"]
    assert len(evals) == 2 * 2 * 2 + 2 * 2  # 2 sets x 2 sizes x 2 k, plus 4 macro rows
    assert all(r["ci95_low"] <= r.get("accuracy_pct") <= r["ci95_high"] for r in evals)
    k1 = next(r for r in evals if r["set"] == "macro" and r["k_max"] == "1" and r["snapshot"] == "6")
    k3 = next(r for r in evals if r["set"] == "macro" and r["k_max"] == "3" and r["snapshot"] == "6")
    even_a = sum(int(i.rsplit("-", 1)[1]) % 2 == 0 for i in test_ids)  # k_max 1: only even segments right
    assert k1["accuracy_pct"] == round((100 * even_a / 8 + 50.0) / 2, 2) < 100.0
    assert k3["accuracy_pct"] == 100.0 and k3["ci95_low"] == 100.0
    diffs = doc["tables"]["Paired differences with bootstrap 95 % intervals (points)"]
    d = next(x for x in diffs if x["set"] == "macro" and x["comparison"] == "k_max 1 -> 3 (bank n 6)")
    assert (
        d["diff_pts"] == round(100.0 - k1["accuracy_pct"], 2)
        and d["ci95_low"] > 0
        and d["zero_inside"] is False
    )
    zero = next(x for x in diffs if x["set"] == "Set A" and x["comparison"] == "k_max 1 -> 3 (bank n 0)")
    assert zero["diff_pts"] == 0.0 and zero["zero_inside"]  # an empty snapshot: k_max changes nothing
    assert {x["comparison"] for x in diffs} >= {"bank n 0 -> 6 (k_max 3)"}
    assert "percentile bootstrap" in det["intervals"]["method"]
    text = res.report.read_text(encoding="utf-8")
    assert "## Paired differences with bootstrap 95 % intervals (points)" in text and "| ci95_low |" in text
    # analytics: per set at tau 0.65 and Global for every tau, over stratified snapshots
    ana = [r for r in res.rows if "hit_rate" in r]
    assert {(r["set"], r["tau"]) for r in ana} == {
        ("Global", "0.5"), ("Global", "0.65"), ("Set A", "0.65"), ("Set B", "0.65"),
    }  # fmt: skip
    assert det["analytics"]["embedder_dim"] == 64 and det["analytics"]["queries_by_set"] == {
        "Set A": 8,
        "Set B": 8,
    }
    # the paper's figure finds our macro row at the nominal snapshot
    assert [f["ours"] for f in doc["paper_vs_ours"]] == [100.0]


def test_a_tools_run_stops_where_the_sandbox_cannot_start(tmp_path: Path, monkeypatch) -> None:
    """The run probes the sandbox before anything is called (the Python tool would otherwise
    refuse every call); a Base-only plan does not need it."""
    import pytest

    from agent.qa import sandbox
    from agent.qa.sandbox import SandboxUnavailable

    def no_sandbox(config=None):
        raise SandboxUnavailable("sandbox: no OS isolation available, bwrap not found on PATH")

    monkeypatch.setattr(sandbox, "probe", no_sandbox)
    root = tmp_path / "data"
    _demo_file(root / "benchmarks" / "setb", 4, 0)
    sets = [{"label": "Set B", "dataset": "demo", "path": "setb"}]
    qa = {"model": "smollm2-135m", "variants": ["ft"], "tools": ["python"], "sets": sets}
    doc = {**_CONFIG, "qa": qa, "paper": []}
    backend = _backend()
    with pytest.raises(SandboxUnavailable, match="bwrap not found"):
        reproduce(parse_repro(doc, tmp_path / "t.toml"), tmp_path / "out", backend=backend,
                  registry=default_registry(), data_root=root, embedder=HashingEmbedder())  # fmt: skip
    assert backend.calls == []
    doc["qa"] = {**doc["qa"], "variants": ["base"]}
    res = reproduce(parse_repro(doc, tmp_path / "t.toml"), tmp_path / "out2", backend=backend,
                    registry=default_registry(), data_root=root, embedder=HashingEmbedder())  # fmt: skip
    assert [r["variant"] for r in res.rows] == ["base"]
