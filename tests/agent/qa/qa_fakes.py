"""Test doubles for the QA agent tests: a calculator tool, a crashing tool, and a scripted
"model" that replies by the turn of the conversation. Unit tests only."""

from __future__ import annotations

import ast
import json
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from agent.qa.tools.base import ToolResult
from serving.chat.scripted import Rule, ScriptedBackend
from serving.chat.types import ChatRequest

_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.USub: operator.neg,
}


def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_eval(node.left), _eval(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_eval(node.operand))
    raise ValueError("only + - * / and numbers")


class Calculator:
    """Arithmetic on numbers (no names, no calls): a deterministic stand-in for the Python tool."""

    name = "calc"
    description = 'evaluate an arithmetic expression, args {"expr": "1.5*2"}'
    args_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"expr": {"type": "string", "maxLength": 200}},
        "required": ["expr"],
        "additionalProperties": False,
    }

    def __init__(self) -> None:
        self.calls: list[Mapping[str, Any]] = []
        self.closed = False

    def __call__(self, args: Mapping[str, Any]) -> ToolResult:
        self.calls.append(dict(args))
        try:
            value = _eval(ast.parse(str(args["expr"]), mode="eval"))
        except (SyntaxError, ValueError, ZeroDivisionError, KeyError) as exc:
            return ToolResult(False, f"cannot evaluate: {exc}", error="bad_args")
        return ToolResult(True, repr(value), numbers=(value,))

    def close(self) -> None:
        self.closed = True


class Crasher:
    """A tool that breaks its contract by raising."""

    name = "crash"
    description = "always raises"
    args_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"x": {"type": "string", "maxLength": 10}},
        "required": ["x"],
        "additionalProperties": False,
    }

    def __call__(self, args: Mapping[str, Any]) -> ToolResult:
        raise RuntimeError("tool exploded")

    def close(self) -> None:
        return None


PLAN = {"inputs": "the table", "experience": "none", "plan": "compute with calc, then answer"}


def act(action: str, **args: Any) -> str:
    return json.dumps({"thought": f"do {action}", "action": action, "args": args})


def final(answer: str) -> str:
    return act("final_answer", answer=answer)


def turn_of(req: ChatRequest) -> int:
    """0 for the plan call, 1 for the first action call, ..."""
    return sum(1 for m in req.messages if m.role == "assistant")


def scripted_solver(
    replies: Sequence[str] | Callable[[ChatRequest], str], *, extra: Sequence[Rule] = ()
) -> ScriptedBackend:
    """A backend whose ``qa_solve`` replies are the plan then ``replies`` in turn order (the last
    one repeats), or ``replies(request)``."""

    def reply(req: ChatRequest) -> str:
        if callable(replies):
            return replies(req)
        t = turn_of(req)
        if t == 0 and req.json_schema and "plan" in req.json_schema.get("properties", {}):
            return json.dumps(PLAN)
        return replies[min(t - 1, len(replies) - 1)]

    return ScriptedBackend([*extra, Rule("qa_solve", reply)])


class NumScore:
    """What a scorer returns: correct, score, detail."""

    def __init__(self, correct: bool, detail: str = "") -> None:
        self.correct = correct
        self.score = float(correct)
        self.detail = detail


def num_scorer(dataset: str, gold: Any, prediction: str) -> NumScore:
    """1% relative tolerance on the first number of the prediction (tests only)."""
    from agent.qa.core.numbers import find_numbers

    nums = find_numbers(prediction)
    target = float(gold.answer)
    if not nums:
        return NumScore(False, "no number")
    return NumScore(abs(nums[0].value - target) <= 0.01 * abs(target), nums[0].text)


def summary_reply(req: ChatRequest) -> str:
    """A schema-respecting bank summary."""
    props = req.json_schema["properties"]
    findings = ["Take both years from the table and subtract with calc."][: props["findings"]["maxItems"]]
    cautions = ["Do not answer before the tool output is back."][: props["cautions"]["maxItems"]]
    return json.dumps({"findings": findings, "cautions": cautions})


def annotate_reply(req: ChatRequest) -> str:
    return json.dumps({"directives": ["Subtract the 2018 value from the 2019 value with calc."]})


def change_model(req: ChatRequest) -> str:
    """A scripted solver for "change from 2018 to 2019" questions: plan, one calc of 2019-2018
    read from the prompt, then the tool's output as the answer. It never sees a gold answer."""
    import re

    t = turn_of(req)
    if t == 0:
        if "plan" in req.json_schema.get("properties", {}):
            return json.dumps(PLAN)
        return json.dumps({"reasoning": "read it", "answer": "1"})  # Base
    last = req.messages[-1].content
    m = re.search(r"Output of calc:\n(\S+)", last)
    if m:
        return final(f"{float(m.group(1)):.2f}")
    first = next(x.content for x in req.messages if x.role == "user")
    a = re.search(r"2019: ([\d.]+)", first).group(1)
    b = re.search(r"2018: ([\d.]+)", first).group(1)
    return act("calc", expr=f"{a}-{b}")


def base_reply(req: ChatRequest) -> str:
    """The Base variant's one reply: free text ending in an answer line (model-only), or the
    constrained JSON."""
    if req.json_schema is not None:
        return json.dumps({"reasoning": "read it", "answer": "1"})
    return "I read the table.\nAnswer: 1"


def qa_backend() -> ScriptedBackend:
    return ScriptedBackend(
        [
            Rule("bank_summarize", summary_reply),
            Rule("qa_annotate", annotate_reply),
            Rule("qa_base", base_reply),
            Rule("qa_solve", change_model),
        ]
    )


def change_items(n: int, split: str, *, start: int = 0, gold=None) -> list:
    """``n`` "change in revenue" items; gold = 2019 - 2018 unless ``gold(i)`` is given."""
    from agent.qa.core.items import Gold, QAItem, Question

    out = []
    for i in range(start, start + n):
        a, b = 1000.0 + 37 * i, 800.0 + 11 * i
        q = Question(
            f"{split}-{i}",
            "demo",
            "What is the change in revenue from 2018 to 2019?",
            context=f"Revenue of segment {i} (in thousands)\nRevenue 2019: {a}\nRevenue 2018: {b}",
        )
        out.append(QAItem(q, Gold(gold(i) if gold else a - b), split=split))
    return out
