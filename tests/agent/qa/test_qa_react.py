"""The ReAct loop on a scripted backend: tool calls, unusable replies, tool crashes, gate
rejections and recovery, the step limit, lockstep batching, and the Base variant."""

from __future__ import annotations

import json
import re

import pytest
from qa_fakes import Calculator, Crasher, act, final, scripted_solver, turn_of

from agent.qa.core.items import Question
from agent.qa.solver.react import QASolver, SolverConfig
from localfin.errors import ConfigError
from serving.chat.lockstep import run_lockstep, run_one
from serving.chat.scripted import Rule, ScriptedBackend

CONTEXT = "Net sales (in millions)\n| | 2019 | 2018 |\n| Total sales | $1,496.5 | $1,202.9 |"
Q = Question("q1", "demo", "What is the percentage change in total sales from 2018 to 2019?", context=CONTEXT)
Q_SALES = Question("q2", "demo", "What were total sales in 2019?", context=CONTEXT)  # a text answer
EXPR = "(1496.5-1202.9)/1202.9*100"  # 24.407681...


def solver(tools=("calc",), **cfg) -> tuple[QASolver, list]:
    made: list = []

    def factory(question):
        ts = [Calculator() if n == "calc" else Crasher() for n in tools]
        made.extend(ts)
        return ts

    return QASolver(SolverConfig(model="m", **cfg), tools=factory), made


def test_tool_call_then_final_answer_passes_the_gate():
    s, made = solver()
    backend = scripted_solver([act("calc", expr=EXPR), final("24.41%")])
    traj = run_one(s.solve(Q), backend)
    assert traj.answer == "24.41%" and traj.gate_ok is True and traj.fallbacks == ()
    assert [st.kind for st in traj.steps] == ["plan", "action", "action"]
    assert traj.steps[1].action == "calc" and traj.steps[1].tool_ok is True
    assert traj.steps[1].observation.startswith("24.40768")
    assert traj.tool_steps == 1 and made[0].calls == [{"expr": EXPR}] and made[0].closed
    # the tool output reached the model in the next request
    assert "Output of calc:\n24.40768" in backend.calls[2].messages[-1].content
    # temperature 0 and a schema on every call; the action schema offers exactly calc + final_answer
    assert all(r.temperature == 0.0 and r.json_schema is not None for r in backend.calls)
    names = [alt["properties"]["action"]["enum"][0] for alt in backend.calls[1].json_schema["anyOf"]]
    assert names == ["calc", "final_answer"]


def test_unusable_reply_is_recorded_and_the_loop_continues():
    s, _ = solver()
    backend = scripted_solver(["this is not json", act("calc", expr=EXPR), final("24.41%")])
    traj = run_one(s.solve(Q), backend)
    assert traj.answer == "24.41%" and traj.gate_ok
    assert traj.fallbacks == ("bad_reply",)
    bad = traj.steps[1]
    assert bad.fallback == "bad_reply" and "invalid JSON" in bad.observation
    assert "could not be used: invalid JSON" in backend.calls[2].messages[-1].content


def test_too_many_unusable_replies_force_a_final_call():
    s, _ = solver(max_bad_replies=2)

    def reply(req):
        if turn_of(req) == 0:
            return json.dumps({"inputs": "x", "experience": "none", "plan": "y"})
        if req.json_schema.get("properties", {}).get("action", {}).get("enum") == ["final_answer"]:
            return final("24.41%")
        return "{broken"

    backend = scripted_solver(reply)
    traj = run_one(s.solve(Q), backend)
    assert traj.fallbacks == ("bad_reply", "bad_reply", "bad_reply_limit")
    assert traj.steps[-1].kind == "final_forced" and traj.answer == "24.41%"
    assert traj.gate_ok is False  # no tool ran, so 24.41% traces to nothing; it stands, flagged
    assert len(backend.calls) == 4  # plan, two bad replies, forced final


def test_tool_crash_is_a_failed_observation_not_a_lost_run():
    s, _ = solver(tools=("crash", "calc"))
    backend = scripted_solver([act("crash", x="a"), act("calc", expr=EXPR), final("24.41%")])
    traj = run_one(s.solve(Q), backend)
    assert traj.answer == "24.41%" and traj.gate_ok
    assert traj.fallbacks == ("tool_crash",)
    crash = traj.steps[1]
    assert crash.tool_ok is False and "RuntimeError: tool exploded" in crash.observation
    assert "crash failed (crash)" in backend.calls[2].messages[-1].content


