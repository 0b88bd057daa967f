"""FinAcumen's stages sharded and gathered (agent/qa/cluster), without Ray: the shards run one
after another in this process (serving.cluster.shards.LocalRunner, the same bodies and keeper
as on a cluster) against the scripted model. The gathered run folder equals the one-process
folder (trace, scores, journal keys; the bank's entries in order), and a shard stopped
mid-way (its node lost) resumes from the keeper's journal without sending a journaled call
again. The real two-node cluster is tested under ``slow`` (test_qa_cluster.py)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from qa_fakes import Calculator, change_items, num_scorer, qa_backend

from agent.qa.cluster.driver import QACluster
from agent.qa.cluster.tasks import Servers
from agent.qa.evaluation.bank_build import BankBuildConfig, build_bank
from agent.qa.evaluation.evaluate import EvalConfig, evaluate
from agent.qa.memory.memory import ExperienceMemory
from agent.qa.solver.react import QASolver, SolverConfig
from bank.embedder import HashingEmbedder
from bank.retrieval import Retriever
from bank.store import ExperienceBank
from serving.cluster.shards import LocalRunner
from serving.errors import BackendError

TOOLS = lambda q: [Calculator()]  # noqa: E731
#: per-run figures that are times, or counts of this invocation's calls
_VOLATILE = {"wall_s", "engine_s", "latency_s", "model_latency_s", "run_dir", "mean_engine_s", "mean_wall_s",
             "run_wall_s"}  # fmt: skip


def _stable(x):
    if isinstance(x, dict):
        return {k: _stable(v) for k, v in x.items() if k not in _VOLATILE}
    if isinstance(x, list):
        return [_stable(v) for v in x]
    return x


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _undated(bank: ExperienceBank) -> list:
    """The bank's entries without the time each was added."""
    return [replace(e, created_at=0.0) for e in bank.get(list(range(len(bank))))]


def _keys(journal: Path) -> set[str]:
    with sqlite3.connect(journal) as db:
        return {k for (k,) in db.execute("SELECT key FROM calls")}


class _Sent:
    """The scripted model; every request key sent is recorded in ``log``; with ``die_after``,
    the ``die_after``-th engine call of the first shard that reaches it fails as a lost node's
    does (once)."""

    def __init__(self, log: list[str], die_after: int | None = None) -> None:
        self.log, self.die_after, self.died = log, die_after, False

    def __call__(self, model: str):
        owner = self

        class _B:
            name = "scripted"

            def __init__(self) -> None:
                self.inner, self.calls = qa_backend(), 0

            def chat(self, requests):
                self.calls += 1
                if owner.die_after is not None and not owner.died and self.calls == owner.die_after:
                    owner.died = True
                    raise BackendError("node lost (test)")
                owner.log.extend(r.key() for r in requests)
                return self.inner.chat(requests)

            def close(self) -> None:
                return None

        return _B()


def _cluster(base: Path, factory: _Sent, shards: int = 3) -> QACluster:
    return QACluster(
        LocalRunner(base / ".ray-tasks", own={}), base, Servers("m", factory=factory), shards=shards
    )


@pytest.fixture()
def bank(tmp_path):
    emb = HashingEmbedder(dim=256)
    with ExperienceBank.open(tmp_path / "bank") as b:
        build_bank(
            change_items(4, "train", start=10),
            QASolver(SolverConfig(model="m"), tools=TOOLS),
            qa_backend(),
            b,
            emb,
            tmp_path / "build",
            config=BankBuildConfig(k=2),
            scorer=num_scorer,
        )
        yield b, emb


def test_a_sharded_evaluation_writes_the_one_process_folder(tmp_path, bank):
    b, emb = bank
    items = change_items(7, "test")
    cfg = EvalConfig("ft_fm", SolverConfig(model="m"), max_active=2)
    memory = ExperienceMemory(Retriever(b, emb))
    ref = evaluate(
        items, qa_backend(), tmp_path / "one" / "run", cfg, tools=TOOLS, memory=memory, scorer=num_scorer
    )
    sent: list[str] = []
    qc = _cluster(tmp_path / "many", _Sent(sent))
    got = qc.evaluate(
        items, None, tmp_path / "many" / "run", cfg, tools=TOOLS, memory=memory, scorer=num_scorer
    )
    a, g = tmp_path / "one" / "run", tmp_path / "many" / "run"
    assert _stable(_rows(a / "trace.jsonl")) == _stable(_rows(g / "trace.jsonl"))
    assert _stable(got.__dict__) == _stable(ref.__dict__)  # model calls included: the shards'
    assert _stable(json.loads((g / "scores.json").read_text())) == _stable(ref.__dict__)
    assert _keys(a / "journal.sqlite") == _keys(g / "journal.sqlite") == set(sent)
    assert len(sent) == ref.model_calls and ref.memory_hit_rate == 1.0  # the memory was used
    # three shards, each with its own journal, items dealt round-robin
    shards = sorted((tmp_path / "many" / ".ray-tasks" / "run").iterdir())
    assert [p.name for p in shards] == ["eval-s0", "eval-s1", "eval-s2"]
    assert sum(len(_keys(p / "journal.sqlite")) for p in shards) == len(sent)
    stage = qc.record()["stages"][0]
    assert stage["stage"] == "eval" and [s["calls"] for s in stage["shards"]] == [
        len(_keys(p / "journal.sqlite")) for p in shards
    ]
    # every call's engine share reached the run folder's timings
    assert set(json.loads((g / "timings.json").read_text())["shares"]) == set(sent)


