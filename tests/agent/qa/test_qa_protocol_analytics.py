"""The paper's analytics (Appendix E, Table 5; Fig. 3b): H/E/J/C per benchmark and over all
queries (Global) against snapshots drawn in the stratified order (seed 42), checked by a
direct count; and a k_max sweep on a scripted backend whose analysis prints bootstrap 95 %
intervals of every run and of the paired k_max difference."""

from __future__ import annotations

import json

import numpy as np
import pytest
from qa_fakes import Calculator, change_items, num_scorer
from qa_protocol_fakes import depth_backend

from agent.qa.analysis.analyze import GLOBAL, analyze, bank_analytics
from agent.qa.core.items import Question
from agent.qa.evaluation.evaluate import EvalConfig
from agent.qa.evaluation.sweep import sweep_memory
from agent.qa.memory.memory import ExperienceMemory, MemoryConfig
from agent.qa.solver.react import SolverConfig
from bank.embedder import HashingEmbedder
from bank.retrieval import Retriever
from bank.schema import NewEntry, query_text
from bank.snapshots import stratified_order
from bank.store import ExperienceBank

EMB = HashingEmbedder(dim=256)


def _ratio(i: int) -> tuple[str, str]:
    return (
        f"What share of total assets of firm {i} is goodwill, as a ratio?",
        f"Balance sheet of firm {i}: goodwill {10 + i} million; total assets {300 + 7 * i} million",
    )


def _bank(path) -> ExperienceBank:
    """Six BizBench-like entries added first, then six FinMMR-like ones."""
    entries = [NewEntry(f"b-{i}", "bizbench/SEC-NUM", it.question.text, it.question.context, ("f",), ())
               for i, it in enumerate(change_items(6, "train", start=40))]  # fmt: skip
    entries += [NewEntry(f"m-{i}", "finmmr/easy", *_ratio(100 + i), ("f",), ()) for i in range(6)]
    bank = ExperienceBank.open(path)
    bank.add_texts(entries, EMB)
    return bank


def test_rows_per_set_and_global_over_stratified_snapshots(tmp_path) -> None:
    biz = [it.question for it in change_items(3, "test")]
    mmr = [Question(f"mmr-{i}", "finmmr", *_ratio(i)) for i in range(3)]
    questions, groups = [*biz, *mmr], ["BizBench SEC-NUM"] * 3 + ["FinMMR Easy"] * 3
    sizes = [0, 4, 8, 12]
    with _bank(tmp_path / "bank") as bank:
        ana = bank_analytics(bank, EMB, questions, sizes=sizes, taus=(0.5, 0.65), groups=groups)
        ins = bank_analytics(
            bank, EMB, questions, sizes=sizes, taus=(0.65,), groups=groups, order="insertion"
        )
        order = stratified_order(bank.datasets(), 42)
        q = EMB.embed([query_text(x.text, x.context) for x in questions]).astype(np.float64)
        sims = q @ bank.vectors().astype(np.float64).T
        sources = list(bank.sources)
    assert ana["embedder"] == EMB.model_id and ana["embedder_dim"] == 256 and ana["tau"] == 0.65
    assert ana["order"] == "stratified" and ana["seed"] == 42
    assert ana["bank_by_source"] == {"bizbench/SEC-NUM": 6, "finmmr/easy": 6}
    assert list(ana["by_set"]) == ["BizBench SEC-NUM", "FinMMR Easy"]
    assert {r["set"] for r in ana["snapshots"]} == {GLOBAL} and len(ana["tau_sweep"]) == 2 * len(sizes)

    def direct(rows: range, n: int) -> tuple[float, float]:
        snap = set(order[:n].tolist())
        sets = [{sources[j] for j in snap if sims[a, j] >= 0.65} for a in rows]
        return float(np.mean([len(s) > 0 for s in sets])), float(np.mean([len(s) for s in sets]))

    for label, rows in (("BizBench SEC-NUM", range(3)), ("FinMMR Easy", range(3, 6)), (GLOBAL, range(6))):
        table = ana["snapshots"] if label == GLOBAL else ana["by_set"][label]
        assert [r["n"] for r in table] == sizes and {r["set"] for r in table} == {label}
        for r in table:
            h, e = direct(rows, r["n"])
            assert (r["hit_rate"], r["mean_entries"]) == (pytest.approx(h), pytest.approx(e)), (label, r)
    # the snapshot of 4 draws 2 entries of each source set: FinMMR's queries find theirs; the first
    # 4 entries added are all BizBench, so in insertion order they find nothing
    at4 = {label: rows[1] for label, rows in ana["by_set"].items()}
    assert at4["FinMMR Easy"]["hit_rate"] > 0 and ins["by_set"]["FinMMR Easy"][1]["hit_rate"] == 0
    assert at4["BizBench SEC-NUM"]["hit_rate"] == 1.0


def test_kmax_sweep_prints_bootstrap_intervals(tmp_path) -> None:
    items = change_items(12, "test")
    with ExperienceBank.open(tmp_path / "bank") as bank:
        bank.add_texts(
            [NewEntry(f"e-{i}", "demo", it.question.text, it.question.context, ("use calc",), ())
             for i, it in enumerate(change_items(4, "train", start=60))], EMB,
        )  # fmt: skip
        sweep = sweep_memory(
            items,
            depth_backend(),
            tmp_path / "runs",
            EvalConfig("ft_fm", SolverConfig(model="m")),
            lambda n, k: ExperienceMemory(Retriever(bank, EMB), MemoryConfig(k_max=k, bank_limit=n)),
            k_maxes=(1, 3),
            tools=lambda q: [Calculator()],
            scorer=num_scorer,
        )
        assert [s.accuracy for s in sweep] == [0.5, 1.0]  # k_max 1: the odd segments go wrong
        md = analyze(
            sorted((tmp_path / "runs").iterdir()), tmp_path / "out", bank=bank, embedder=EMB,
            questions=[it.question for it in items],
        )  # fmt: skip
    text = md.read_text(encoding="utf-8")
    assert "| bank n | k_max | accuracy | 95 % CI (%) |" in text
    data = json.loads((tmp_path / "out" / "analysis.json").read_text(encoding="utf-8"))
    k1, k3 = data["memory_sweep"]
    assert (k1["k_max"], k3["k_max"]) == (1, 3)
    assert k1["ci95_low"] < 0.5 < k1["ci95_high"] and k3["ci95_low"] == k3["ci95_high"] == 1.0
    assert f"| {k1['ci95']} |" in text and k1["ci95"].startswith("[") and k3["ci95"] == "[100.0, 100.0]"
    (diff,) = data["memory_sweep_differences"]
    assert diff["comparison"] == "k_max 1 -> 3 (bank n all)" and diff["diff_pts"] == 50.0
    assert diff["ci95_low"] > 0 and not diff["zero_inside"]  # the paired interval excludes 0
    assert "## Paired differences (points)" in text and "| k_max 1 -> 3 (bank n all) | 50.0 |" in text
    assert (
        "Embedder test/hashing-bow-256 (256-d); snapshots: the first n entries of the stratified order"
        in text
    )
    assert "### demo (12 queries)" in text and "### Global (all queries)" in text
