"""Test doubles for the QA agent tests: a calculator tool, a crashing tool, and a scripted
"model" that replies by the turn of the conversation. Unit tests only."""

from __future__ import annotations

import ast
import json
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agent.qa.tools.base import ToolResult
from serving.scripted import Rule, ScriptedBackend
from serving.types import ChatRequest

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
    args_schema = {
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
    args_schema = {
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
