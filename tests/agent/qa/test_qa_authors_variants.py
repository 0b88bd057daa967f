"""The authors' protocol points in our runs, on a scripted model: their loop (native tool calls
read from Hermes-style replies, terminate, the no-tool stop, the step-limit answer, the raw or
our reading), their Base and its reading, their memory block and the train memory mode, their
bank grading and summary, their judge with its exact-match fallback. Their texts come from the
pinned snapshot (skipped without it)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any, ClassVar

import pytest
from authors_support import snapshot
from qa_fakes import change_items, num_scorer

from agent.qa.authors.checkout import open_authors_code
from agent.qa.authors.messages import problem_block, system_prompt
from agent.qa.core.items import Gold, QAItem, Question
from agent.qa.evaluation.bank_items import BankBuildConfig
from agent.qa.evaluation.evaluate import EvalConfig, evaluate
from agent.qa.memory.memory import ExperienceMemory, MemoryConfig
from agent.qa.solver.react import QASolver
from agent.qa.solver.solver_config import SolverConfig
from agent.qa.tools.base import ToolResult
from bank.embedder import HashingEmbedder
from bank.retrieval import Retriever
from bank.schema import NewEntry
from bank.store import ExperienceBank
from localfin.errors import ConfigError
from serving.scripted import Rule, ScriptedBackend
from serving.types import ChatRequest


@pytest.fixture(scope="module")
def code():
    return open_authors_code(snapshot())


class Py:
    """Stands in for our Python tool: prints what the code's last ``print(...)`` holds."""

    name = "python"
    description = "python"
    args_schema: ClassVar[dict[str, Any]] = {"type": "object"}

    def __call__(self, args: Any) -> ToolResult:
        src = str(args.get("code", ""))
        return ToolResult(True, src.rsplit("print(", 1)[-1].rstrip(")") + "\n" if "print(" in src else "")

    def close(self) -> None:
        return None


def call(name: str, **args: Any) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': args})}</tool_call>"


def cfg(**kw: Any) -> SolverConfig:
    base = dict(model="m", max_steps=4, loop="authors", max_tokens=1024, answer_reading="authors")
    return SolverConfig(**(base | kw))


def _run(tmp_path, code, backend, variant="ft", solver=None, memory=None, items=None, **kw):
    items = items or change_items(1, "test")
    summary = evaluate(
        items,
        backend,
        tmp_path / variant,
        EvalConfig(variant, solver or cfg(**kw)),
        tools=(lambda q: [Py()]) if variant != "base" else None,
        memory=memory,
        authors=code,
        scorer=num_scorer,
    )
    rows = [json.loads(x) for x in (tmp_path / variant / "trace.jsonl").read_text().splitlines()]
    return summary, rows[0]


def test_the_loop_sends_their_prompts_and_scores_the_raw_terminate_string(tmp_path, code) -> None:
    backend = ScriptedBackend(default=call("terminate", final_answer="**12.5.**"))
    _, row = _run(tmp_path, code, backend)
    first = backend.calls[0]
    q = change_items(1, "test")[0].question
    assert [m.role for m in first.messages] == ["system", "user", "user"]
    assert first.messages[0].content == system_prompt(code, "ft_only")
    want_user = problem_block(code, question=q.text, context=q.context, instructions=())
    assert first.messages[1].content == want_user
    assert first.messages[2].content == code.text("ft_only.policy")
    assert [t["function"]["name"] for t in first.tools] == ["python_execute", "terminate"]
    assert first.tool_choice == "auto" and first.json_schema is None and first.max_tokens == 1024
    assert row["answer"] == "**12.5.**" and row["terminated"] and len(backend.calls) == 1
    backend = ScriptedBackend(default=call("terminate", final_answer="**12.5.**"))
    _, row = _run(tmp_path / "ours", code, backend, answer_reading="ours")
    assert row["answer"] == "12.5"  # our reading cleans it


def test_three_replies_without_a_tool_call_end_the_run_with_their_stuck_number(tmp_path, code) -> None:
    backend = ScriptedBackend(default="I believe the answer is 7")
    _, row = _run(tmp_path, code, backend, max_steps=6)
    assert len(backend.calls) == 3
    assert row["answer"] == "7.0" and row["terminated"]  # their forced terminate of str(float)
    assert row["fallbacks"] == ["no_tool_call", "no_tool_call", "zero_tool_stop"]
    third = backend.calls[2].messages
    assert (
        third[-2].content == code.text("loop.no_tool") and third[-1].role == "user"
    )  # reminder, then policy


