"""bench.agent: skips cleanly while an agent is missing; token figures come from a real journal."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from bench import agent
from bench.records import RecordWriter, read_records
from localfin.errors import ConfigError


def test_missing_agents_are_skipped_not_faked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(agent.ENTRIES, "moira", ("agent.no_such_module", "bench_run", "step"))
    monkeypatch.setitem(agent.ENTRIES, "finacumen", ("agent.qa", "no_such_function", "question"))
    assert agent.main([]) == 0
    out = capsys.readouterr()
    recs = list(read_records(out.out.splitlines()))
    assert [(r.case, r.metric, r.value) for r in recs] == [
        ("moira", "status", "skipped"),
        ("finacumen", "status", "skipped"),
    ]
    assert "skipped: moira benchmark: agent.no_such_module is not importable yet" in out.err
    assert "skipped: finacumen benchmark: agent.qa.no_such_function does not exist yet" in out.err


def test_bad_agent_name_is_a_usage_error() -> None:
    with pytest.raises(ConfigError, match="finmem"):
        agent.main(["--agents", "moira,finmem"])


def test_token_records_from_a_journal(tmp_path: Path) -> None:
    from serving.journal import Journal, JournaledBackend
    from serving.scripted import ScriptedBackend
    from serving.types import ChatRequest

    path = tmp_path / "calls.sqlite"
    with Journal(path) as journal:
        backend = JournaledBackend(ScriptedBackend(default='{"a": 1}'), journal)
        reqs = [
            ChatRequest.simple("m", f"q{i}", max_tokens=16, call_type=("direction", "reflection")[i % 2])
            for i in range(3)
        ]
        backend.chat(reqs)
    w = RecordWriter("agent", stream=io.StringIO())
    totals = agent.token_records(w, "moira", path, units=6, unit="finalized trading step", size=1)
    by_type = {r.params["call_type"]: r for r in w.records if r.metric == "tokens_by_call_type"}
    assert set(by_type) == {"direction", "reflection"} and by_type["direction"].params["calls"] == 2
    per = next(r for r in w.records if r.metric == "tokens_per_unit")
    assert totals["calls"] == 3
    assert per.value == pytest.approx((totals["prompt_tokens"] + totals["completion_tokens"]) / 6)
    assert per.headline and per.params["work_unit"] == "finalized trading step"
