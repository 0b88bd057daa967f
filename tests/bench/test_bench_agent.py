"""bench.agents.measure: an agent that cannot run is skipped, not faked; token figures come from a
real journal."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from bench.agents import measure as agent
from bench.records import RecordWriter, read_records
from localfin.errors import ConfigError


def test_bad_agent_name_is_a_usage_error() -> None:
    with pytest.raises(ConfigError, match="finmem"):
        agent.main(["--agents", "moira,finmem"])


def test_token_records_from_a_journal(tmp_path: Path) -> None:
    from serving.chat.scripted import ScriptedBackend
    from serving.chat.types import ChatRequest
    from serving.journal import Journal, JournaledBackend

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


class _Engine:
    """A scripted stand-in for the shared engine: counts prefix-cache resets and batches."""

    name = "scripted"

    def __init__(self) -> None:
        from serving.chat.scripted import ScriptedBackend

        self.inner = ScriptedBackend(default='{"answer": "x"}')
        self.resets = 0
        self.batches: list[int] = []

    def chat(self, requests):
        self.batches.append(len(requests))
        return self.inner.chat(requests)

    def reset_prefix_cache(self) -> bool:
        self.resets += 1
        return True

    def close(self) -> None:
        pass


def _fake_entry(walls: dict[str, float], seen: list):
    """An entry point honouring the contract: journals ``2 * size`` calls through the engine it
    is given and reports the wall time ``walls[mode]``."""
    from dataclasses import dataclass

    from serving.chat.types import ChatRequest
    from serving.journal import Journal, JournaledBackend

    @dataclass(frozen=True)
    class Run:
        journal_path: Path
        units: int
        wall_s: float

    def entry(kind, model, mode, size, out_dir, *, backend=None):
        seen.append((mode, backend))
        path = Path(out_dir) / "journal.sqlite"
        with Journal(path) as journal:
            jb = JournaledBackend(backend, journal)
            for call_type in ("plan", "act"):
                jb.chat(
                    [
                        ChatRequest.simple(model, f"{call_type} {i}", max_tokens=8, call_type=call_type)
                        for i in range(size)
                    ]
                )
        return Run(path, size, walls[mode])

    return entry


def test_agent_part_measures_both_modes_on_one_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = _Engine()
    seen: list = []
    entry = _fake_entry({"lockstep": 2.0, "sequential": 5.0}, seen)
    monkeypatch.setattr(
        agent, "resolve_entry", lambda a: (entry, "") if a == "finacumen" else (None, "absent")
    )
    w = RecordWriter("agent", stream=io.StringIO())
    assert agent.main(["--qa-size", "3"], writer=w, backend=engine) == 0
    # one engine for both modes, warmed up before, its prefix cache emptied before each mode
    assert [m for m, _ in seen] == ["lockstep", "sequential"] and all(b is engine for _, b in seen)
    assert engine.resets == 2 and engine.batches[:2] == [1, 4]
    recs = {(r.case, r.metric, r.params.get("mode"), r.params.get("call_type")): r for r in w.records}
    assert recs[("moira", "status", None, None)].value == "skipped"
    speed = recs[("finacumen", "lockstep_wall_time", None, None)]
    assert speed.value == 2.0 and speed.reference["value"] == 5.0 and speed.ratio == pytest.approx(2.5)
    assert speed.headline
    per = recs[("finacumen", "tokens_per_unit", "lockstep", None)]
    plan = recs[("finacumen", "tokens_by_call_type", "lockstep", "plan")]
    act = recs[("finacumen", "tokens_by_call_type", "lockstep", "act")]
    assert plan.params["calls"] == act.params["calls"] == 3
    assert per.value == pytest.approx((plan.value + act.value) / 3) and per.headline
    assert not recs[("finacumen", "tokens_per_unit", "sequential", None)].headline


def test_a_failing_agent_is_reported_and_the_other_still_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("engine fell over")

    good = _fake_entry({"lockstep": 1.0, "sequential": 1.5}, [])
    monkeypatch.setattr(agent, "resolve_entry", lambda a: ((broken if a == "moira" else good), ""))
    w = RecordWriter("agent", stream=io.StringIO())
    assert agent.main([], writer=w, backend=_Engine()) == 1
    failed = [r for r in w.records if r.value == "failed"]
    assert [(r.case, r.params["reason"]) for r in failed] == [
        ("moira", "lockstep run: RuntimeError: engine fell over")
    ]
    assert any(r.case == "finacumen" and r.metric == "lockstep_wall_time" for r in w.records)
    assert "failed: moira benchmark: lockstep run: RuntimeError: engine fell over" in capsys.readouterr().err


def test_summary_shows_agent_rows_and_their_status(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.suite.summary import summary_markdown

    good = _fake_entry({"lockstep": 4.0, "sequential": 6.0}, [])

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(agent, "resolve_entry", lambda a: ((broken if a == "moira" else good), ""))
    w = RecordWriter("agent", stream=io.StringIO())
    agent.main(["--qa-size", "2"], writer=w, backend=_Engine())
    table = summary_markdown(w.records, command="localfin bench agent")
    per = next(r for r in w.records if r.metric == "tokens_per_unit" and r.params["mode"] == "lockstep")
    assert f"| agent | finacumen: tokens per question | {per.value:,.0f} |" in table
    assert (
        "| agent | finacumen: wall time, lock-step vs the same 2-question set one after another | 4 s |"
        in table
    )
    assert "| 6 s (the same runs one after another) | **1.5×** |" in table
    assert "| agent | moira | failed | | | lockstep run: RuntimeError: boom | |" in table
    plan = next(
        r
        for r in w.records
        if r.metric == "tokens_by_call_type"
        and r.params["call_type"] == "plan"
        and r.params["mode"] == "lockstep"
    )
    p = plan.params
    assert (
        f"| finacumen | plan | 2 | {p['prompt_tokens']:,} | {p['completion_tokens']:,} "
        f"| {plan.value / 2:,.0f} per question | 0 |" in table
    )
    # the sequential run's call types are not a second table
    assert table.count("| finacumen | plan |") == 1


def test_size_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="--qa-size=0; allowed: >= 1"):
        agent.main(["--qa-size", "0"])


@pytest.mark.slow  # heavy on 2 cores; the default suite measures the part on a stand-in engine
def test_finacumen_part_on_the_real_tiny_engine(vllm_backend, capsys: pytest.CaptureFixture[str]) -> None:
    """The real entry point on the session's real engine (tiny random Qwen3): both modes run,
    every figure comes from their journals."""
    assert agent.main(["--tiny", "--agents", "finacumen", "--qa-size", "2"], backend=vllm_backend) == 0
    # the session engine was started by the fixture, with vLLM's own logging on stdout
    out = [line for line in capsys.readouterr().out.splitlines() if line.startswith('{"benchmark"')]
    recs = list(read_records(out))
    walls = {r.params["mode"]: r for r in recs if r.metric == "wall_time" and r.case == "finacumen"}
    assert set(walls) == {"lockstep", "sequential"} and all(r.params["units"] == 2 for r in walls.values())
    assert all(r.params["prefix_cache_reset"] for r in walls.values())
    types = [r for r in recs if r.metric == "tokens_by_call_type" and r.params["mode"] == "lockstep"]
    assert types and all(r.params["calls"] > 0 and r.value > 0 for r in types)
    speed = next(r for r in recs if r.metric == "lockstep_wall_time")
    assert speed.ratio and speed.ratio > 0 and speed.reference["value"] == walls["sequential"].value