def test_a_sharded_bank_build_adds_the_entries_of_the_one_process_build_in_its_order(tmp_path):
    items = change_items(7, "train", gold=lambda i: 200.0 if i % 3 else 1.0)  # successes and failures
    cfg = BankBuildConfig(k=2, items_per_wave=3)
    solver = QASolver(SolverConfig(model="m"), tools=TOOLS)
    emb = HashingEmbedder(dim=64)
    with (
        ExperienceBank.open(tmp_path / "one" / "bank") as b1,
        ExperienceBank.open(tmp_path / "many" / "bank") as b2,
    ):
        ref = build_bank(
            items, solver, qa_backend(), b1, emb, tmp_path / "one" / "run", config=cfg, scorer=num_scorer
        )
        sent: list[str] = []
        qc = _cluster(tmp_path / "many", _Sent(sent))
        got = qc.build_bank(
            items, solver, None, b2, emb, tmp_path / "many" / "run", config=cfg, scorer=num_scorer
        )
        assert list(b1.sources) == list(b2.sources) == [it.item_id for it in items]
        assert _undated(b1) == _undated(b2)
        assert (b1.vectors() == b2.vectors()).all()
    assert got.waves == ref.waves == 3 and got.entries_added == ref.entries_added == 7
    assert (got.model_calls, got.replayed) == (ref.model_calls, 0)
    one, many = tmp_path / "one" / "run", tmp_path / "many" / "run"
    assert _stable(_rows(one / "trace.jsonl")) == _stable(_rows(many / "trace.jsonl"))
    assert _keys(one / "journal.sqlite") == _keys(many / "journal.sqlite") == set(sent)


def test_a_shard_lost_mid_way_resumes_from_the_keeper_without_sending_a_journaled_call_again(tmp_path):
    items = change_items(6, "test")
    cfg = EvalConfig("ft", SolverConfig(model="m"), chunk_size=1)
    ref = evaluate(items, qa_backend(), tmp_path / "one", cfg, tools=TOOLS, scorer=num_scorer)
    sent: list[str] = []
    dying = _Sent(sent, die_after=3)
    with pytest.raises(BackendError, match="node lost"):
        _cluster(tmp_path / "many", dying, shards=2).evaluate(
            items, None, tmp_path / "many" / "run", cfg, tools=TOOLS, scorer=num_scorer
        )
    kept = set().union(*(_keys(j) for j in (tmp_path / "many" / ".ray-tasks").glob("**/journal.sqlite")))
    assert kept and kept == set(sent)  # every call answered before the loss is with the keeper
    before = len(sent)
    # the shard runs again (as Ray runs a lost task again): the keeper's journal is replayed
    got = _cluster(tmp_path / "many", dying, shards=2).evaluate(
        items, None, tmp_path / "many" / "run", cfg, tools=TOOLS, scorer=num_scorer
    )
    assert not kept & set(sent[before:])  # none of them sent again
    assert len(sent) == len(set(sent)) == ref.model_calls
    # the run's calls, those of the lost attempt included, as one uninterrupted process counts them
    assert got.accuracy == ref.accuracy and (got.model_calls, got.replayed) == (ref.model_calls, 0)
    assert _keys(tmp_path / "one" / "journal.sqlite") == _keys(tmp_path / "many" / "run" / "journal.sqlite")


def _judged_items() -> list:
    from agent.qa.core.items import Gold, QAItem, Question

    return [
        QAItem(
            Question(f"t-{i}", "fintmmbench", f"Which company closed higher in case t-{i}?"), Gold(g, "free")
        )
        for i, g in enumerate(["Zyqorp 7713", "Wexalin 4409", "Quorvane 5581", "Brinel 1200", "Caskor 88"])
    ]


def _judged_solver():
    from serving.chat.scripted import Rule, ScriptedBackend

    def reply(req) -> str:
        q = next(m.content for m in req.messages if m.role == "user")
        return "I read it.\nAnswer: " + ("ZYQ" if "t-0?" in q or "t-3?" in q else "other")

    return ScriptedBackend([Rule("qa_base", reply)])


def _judge(model: str = "judge-m"):
    from serving.chat.scripted import Rule, ScriptedBackend

    def reply(req) -> str:
        user = req.messages[-1].content
        return json.dumps(
            {"verdict": "correct" if "ZYQ" in user or "Zyq" in user else "incorrect", "reason": "r"}
        )

    return ScriptedBackend([Rule("judge", reply)])


