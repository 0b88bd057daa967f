"""Bank construction: training items only, K seeded trajectories per item in one batch,
findings only from successes and cautions only from failures, resumable."""

from __future__ import annotations

import pytest
from qa_fakes import Calculator, change_items, num_scorer, qa_backend

from agent.qa.evaluation.bank_build import BankBuildConfig, build_bank
from agent.qa.solver.react import QASolver, SolverConfig
from bank.embedder import HashingEmbedder
from bank.store import ExperienceBank
from localfin.errors import ConfigError


def _solver() -> QASolver:
    return QASolver(SolverConfig(model="m"), tools=lambda q: [Calculator()])


def test_bank_is_built_from_training_items_with_k_seeded_trajectories(tmp_path):
    items = change_items(3, "train")
    backend = qa_backend()
    sizes: list[int] = []
    orig = backend.chat
    backend.chat = lambda reqs: (sizes.append(len(reqs)), orig(reqs))[1]  # type: ignore[method-assign]
    with ExperienceBank.open(tmp_path / "bank") as bank:
        rep = build_bank(
            items,
            _solver(),
            backend,
            bank,
            HashingEmbedder(),
            tmp_path / "run",
            config=BankBuildConfig(k=4, temperature=0.8),
            scorer=num_scorer,
        )
        assert rep.entries_added == 3 and len(bank) == 3
        assert list(bank.sources) == [it.item_id for it in items]
        entries = bank.get([0, 1, 2])
    # every scripted trajectory is right: findings only, no cautions
    assert all(e.findings and not e.cautions for e in entries)
    assert rep.success_rate == 1.0
    # first round: 3 items x 4 plans in one batch, with seeds 0..3 and temperature 0.8
    assert sizes[0] == 12
    first = backend.calls[:12]
    assert sorted({r.seed for r in first}) == [0, 1, 2, 3] and {r.temperature for r in first} == {0.8}
    summaries = [r for r in backend.calls if r.call_type == "bank_summarize"]
    assert len(summaries) == 3 and all(
        r.json_schema["properties"]["cautions"]["maxItems"] == 0 for r in summaries
    )
    # the summariser (training time) sees the gold answer
    assert "Correct answer: 200.0" in summaries[0].messages[-1].content
    assert (tmp_path / "run" / "journal.sqlite").exists() and (tmp_path / "run" / "manifest.json").exists()


def test_failed_trajectories_give_cautions_only(tmp_path):
    items = change_items(2, "train", gold=lambda i: 123456.0)  # the scripted agent never finds it
    with ExperienceBank.open(tmp_path / "bank") as bank:
        rep = build_bank(
            items,
            _solver(),
            qa_backend(),
            bank,
            HashingEmbedder(),
            tmp_path / "run",
            config=BankBuildConfig(k=2),
            scorer=num_scorer,
        )
        entries = bank.get([0, 1])
    assert rep.success_rate == 0.0
    assert all(e.cautions and not e.findings for e in entries)


def test_test_items_never_write_to_the_bank(tmp_path):
    items = change_items(2, "train") + change_items(1, "test")
    with ExperienceBank.open(tmp_path / "bank") as bank:
        with pytest.raises(ConfigError, match=r"training items only.*'test-0'"):
            build_bank(
                items, _solver(), qa_backend(), bank, HashingEmbedder(), tmp_path / "run", scorer=num_scorer
            )
        assert len(bank) == 0


def test_rerun_skips_items_already_in_the_bank(tmp_path):
    items = change_items(2, "dev")
    cfg = BankBuildConfig(k=2)
    with ExperienceBank.open(tmp_path / "bank") as bank:
        build_bank(
            items[:1],
            _solver(),
            qa_backend(),
            bank,
            HashingEmbedder(),
            tmp_path / "run",
            config=cfg,
            scorer=num_scorer,
        )
        backend = qa_backend()
        rep = build_bank(
            items,
            _solver(),
            backend,
            bank,
            HashingEmbedder(),
            tmp_path / "run",
            config=cfg,
            scorer=num_scorer,
        )
        assert rep.skipped_in_bank == 1 and rep.entries_added == 1 and len(bank) == 2
        assert all(
            "segment 0" not in r.messages[-1].content for r in backend.calls if r.call_type == "qa_solve"
        )


