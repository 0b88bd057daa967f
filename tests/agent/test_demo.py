"""The product demo (``localfin demo``) end to end on the real engine (tiny random Qwen3 here;
``make demo`` runs SmolLM2-135M): Moira with every baseline, the QA demo and the report with its QA
panel in one folder, and a rerun replaying the journals to the same results. Marked slow."""

from __future__ import annotations

import pytest

from bank.embedder import HashingEmbedder


@pytest.mark.slow
def test_the_demo_end_to_end_on_the_real_engine(vllm_backend, tiny_registry, tmp_path) -> None:
    from agent.demo import run_demo
    from agent.qa.demo import QADemoConfig

    kw = {
        "registry": tiny_registry,
        "backend": vllm_backend,
        "embedder": HashingEmbedder(dim=64),
        "qa_config": QADemoConfig(n_train=2, n_test=3, k=2, max_steps=2),
    }
    lines: list[str] = []
    out = tmp_path / "demo"
    res = run_demo(out, "tiny-qwen3", say=lines.append, **kw)
    runs = {p.parent.name for p in (out / "moira" / "runs").glob("*/metrics.json")}
    agent = {f"full-{e}-s{s}" for e in ("no_beta", "beta") for s in (0, 1)}
    assert agent | {"long_short-beta", "equal_weight-no_beta", "eg_z-no_beta", "eg_ddqn-beta-s1"} <= runs
    assert {"finmem-no_beta-s0", "finmem-beta-s1"} <= runs
    html = res.report_html.read_text(encoding="utf-8")
    assert 'id="qa"' in html and "Base+FT+FM" in html and "FinMem" in html
    assert res.report.n_runs == len(runs) and (out / "demo.json").is_file()
    assert lines[-1].startswith("report: ") and len(lines) < 15
    again = run_demo(out, "tiny-qwen3", **kw)
    # the random tiny model's engine errors (prompts past its context) are never journaled and
    # are asked again; every answered call replays (the SmolLM2 demo's rerun sends none)
    first, second = res.moira.experiment, again.moira.experiment
    assert second.model_calls < first.model_calls and second.replayed > 0
    assert [r["metrics"] for r in second.runs] == [r["metrics"] for r in first.runs]
    assert [b["metrics"] for b in second.baselines] == [b["metrics"] for b in first.baselines]


def test_the_demo_engine_starts_at_the_first_call_not_at_all_on_a_full_replay() -> None:
    from agent.demo import _LazyEngine
    from serving.scripted import ScriptedBackend
    from serving.types import ChatRequest, Message

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