def test_at_the_step_limit_the_answer_is_the_last_number_of_the_last_tool_output(tmp_path, code) -> None:
    backend = ScriptedBackend(default=call("python_execute", code="print(41.5)"))
    _, row = _run(tmp_path, code, backend, max_steps=3)
    assert len(backend.calls) == 3 and row["answer"] == "41.5" and not row["terminated"]
    assert row["fallbacks"][-1] == "step_limit"
    policies = [r.messages[-1].content for r in backend.calls]
    assert policies[0] == code.text("ft_only.policy") + code.render("loop.last_steps", remaining=2)
    assert policies[1] == policies[0] + code.render("loop.last_step", remaining=1)  # their notes accumulate
    assert policies[2] == policies[1] + code.render("loop.last_step", remaining=0)
    tool_msgs = [m for m in backend.calls[1].messages if m.role == "tool"]
    assert tool_msgs[0].content == code.render(
        "tool.observed", name="python_execute", result=str({"observation": "41.5\n", "success": True})
    )


def test_their_base_prompt_and_reading(tmp_path, code) -> None:
    backend = ScriptedBackend(default="Let me see.\n**Final Answer:** 42 %.\nDone")
    _, row = _run(
        tmp_path,
        code,
        backend,
        variant="base",
        base_mode="authors",
        base_reading="authors",
        base_max_tokens=1024,
    )
    req = backend.calls[0]
    q = change_items(1, "test")[0].question
    assert req.messages[0].content == code.text("base.system")
    assert req.messages[1].content == problem_block(
        code, question=q.text, context=q.context, instructions=None
    )
    assert req.max_tokens == 1024 and req.json_schema is None and not req.tools
    assert row["answer"] == "42 %."
    backend = ScriptedBackend(default="Let me see.\n**Final Answer:** 42 %.\nDone")
    _, row = _run(
        tmp_path / "o",
        code,
        backend,
        variant="base",
        base_mode="authors",
        base_reading="ours",
        base_max_tokens=1024,
    )
    assert row["answer"] == "42 %"


def test_the_loop_and_base_need_the_checkout() -> None:
    with pytest.raises(ConfigError, match="loop = 'authors' sends the authors' prompt texts"):
        QASolver(cfg())
    with pytest.raises(ConfigError, match="needs max_tokens"):
        SolverConfig(model="m", loop="authors")


def _bank(tmp_path, emb, context: str) -> ExperienceBank:
    bank = ExperienceBank.open(tmp_path / "bank")
    entry = NewEntry(
        "train-0",
        "demo",
        "What is the change in revenue from 2018 to 2019?",
        context_head=context,
        findings=("To find a change, subtract.",),
        cautions=("When units differ, convert.",),
        answer="200.0",
    )
    bank.add_texts([entry], emb, 600)
    return bank


def test_ft_fm_shows_their_memory_block_and_the_train_mode_retrieves_nothing(tmp_path, code) -> None:
    emb = HashingEmbedder(dim=64)
    whole = "x" * 900 + " end of context"
    with _bank(tmp_path, emb, whole) as bank:
        for mode in ("test", "train"):
            mem = ExperienceMemory(
                Retriever(bank, emb),
                MemoryConfig(tau=0.0, block="authors", annotator=False, mode=mode),
                authors=code,
            )
            backend = ScriptedBackend(default=call("terminate", final_answer="1"))
            _, row = _run(tmp_path / mode, code, backend, variant="ft_fm", memory=mem)
            first = backend.calls[0]
            assert first.messages[0].content == system_prompt(code, "finacumen")
            user = first.messages[1].content
            if mode == "test":
                assert (
                    user.startswith(code.text("memory.open")) and "end of context" in user
                )  # the whole context
                assert code.text("entry.context") in user and row["memory_hits"] == [0]
            else:
                assert user.startswith(code.text("problem.open")) and row["memory_hits"] == []