def test_build_config_validates():
    with pytest.raises(ConfigError, match="temperature"):
        BankBuildConfig(temperature=0.0)
    with pytest.raises(ConfigError, match="k=0"):
        BankBuildConfig(k=0)


class _Killed(RuntimeError):
    pass


class _KillAfter:
    """Passes batches to ``inner`` until ``calls`` requests have gone through, then raises at the
    start of the next batch (a build stopped between two engine batches)."""

    def __init__(self, inner, calls: int) -> None:
        self.inner, self.left, self.name = inner, calls, "kill-after"

    def chat(self, requests):
        if self.left <= 0:
            raise _Killed("stopped")
        self.left -= len(requests)
        return self.inner.chat(requests)

    def close(self) -> None:
        return None


def _entries(bank) -> list[tuple]:
    return [
        (e.source_id, e.dataset, e.findings, e.cautions, e.answer) for e in bank.get(list(range(len(bank))))
    ]


def test_a_stopped_build_keeps_its_committed_waves_and_resumes_to_the_same_bank(tmp_path):
    items = change_items(6, "train")
    cfg = BankBuildConfig(k=2, items_per_wave=2)
    emb = HashingEmbedder()
    with ExperienceBank.open(tmp_path / "whole") as bank:
        whole = build_bank(
            items, _solver(), qa_backend(), bank, emb, tmp_path / "w", config=cfg, scorer=num_scorer
        )
        want = _entries(bank)
    assert whole.waves == 3 and len(want) == 6
    # one wave is 2 items x (2 trajectories x 3 calls + 1 summary) = 14 calls; stop inside wave 2
    with ExperienceBank.open(tmp_path / "bank") as bank:
        with pytest.raises(_Killed):
            build_bank(items, _solver(), _KillAfter(qa_backend(), 20), bank, emb, tmp_path / "run",
                       config=cfg, scorer=num_scorer)  # fmt: skip
        assert list(bank.sources) == [it.item_id for it in items[:2]]  # wave 1 committed, not lost
    with ExperienceBank.open(tmp_path / "bank") as bank:  # reopened as a new process would
        backend = qa_backend()
        rep = build_bank(
            items, _solver(), backend, bank, emb, tmp_path / "run", config=cfg, scorer=num_scorer
        )
        assert _entries(bank) == want
    assert rep.skipped_in_bank == 2 and rep.entries_added == 4
    assert rep.replayed > 0  # the stopped wave's calls came back from the journal
    assert not any("segment 0" in r.messages[-1].content or "segment 1" in r.messages[-1].content
                   for r in backend.calls)  # fmt: skip
    import json

    trace = [json.loads(x) for x in (tmp_path / "run" / "trace.jsonl").read_text().splitlines()]
    assert sorted(r["item_id"] for r in trace) == sorted(it.item_id for it in items)


def test_an_entry_stores_its_training_items_gold_answer(tmp_path):
    items = change_items(1, "train")
    with ExperienceBank.open(tmp_path / "bank") as bank:
        build_bank(items, _solver(), qa_backend(), bank, HashingEmbedder(), tmp_path / "run",
                   config=BankBuildConfig(k=1), scorer=num_scorer)  # fmt: skip
        (entry,) = bank.get([0])
    assert entry.answer == "200.0" and entry.question == items[0].question.text


def _judged_items(n: int) -> list:
    from agent.qa.core.items import Gold, QAItem, Question

    return [
        QAItem(Question(f"tmm-{i}", "fintmmbench", f"Which stock closed higher in week {i}?"),
               Gold("ZYQ", "free"), split="train")
        for i in range(n)
    ]  # fmt: skip


