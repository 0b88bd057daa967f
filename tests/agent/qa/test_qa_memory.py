"""Memory at inference: no hit above tau means no annotator call and requests byte-identical
to the tools-only variant; a hit means one annotator call and a memory block; an unusable
annotator reply falls back to the stored entries."""

from __future__ import annotations

import json

import pytest
from qa_fakes import Calculator, change_items, num_scorer, qa_backend

from agent.qa.evaluation.evaluate import EvalConfig, evaluate
from agent.qa.memory.memory import MEMORY_HEADER, ExperienceMemory, MemoryConfig
from agent.qa.solver.react import QASolver, SolverConfig
from bank.embedder import HashingEmbedder
from bank.retrieval import Retriever
from bank.schema import NewEntry
from bank.snapshots import stratified_order
from bank.store import ExperienceBank
from localfin.errors import ConfigError
from serving.chat.lockstep import run_one
from serving.chat.scripted import Rule, ScriptedBackend

EMB = HashingEmbedder(dim=256)


def _bank(path, entries):
    bank = ExperienceBank.open(path)
    bank.add_texts(entries, EMB)
    return bank


def _similar(i: int) -> NewEntry:
    it = change_items(1, "train", start=100 + i)[0]
    q = it.question
    return NewEntry(f"train-{i}", "demo", q.text, q.context[:600], ("Use calc for the change.",), ())


UNRELATED = NewEntry(
    "far-0",
    "demo",
    "Who audited the bakery chain's pension scheme?",
    "Auditor letter, Lisbon",
    ("Read the letter.",),
)


def _run(tmp_path, name, items, memory, backend):
    cfg = EvalConfig("ft_fm" if memory else "ft", SolverConfig(model="m"))
    return evaluate(
        items, backend, tmp_path / name, cfg, tools=lambda q: [Calculator()], memory=memory, scorer=num_scorer
    )


def test_no_hit_above_tau_gives_requests_identical_to_tools_only(tmp_path):
    items = change_items(3, "test")
    with _bank(tmp_path / "bank", [UNRELATED]) as bank:
        memory = ExperienceMemory(Retriever(bank, EMB), MemoryConfig())
        assert all(not r.entries for r in memory.retrieve_many([it.question for it in items]))
        b_ft, b_fm = qa_backend(), qa_backend()
        s_ft = _run(tmp_path, "ft", items, None, b_ft)
        s_fm = _run(tmp_path, "fm", items, memory, b_fm)
    assert [r.call_type for r in b_fm.calls].count("qa_annotate") == 0
    assert [json.dumps(r.to_dict(), sort_keys=True) for r in b_fm.calls] == [
        json.dumps(r.to_dict(), sort_keys=True) for r in b_ft.calls
    ]
    assert s_fm.memory_hit_rate == 0.0 and s_fm.accuracy == s_ft.accuracy == 1.0


def test_a_hit_adds_one_annotator_call_and_a_memory_block(tmp_path):
    items = change_items(2, "test")
    with _bank(tmp_path / "bank", [_similar(0), _similar(1), UNRELATED]) as bank:
        memory = ExperienceMemory(Retriever(bank, EMB), MemoryConfig(k_max=5))
        backend = qa_backend()
        summary = _run(tmp_path, "fm", items, memory, backend)
        hits_before = [e.hit_count for e in bank.get(list(range(len(bank))))]
    ann = [r for r in backend.calls if r.call_type == "qa_annotate"]
    assert len(ann) == 2 and "Use calc for the change." in ann[0].messages[-1].content
    assert "Who audited" not in ann[0].messages[-1].content  # below tau
    plan = next(r for r in backend.calls if r.call_type == "qa_solve")
    first_user = plan.messages[1].content
    assert first_user.startswith(MEMORY_HEADER + "\n- Subtract the 2018 value")
    assert summary.memory_hit_rate == 1.0
    assert summary.mean_tokens_with_memory is not None and summary.mean_tokens_without_memory is None
    assert hits_before == [0, 0, 0]  # evaluation never writes to the bank


def test_snapshot_limit_and_k_max(tmp_path):
    q = change_items(1, "test")[0].question
    with _bank(tmp_path / "bank", [_similar(i) for i in range(4)]) as bank:
        mk = lambda **kw: ExperienceMemory(Retriever(bank, EMB), MemoryConfig(**kw))  # noqa: E731
        assert len(mk().retrieve_many([q])[0].entries) == 4
        assert len(mk(k_max=2).retrieve_many([q])[0].entries) == 2
        first = mk(bank_limit=1, snapshot_order="insertion")
        assert [h.entry_id for h in first.retrieve_many([q])[0].hits] == [0] and first.snapshot_ids() == (0,)
        # the paper's order (default): the snapshot of 1 is the first entry of the stratified order
        strat = mk(bank_limit=1)
        (want,) = stratified_order(bank.datasets(), 42)[:1]
        assert strat.snapshot_ids() == (int(want),)
        assert [h.entry_id for h in strat.retrieve_many([q])[0].hits] == [int(want)]
        assert mk(bank_limit=0).retrieve_many([q])[0].entries == ()