def test_gate_failure_sends_reasons_back_then_the_model_recovers():
    s, _ = solver()
    # 25.1% traces to nothing; then the model computes and answers correctly
    backend = scripted_solver([final("25.1%"), act("calc", expr=EXPR), final("24.41%")])
    traj = run_one(s.solve(Q), backend)
    assert traj.answer == "24.41%" and traj.gate_ok is True
    assert traj.fallbacks == ("gate_rejected",)
    rejected = traj.steps[1]
    assert rejected.gate["ok"] is False and rejected.gate["checks"]["trace"] is False
    note = backend.calls[2].messages[-1].content
    assert note.startswith("Answer check failed:") and "25.1%" in note
    assert traj.steps[-1].gate["ok"] is True


def test_gate_failure_after_the_last_rejection_stands_flagged():
    s, _ = solver(gate_rejections=1)
    backend = scripted_solver([final("25.1%"), final("0.2441")])
    traj = run_one(s.solve(Q), backend)
    assert traj.answer == "0.2441" and traj.gate_ok is False
    assert traj.fallbacks == ("gate_rejected", "gate_unresolved")


def test_step_limit_forces_one_final_answer_only_call():
    s, made = solver(max_steps=3)
    backend = scripted_solver(
        lambda req: (
            json.dumps({"inputs": "x", "experience": "none", "plan": "y"})
            if turn_of(req) == 0
            else (
                final("24.41%")
                if req.json_schema.get("properties", {}).get("action", {}).get("enum") == ["final_answer"]
                else act("calc", expr=EXPR)
            )
        )
    )
    traj = run_one(s.solve(Q), backend)
    assert traj.tool_steps == 3 and len(made[0].calls) == 3
    assert traj.fallbacks == ("step_limit",)
    assert traj.steps[-1].kind == "final_forced" and traj.answer == "24.41%" and traj.gate_ok
    last = backend.calls[-1]
    assert "No steps are left" in last.messages[-1].content
    assert last.json_schema["properties"]["action"]["enum"] == ["final_answer"]
    assert len(backend.calls) == 1 + 3 + 1


def test_many_questions_advance_in_lockstep():
    s, _ = solver()
    qs = [Question(f"q{i}", "demo", Q.text, context=CONTEXT) for i in range(5)]
    backend = scripted_solver([act("calc", expr=EXPR), final("24.41%")])
    sizes: list[int] = []
    orig = backend.chat
    backend.chat = lambda reqs: (sizes.append(len(reqs)), orig(reqs))[1]  # type: ignore[method-assign]
    trajs = run_lockstep([s.solve(q) for q in qs], backend)
    assert [t.item_id for t in trajs] == [q.item_id for q in qs]
    assert all(t.answer == "24.41%" for t in trajs)
    assert sizes == [5, 5, 5]  # plan, tool call, final: one engine batch per round


def test_model_only_base_is_one_free_call_read_by_the_answer_rule():
    """The paper's Base: question and data in, free text out, no schema and no format hint."""
    s, made = solver()
    reply = "Total sales in 2019 were $1,496.5 million.\n**Answer:** $1,496.5 million."
    backend = ScriptedBackend([Rule("qa_base", reply)])
    traj = run_one(s.solve_base(Q_SALES), backend)
    assert traj.variant == "base" and traj.answer == "$1,496.5 million" and traj.gate_ok is None
    assert len(backend.calls) == 1 and made == []
    req = backend.calls[0]
    assert req.call_type == "qa_base" and req.json_schema is None and req.max_tokens == 4096
    user = req.messages[-1].content
    assert CONTEXT in user and "Answer format" not in user and 'a line "Answer:' in user
    assert traj.steps[0].thought == reply and traj.answer_scale is None


def test_constrained_base_stays_as_a_named_option():
    s, _ = solver(base_mode="constrained")
    backend = ScriptedBackend([Rule("qa_base", {"reasoning": "read the table", "answer": "$1,496.5"})])
    q = Question("q3", "demo", Q_SALES.text, context=CONTEXT, answer_format="a number in millions")
    traj = run_one(s.solve_base(q), backend)
    assert traj.answer == "$1,496.5"
    assert set(backend.calls[0].json_schema["properties"]) == {"reasoning", "answer"}
    assert "Answer format: a number in millions" in backend.calls[0].messages[-1].content


def test_base_unusable_reply_leaves_no_answer():
    s, _ = solver(base_mode="constrained")
    traj = run_one(s.solve_base(Q), ScriptedBackend([Rule("qa_base", "nope")]))
    assert traj.answer == "" and traj.fallbacks == ("no_answer",)
    s, _ = solver()
    traj = run_one(s.solve_base(Q), ScriptedBackend([Rule("qa_base", "   ")]))
    assert traj.answer == "" and traj.fallbacks == ("no_answer",)