def _lessons(req) -> str:
    import json

    props = req.json_schema["properties"]
    return json.dumps(
        {
            "findings": ["Check the ticker."][: props["findings"]["maxItems"]],
            "cautions": ["Read the week."][: props["cautions"]["maxItems"]],
        }
    )


def _says_by_seed(req) -> str:
    """Plan, then a final answer that depends on the trajectory's seed (seed 0 right)."""
    import json

    if "plan" in req.json_schema.get("properties", {}):
        return json.dumps({"inputs": "a", "experience": "b", "plan": "c"})
    answer = "ZYQ" if req.seed == 0 else "WEX"
    return json.dumps({"thought": "t", "action": "final_answer", "args": {"answer": answer}})


def _verdict(req) -> str:
    import json

    ok = "Candidate answer: ZYQ" in req.messages[-1].content
    return json.dumps({"verdict": "correct" if ok else "incorrect", "reason": "r"})


def test_a_judged_source_is_scored_by_the_judge_model_batched_and_journaled(tmp_path):
    import sqlite3

    from agent.qa.evaluation.programs import ByModel
    from serving.chat.scripted import Rule, ScriptedBackend

    solver_backend = ScriptedBackend([Rule("bank_summarize", _lessons), Rule("qa_solve", _says_by_seed)])
    judge = ScriptedBackend([Rule("judge", _verdict)])
    sizes: list[int] = []
    orig = judge.chat
    judge.chat = lambda reqs: (sizes.append(len(reqs)), orig(reqs))[1]  # type: ignore[method-assign]
    routed = ByModel(solver_backend, {"judge-m": judge})
    solver = QASolver(SolverConfig(model="m", max_steps=2))
    with ExperienceBank.open(tmp_path / "bank") as bank:
        rep = build_bank(
            _judged_items(2), solver, routed, bank, HashingEmbedder(), tmp_path / "run",
            config=BankBuildConfig(k=2), judge_model="judge-m",
        )  # fmt: skip
        entries = bank.get([0, 1])
    assert sizes == [4]  # both items' 2 trajectories judged in one batch
    assert all(
        r.model == "judge-m" and "Reference answer: ZYQ" in r.messages[-1].content for r in judge.calls
    )
    row = rep.by_source["fintmmbench"]
    assert (row["scored_by"], row["trajectories"], row["correct"]) == ("judge judge-m", 4, 2)
    assert all(e.findings and e.cautions for e in entries)  # one right, one wrong trajectory each
    con = sqlite3.connect(tmp_path / "run" / "journal.sqlite")
    assert {r[0] for r in con.execute("SELECT call_type FROM calls")} == {
        "qa_solve",
        "judge",
        "bank_summarize",
    }
    con.close()


def test_a_source_whose_scorer_cannot_run_is_refused_before_any_model_call(tmp_path):
    def broken(dataset, gold, prediction):
        raise KeyError("no rule")

    def contrary(dataset, gold, prediction):
        from agent.qa.core.item_score import ItemScore

        return ItemScore(False, 0.0, "always wrong")

    cases = [
        (_judged_items(1), {}, r"'fintmmbench' \(fintmmbench\) is scored by a judge model and none"),
        (
            change_items(1, "train"),
            {"scorer": broken},
            r"'demo': its scorer \(broken\) cannot score item 'train-0'",
        ),
        (
            change_items(1, "train"),
            {"scorer": contrary},
            r"scores the gold answer of item 'train-0' as wrong",
        ),
    ]
    for items, kw, msg in cases:
        backend = qa_backend()
        with ExperienceBank.open(tmp_path / "bank") as bank:
            with pytest.raises(ConfigError, match=msg):
                build_bank(items, _solver(), backend, bank, HashingEmbedder(), tmp_path / "run", **kw)
            assert len(bank) == 0
        assert backend.calls == []