def test_a_bank_size_snapshot_draws_evenly_from_the_source_sets(tmp_path):
    """Six BizBench entries were added before two FinMMR ones; the snapshot of 4 holds 2 of each
    (the paper's stratified order, not the first 4 added), and retrieval over it equals the
    brute force over exactly those entries."""
    import numpy as np

    q = change_items(1, "test")[0].question
    entries = [
        NewEntry(f"s-{i}", "bizbench/SEC-NUM" if i < 6 else "finmmr/easy", *_similar(i).text().split("\n", 1),
                 ("Use calc for the change.",), ())
        for i in range(8)
    ]  # fmt: skip
    with _bank(tmp_path / "bank", entries) as bank:
        mem = ExperienceMemory(Retriever(bank, EMB), MemoryConfig(k_max=3, bank_limit=4))
        ids = mem.snapshot_ids()
        assert sorted(bank.datasets()[i] for i in ids) == ["bizbench/SEC-NUM"] * 2 + ["finmmr/easy"] * 2
        assert set(ids) != {0, 1, 2, 3}  # insertion order would take BizBench only
        (ret,) = mem.retrieve_many([q])
        vecs = bank.vectors()[list(ids)].astype(np.float64)
        sims = vecs @ EMB.embed([mem.query_text(q)])[0].astype(np.float64)
        ranked = sorted(range(len(ids)), key=lambda j: (-sims[j], ids[j]))
        want = [ids[j] for j in ranked if sims[j] >= 0.65][:3]
        assert [h.entry_id for h in ret.hits] == want and want


def test_unusable_annotator_reply_falls_back_to_the_stored_entries(tmp_path):
    q = change_items(1, "test")[0].question
    with _bank(tmp_path / "bank", [_similar(0)]) as bank:
        memory = ExperienceMemory(Retriever(bank, EMB))
        (ret,) = memory.retrieve_many([q])
        solver = QASolver(SolverConfig(model="m", max_steps=1), memory=memory)
        backend = ScriptedBackend(
            [
                Rule("qa_annotate", "not json"),
                Rule(
                    "qa_solve",
                    lambda r: (
                        json.dumps({"thought": "t", "action": "final_answer", "args": {"answer": "x"}})
                        if "plan" not in r.json_schema.get("properties", {})
                        else json.dumps({"inputs": "a", "experience": "b", "plan": "c"})
                    ),
                ),
            ]
        )
        traj = run_one(solver.solve(q, retrieval=ret), backend)
    assert traj.fallbacks[0] == "annotate_unparsed"
    assert traj.memory_block.startswith("Relevant experience from solved problems:")
    assert "Finding: Use calc for the change." in backend.calls[1].messages[1].content


def test_the_entrys_gold_answer_reaches_the_annotator_but_never_the_gate(tmp_path):
    """A training item's gold answer is stored with its entry (the paper's entry) and shown to
    the annotator; the answer gate still reads only the test question's data and tool outputs,
    so a number that only the memory holds does not pass it."""
    from agent.qa.solver.gate import Evidence, check_answer

    q = change_items(1, "test")[0].question
    entry = NewEntry("train-0", "demo", q.text, q.context[:600], ("Use calc for the change.",), (), "777.77")
    with _bank(tmp_path / "bank", [entry]) as bank:
        memory = ExperienceMemory(Retriever(bank, EMB))
        (ret,) = memory.retrieve_many([q])
        assert ret.entries[0].answer == "777.77"
        req = memory.annotate_request(q, ret.entries, model="m")
        assert "Its correct answer: 777.77" in req.messages[-1].content
        solver = QASolver(SolverConfig(model="m", max_steps=1, gate_rejections=0), memory=memory)
        backend = ScriptedBackend(
            [
                Rule("qa_annotate", "not json"),  # the fallback block shows the stored entry as is
                Rule(
                    "qa_solve",
                    lambda r: (
                        json.dumps({"thought": "t", "action": "final_answer", "args": {"answer": "777.77"}})
                        if "plan" not in r.json_schema.get("properties", {})
                        else json.dumps({"inputs": "a", "experience": "b", "plan": "c"})
                    ),
                ),
            ]
        )
        traj = run_one(solver.solve(q, retrieval=ret), backend)
    assert "Its answer: 777.77" in traj.memory_block
    assert traj.answer == "777.77" and traj.gate_ok is False and "gate_unresolved" in traj.fallbacks
    verdict = check_answer(q, "777.77", Evidence.build(q, (), []))
    assert not verdict.ok and any("777.77" in r for r in verdict.reasons)


def test_memory_config_validates():
    with pytest.raises(ConfigError, match="tau"):
        MemoryConfig(tau=1.5)
    with pytest.raises(ConfigError, match="bank_limit"):
        MemoryConfig(bank_limit=-1)
    with pytest.raises(ConfigError, match=r"snapshot_order.*allowed: stratified, insertion"):
        MemoryConfig(snapshot_order="random")
