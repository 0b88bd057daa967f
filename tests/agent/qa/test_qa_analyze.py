"""Analysis of run folders: the variant table, the bank-size x k_max table, and H/E/J/C of the
evaluation questions against bank snapshots (checked against a direct count)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from qa_fakes import Calculator, change_items, num_scorer, qa_backend

from agent.qa.analysis.analyze import analyze, bank_analytics, run_rows
from agent.qa.evaluation.evaluate import EvalConfig, evaluate
from agent.qa.evaluation.sweep import sweep_memory
from agent.qa.memory.memory import ExperienceMemory, MemoryConfig
from agent.qa.solver.react import SolverConfig
from bank.embedder import HashingEmbedder
from bank.retrieval import Retriever
from bank.schema import NewEntry, query_text
from bank.snapshots import stratified_order
from bank.store import ExperienceBank
from localfin.errors import InputError

EMB = HashingEmbedder(dim=256)
TOOLS = lambda q: [Calculator()]  # noqa: E731


def _entries(n):
    out = []
    for i, it in enumerate(change_items(n, "train", start=50)):
        q = it.question
        out.append(NewEntry(f"src-{i % max(1, n - 1)}", "demo", q.text, q.context, ("f",), ()))
    return out


def test_analysis_tables_and_bank_analytics(tmp_path):
    items = change_items(4, "test")
    cfg = SolverConfig(model="m")
    with ExperienceBank.open(tmp_path / "bank") as bank:
        bank.add_texts(_entries(6), EMB)
        evaluate(items, qa_backend(), tmp_path / "runs" / "base", EvalConfig("base", cfg), scorer=num_scorer)
        evaluate(
            items,
            qa_backend(),
            tmp_path / "runs" / "ft",
            EvalConfig("ft", cfg),
            tools=TOOLS,
            scorer=num_scorer,
        )
        sweep = sweep_memory(
            items,
            qa_backend(),
            tmp_path / "runs",
            EvalConfig("ft_fm", cfg),
            lambda n, k: ExperienceMemory(Retriever(bank, EMB), MemoryConfig(k_max=k, bank_limit=n)),
            bank_sizes=(0, 3, None),
            k_maxes=(1, 5),
            tools=TOOLS,
            scorer=num_scorer,
        )
        assert [s.bank_limit for s in sweep] == [0, 0, 3, 3, None, None]
        assert sweep[0].memory_hit_rate == 0.0 and sweep[-1].memory_hit_rate == 1.0
        dirs = sorted((tmp_path / "runs").iterdir())
        md = analyze(
            dirs,
            tmp_path / "out",
            bank=bank,
            embedder=EMB,
            questions=[i.question for i in items],
            sizes=[0, 2, 4, 6],
        )
        ana = bank_analytics(bank, EMB, [i.question for i in items], sizes=[0, 2, 4, 6])
        # direct count: entries with cosine >= 0.65 among the snapshot's n (the first n of the
        # stratified order), one per source
        q = EMB.embed([query_text(i.question.text, i.question.context) for i in items])
        sims = q @ bank.vectors().T
        order = stratified_order(bank.datasets(), 42)
        for row in ana["snapshots"]:
            n = row["n"]
            snap = order[:n].tolist()
            sets = [{bank.sources[j] for j in snap if sims[a, j] >= 0.65} for a in range(len(items))]
            assert row["hit_rate"] == pytest.approx(np.mean([len(s) > 0 for s in sets]))
            assert row["mean_entries"] == pytest.approx(np.mean([len(s) for s in sets]))
    text = md.read_text()
    assert "## Variants" in text and "## Accuracy against bank size and k_max" in text and "H_n" in text
    data = json.loads((tmp_path / "out" / "analysis.json").read_text())
    assert {r["variant"] for r in data["runs"]} == {"base", "ft", "ft_fm"}
    assert len(data["memory_sweep"]) == 6
    assert [r["n"] for r in data["bank_analytics"]["snapshots"]] == [0, 2, 4, 6]
    assert len(data["bank_analytics"]["tau_sweep"]) == 9 * 4


def test_run_rows_names_a_folder_that_is_not_an_evaluation(tmp_path):
    (tmp_path / "x").mkdir()
    with pytest.raises(InputError, match=r"scores\.json not found"):
        run_rows([tmp_path / "x"])