def test_their_bank_grading_drops_unterminated_trajectories_and_grades_the_wrong_ones(tmp_path, code) -> None:
    from agent.qa.evaluation.bank_build import build_bank

    # one trajectory per seed; 1 % of 200: 200.5 and 199 right, 5 wrong, one never calls terminate
    answers = {0: "200.5", 1: "199", 2: "no call at all", 3: "5"}

    def step(req: ChatRequest) -> str:
        a = answers[req.seed]
        return a if a.startswith("no") else call("terminate", final_answer=a)

    grade = '<Answer>[{"score": 0.3, "reason": "off by far"}]</Answer>'
    summary = (
        '<Answer>{"analysis": "a", "findings": ["To x, subtract."], "cautions": ["When y, check."]}</Answer>'
    )
    backend = ScriptedBackend(
        [Rule("qa_solve", step), Rule("bank_grade", grade), Rule("bank_summarize", summary)]
    )
    item = QAItem(Question("train-0", "demo", "Change?", context="a 10 b"), Gold(200.0), split="train")
    emb = HashingEmbedder(dim=32)
    with ExperienceBank.open(tmp_path / "bank") as bank:
        rep = build_bank(
            [item],
            QASolver(cfg(max_steps=3), tools=lambda q: [Py()], authors=code),
            backend,
            bank,
            emb,
            tmp_path / "build",
            authors=code,
            scorer=num_scorer,
            config=BankBuildConfig(
                k=4,
                grading="authors",
                summary_prompt="authors",
                max_tokens=8192,
                entry_context="whole",
                summary_temperature=0.3,
            ),
        )
        (entry,) = bank.get([0])
    assert (
        rep.entries_added == 1 and entry.findings == ("To x, subtract.",) and entry.context_head == "a 10 b"
    )
    kinds = [r.call_type for r in backend.calls]
    assert kinds.count("bank_grade") == 1 and kinds[-1] == "bank_summarize"
    graded = next(r for r in backend.calls if r.call_type == "bank_grade")
    assert (graded.temperature, graded.max_tokens) == (0.1, 4096) and len(graded.messages) == 1
    text = graded.messages[0].content
    assert (
        "Attempt #1 ---" in text and "no call at all" not in text
    )  # one wrong attempt, the silent one dropped
    summ = backend.calls[-1]
    assert (summ.temperature, summ.max_tokens) == (0.3, 8192) and "off by far" in summ.messages[0].content
    trace = json.loads((tmp_path / "build" / "trace.jsonl").read_text().splitlines()[0])
    assert trace["correct"] == [True, True, False, False] and trace["scored_by"].startswith("authors")


def test_their_judge_and_its_exact_match_fallback(tmp_path, code) -> None:
    from agent.qa.scoring.judge import AUTHORS_JUDGE
    from agent.qa.scoring.judge_pass import judge_run

    items = [
        QAItem(Question(f"t{i}", "fintmmbench", f"Who {i}?"), Gold(g), "test")
        for i, g in enumerate(["Ansys", "42 USD"])
    ]
    run = tmp_path / "run"
    run.mkdir()
    (run / "trace.jsonl").write_text(
        "\n".join(json.dumps({"item_id": f"t{i}", "answer": a}) for i, a in enumerate(["ansys", "42"]))
    )
    js = judge_run(
        run,
        items,
        ScriptedBackend(default="Yes."),
        "j",
        prompt_name=AUTHORS_JUDGE,
        authors=code,
        max_tokens=5,
    )
    assert js.correct == 2 and js.prompt == "authors"
    failing = ScriptedBackend(default="YES", fail_on=lambda r: "Who 1?" in r.messages[0].content)
    js = judge_run(
        tmp_path / "run2" if False else run,
        items,
        failing,
        "j2",
        prompt_name=AUTHORS_JUDGE,
        authors=code,
        max_tokens=5,
    )
    doc = json.loads((run / "judge_scores.json").read_text())
    assert (
        doc["fallback"].startswith("a judge call failed") and js.correct == 1
    )  # SQuAD EM: ansys == Ansys only
    con = sqlite3.connect(run / "judge.sqlite")
    assert con.execute("SELECT COUNT(*) FROM calls").fetchone()[0] >= 2
    con.close()
