"""The call journal: replay, resume after a kill, concurrent writers, nothing lost."""

from __future__ import annotations

import json
import multiprocessing as mp
import sqlite3

import pytest

from serving.chat.scripted import ScriptedBackend
from serving.chat.types import ChatRequest
from serving.journal import Journal, JournaledBackend

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def make_requests(n: int, *, tag: str = "q") -> list[ChatRequest]:
    return [
        ChatRequest.simple("tiny-qwen3", f"{tag} {i}", max_tokens=8, json_schema=SCHEMA, call_type="test")
        for i in range(n)
    ]


def numbered(req: ChatRequest) -> str:
    return json.dumps({"n": int(req.messages[-1].content.split()[-1])})


class Boom(RuntimeError):
    pass


class DiesAfter(ScriptedBackend):
    """Raises on the call after ``calls_allowed`` chunks: a run killed half-way."""

    def __init__(self, chunks_allowed: int) -> None:
        super().__init__(default=numbered)
        self.chunks_allowed = chunks_allowed

    def chat(self, requests):
        if self.chunks_allowed == 0:
            raise Boom("killed")
        self.chunks_allowed -= 1
        return super().chat(requests)


def test_replay_returns_identical_results_without_calling(tmp_path):
    reqs = make_requests(10)
    with Journal(tmp_path / "j.sqlite") as j:
        first = JournaledBackend(ScriptedBackend(default=numbered), j).chat(reqs)
        inner = ScriptedBackend(default=numbered)
        jb = JournaledBackend(inner, j)
        second = jb.chat(reqs)
    assert inner.calls == [] and jb.replayed == 10
    assert second == first and all(r.from_journal for r in second)
    assert [r.parsed["n"] for r in second] == list(range(10))


def test_killed_batch_reruns_only_missing_requests(tmp_path):
    reqs = make_requests(20)
    path = tmp_path / "j.sqlite"
    with Journal(path) as j, pytest.raises(Boom):
        JournaledBackend(DiesAfter(chunks_allowed=2), j, chunk_size=4).chat(reqs)
    with Journal(path) as j:
        assert j.count() == 8
        inner = ScriptedBackend(default=numbered)
        out = JournaledBackend(inner, j, chunk_size=4).chat(reqs)
    assert len(inner.calls) == 12
    assert {r.key() for r in inner.calls} == {r.key() for r in reqs[8:]}
    assert [r.parsed["n"] for r in out] == list(range(20))


def test_errors_are_not_journaled_and_are_retried(tmp_path):
    reqs = make_requests(4)
    failing = ScriptedBackend(default=numbered, fail_on=lambda r: r.messages[-1].content.endswith("2"))
    with Journal(tmp_path / "j.sqlite") as j:
        out = JournaledBackend(failing, j).chat(reqs)
        assert out[2].finish_reason == "error" and out[2].is_fallback
        assert j.count() == 3
        inner = ScriptedBackend(default=numbered)
        again = JournaledBackend(inner, j).chat(reqs)
    assert [r.key() for r in inner.calls] == [reqs[2].key()]
    assert again[2].parsed == {"n": 2}


def test_duplicate_requests_in_one_batch_call_the_model_once(tmp_path):
    reqs = make_requests(3) * 2
    inner = ScriptedBackend(default=numbered)
    with Journal(tmp_path / "j.sqlite") as j:
        out = JournaledBackend(inner, j).chat(reqs)
    assert len(inner.calls) == 3 and out[0] == out[3]


def _writer(path: str, tag: str, n: int) -> None:
    with Journal(path, run_id=tag) as j:
        jb = JournaledBackend(ScriptedBackend(default=numbered), j, chunk_size=1)
        jb.chat(make_requests(n, tag=tag))


def test_concurrent_writers_lose_nothing(tmp_path):
    path = str(tmp_path / "j.sqlite")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, f"w{k}", 40)) for k in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with Journal(path) as j:
        assert j.count() == 160
        for k in range(4):
            assert j.count(run_id=f"w{k}") == 40
        summary = {s.call_type: s for s in j.token_summary()}
        assert summary["test"].calls == 160 and summary["test"].fallbacks == 0
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_records_give_an_audit_of_prompts_and_replies(tmp_path):
    with Journal(tmp_path / "j.sqlite", run_id="audit") as j:
        JournaledBackend(ScriptedBackend(default=numbered), j).chat(make_requests(2))
        recs = j.records(run_id="audit")
    assert [r["request"]["messages"][-1]["content"] for r in recs] == ["q 0", "q 1"]
    assert recs[1]["result"]["text"] == '{"n": 1}'


def test_call_usage_shares_each_engine_call_among_its_requests(tmp_path):
    import dataclasses

    from serving.journal import CallUsage

    backend = ScriptedBackend(default=numbered)
    journal = Journal(tmp_path / "j.sqlite")
    first, second = make_requests(3, tag="a"), make_requests(1, tag="b")
    for reqs, wall in ((first, 0.9), (second, 0.5)):
        results = [dataclasses.replace(r, latency_s=wall) for r in backend.chat(reqs)]
        journal.put_many(list(zip(reqs, results)))  # one engine call: one transaction, one latency
    keys = [r.key() for r in first + second]
    usage = journal.call_usage([*keys, "absent"])
    journal.close()
    assert set(usage) == set(keys)
    assert [usage[k].engine_s for k in keys] == pytest.approx([0.3, 0.3, 0.3, 0.5])
    assert all(isinstance(u, CallUsage) and u.call_type == "test" for u in usage.values())