Q_TATQA = Question("t1", "tatqa", "What were total sales in 2019?", context=CONTEXT)


def test_a_tatqa_final_answer_carries_its_scale_field():
    s, _ = solver()
    backend = scripted_solver([act("final_answer", answer="1,496.5", scale="million")])
    traj = run_one(s.solve(Q_TATQA), backend)
    assert (traj.answer, traj.answer_scale, traj.gate_ok) == ("1,496.5", "million", True)
    final_alt = backend.calls[1].json_schema["anyOf"][-1]
    assert final_alt["properties"]["args"]["properties"]["scale"]["enum"] == [
        "", "thousand", "million", "billion", "percent",
    ]  # fmt: skip
    assert '"scale"' in backend.calls[0].messages[0].content  # the prompt names the field
    # other benchmarks keep the one answer field
    traj = run_one(s.solve(Q_SALES), scripted_solver([final("$1,496.5 million")]))
    assert traj.answer_scale is None
    # the constrained Base replies with a scale too; the model-only Base writes it in its text
    b, _ = solver(base_mode="constrained")
    t = run_one(
        b.solve_base(Q_TATQA),
        ScriptedBackend([Rule("qa_base", {"reasoning": "r", "answer": "1,496.5", "scale": "million"})]),
    )
    assert (t.answer, t.answer_scale) == ("1,496.5", "million")


def test_without_the_action_schema_the_first_json_object_of_a_free_reply_is_read():
    s, made = solver(action_schema=False)
    replies = [
        "I should compute first.\n```json\n" + act("calc", expr=EXPR) + "\n```",
        "no json here",
        'Done: {"thought": "t", "action": "final_answer", "args": {"answer": "24.41%"}} as planned',
    ]
    backend = scripted_solver(lambda r: json.dumps({"inputs": "a", "experience": "b", "plan": "c"})
                              if turn_of(r) == 0 else replies[min(turn_of(r) - 1, 2)])  # fmt: skip
    traj = run_one(s.solve(Q), backend)
    assert all(r.json_schema is None for r in backend.calls)
    assert traj.answer == "24.41%" and traj.gate_ok is True
    assert [st.fallback for st in traj.steps] == [None, None, "bad_reply", None]
    assert made[0].calls == [{"expr": EXPR}]


def test_every_cut_is_recorded_on_its_step():
    class Long(Calculator):
        def __call__(self, args):
            out = super().__call__(args)
            return type(out)(out.ok, out.text + " " + "x" * 500, numbers=out.numbers)

    s = QASolver(SolverConfig(model="m", observation_chars=200, context_chars=20, thought_chars=10),
                 tools=lambda q: [Long()])  # fmt: skip
    calc = json.dumps({"thought": "x" * 10, "action": "calc", "args": {"expr": EXPR}})
    answer = json.dumps({"thought": "y", "action": "final_answer", "args": {"answer": "24.41%"}})
    backend = scripted_solver([calc, answer])
    traj = run_one(s.solve(Q), backend)
    assert traj.steps[0].cuts == ("context",)
    assert traj.steps[1].cuts == ("thought", "tool_output") and traj.steps[2].cuts == ()
    assert traj.cut_counts == {"context": 1, "thought": 1, "tool_output": 1}
    assert "chars cut]" in backend.calls[2].messages[-1].content


def test_solver_config_names_the_bad_field():
    with pytest.raises(ConfigError, match="max_steps=0"):
        SolverConfig(model="m", max_steps=0)
    with pytest.raises(ConfigError, match="gate_rejections"):
        SolverConfig(model="m", gate_rejections=-1)


def test_numeric_questions_constrain_the_answer_by_pattern():
    s, _ = solver()
    backend = scripted_solver([final("about a quarter")])
    traj = run_one(s.solve(Q), backend)
    alt = backend.calls[1].json_schema["anyOf"][-1]
    pattern = alt["properties"]["args"]["properties"]["answer"]["pattern"]
    assert re.match(pattern, "24.41%") and re.match(pattern, "24.41") and not re.match(pattern, "$1,496.5")
    # a reply outside the pattern is unusable (schema decoding would not produce it)
    assert traj.steps[1].fallback == "bad_reply" and "does not match" in traj.steps[1].observation
    s2, _ = solver(answer_patterns=False)
    b2 = scripted_solver([final("x")])
    run_one(s2.solve(Q), b2)
    assert "pattern" not in json.dumps(b2.calls[1].json_schema)