def test_a_sharded_judge_pass_and_judge_check_write_the_one_process_verdicts(tmp_path):
    from agent.qa.scoring.judge_check import JUDGE_CHECK_FILE, JUDGE_CHECK_JOURNAL, judge_check
    from agent.qa.scoring.judge_pass import JUDGE_JOURNAL, JUDGE_SCORES, deferred_scorer, judge_run

    items = _judged_items()
    cfg = EvalConfig("base", SolverConfig(model="m"))
    for where in ("one", "many"):
        evaluate(items, _judged_solver(), tmp_path / where / "run", cfg, scorer=deferred_scorer())
    ref = judge_run(tmp_path / "one" / "run", items, _judge(), "judge-m")
    qc = QACluster(LocalRunner(tmp_path / "many" / ".ray-tasks", own={}), tmp_path / "many",
                   Servers("m", factory=_judge), shards=2)  # fmt: skip
    got = qc.judge_run(tmp_path / "many" / "run", items, None, "judge-m")
    assert _stable(got.__dict__) == _stable(ref.__dict__) and ref.correct == 2
    one, many = (json.loads((tmp_path / w / "run" / JUDGE_SCORES).read_text()) for w in ("one", "many"))
    assert _stable(one) == _stable(many)
    assert _keys(tmp_path / "one" / "run" / JUDGE_JOURNAL) == _keys(tmp_path / "many" / "run" / JUDGE_JOURNAL)

    ref_c = judge_check(items, _judge(), "judge-m", tmp_path / "one" / "check")
    got_c = qc.judge_check(items, None, "judge-m", tmp_path / "many" / "check")
    assert _stable(got_c.__dict__ | {"out_dir": ""}) == _stable(ref_c.__dict__ | {"out_dir": ""})
    a, b = (json.loads((tmp_path / w / "check" / JUDGE_CHECK_FILE).read_text()) for w in ("one", "many"))
    assert a["verdicts"] == b["verdicts"] and a["gold_right"] == b["gold_right"]
    check = JUDGE_CHECK_JOURNAL
    assert _keys(tmp_path / "one" / "check" / check) == _keys(tmp_path / "many" / "check" / check)
    assert [s["stage"] for s in qc.record()["stages"]] == ["judge", "judge_check"]


def _finmmr_items() -> list:
    from agent.qa.core.items import Gold, QAItem, Question

    return [
        QAItem(Question(f"f-{i}", "finmmr", f"What is the ratio in case f-{i}?"), Gold(g, "number"))
        for i, g in enumerate([1.25, 3.5, 7.0, 0.4])
    ]


def _finmmr_solver():
    from serving.chat.scripted import Rule, ScriptedBackend

    def reply(req) -> str:
        q = next(m.content for m in req.messages if m.role == "user")
        return "Worked it out.\nAnswer: " + ("1.25" if "f-0?" in q else "3.5" if "f-1?" in q else "9")

    return ScriptedBackend([Rule("qa_base", reply)])


def _extractor(model: str = "x-m"):
    import re

    from serving.chat.scripted import Rule, ScriptedBackend

    def reply(req) -> str:
        found = re.findall(r"Answer: ([0-9.]+)", req.messages[-1].content)
        return json.dumps({"answer": found[-1] if found else "None"})

    return ScriptedBackend([Rule("answer_extract", reply)])


def test_a_sharded_extraction_pass_writes_the_one_process_answers_and_verdicts(tmp_path):
    from agent.qa.scoring.extract_pass import EXTRACT_JOURNAL, EXTRACT_SCORES, extract_run
    from agent.qa.scoring.judge_pass import deferred_scorer
    from agent.qa.scoring.scorers import NamedScorer

    items = _finmmr_items()
    cfg = EvalConfig("base", SolverConfig(model="m"))
    scorer = deferred_scorer(NamedScorer({"finmmr": "official"}))
    for where in ("one", "many"):
        evaluate(items, _finmmr_solver(), tmp_path / where / "run", cfg, scorer=scorer)
    ref = extract_run(tmp_path / "one" / "run", items, _extractor(), "x-m")
    qc = QACluster(LocalRunner(tmp_path / "many" / ".ray-tasks", own={}), tmp_path / "many",
                   Servers("m", factory=_extractor), shards=3)  # fmt: skip
    got = qc.extract_run(tmp_path / "many" / "run", items, None, "x-m")
    assert _stable(got.__dict__) == _stable(ref.__dict__) and ref.correct == 2 and ref.model_calls == 4
    one, many = (json.loads((tmp_path / w / "run" / EXTRACT_SCORES).read_text()) for w in ("one", "many"))
    assert _stable(one) == _stable(many)
    journal = EXTRACT_JOURNAL
    assert _keys(tmp_path / "one" / "run" / journal) == _keys(tmp_path / "many" / "run" / journal)
    assert [len(s["shards"]) for s in qc.record()["stages"]] == [3]
