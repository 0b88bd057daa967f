"""A scripted model whose accuracy depends on how many bank entries reach it (k_max), for the
tests of the paper's sweeps and their bootstrap intervals. Unit tests only."""

from __future__ import annotations

import json
import re

from qa_fakes import PLAN, act, final, summary_reply, turn_of

from serving.chat.scripted import Rule, ScriptedBackend
from serving.chat.types import ChatRequest


def lessons_annotator(req: ChatRequest) -> str:
    """One directive per retrieved entry: ``lesson 0``, ``lesson 1``, ..."""
    n = req.messages[-1].content.count("] Problem:")
    return json.dumps({"directives": [f"lesson {j}" for j in range(n)]})


def depth_solver(req: ChatRequest) -> str:
    """Plan, then: with three or more lessons in the prompt (``lesson 2``), or on an even segment,
    compute 2019 - 2018 (with calc when it is offered, and answer its output; else directly)
    and answer it; otherwise answer 0 (wrong). It reads the question and its data only."""
    t = turn_of(req)
    first = next(m.content for m in req.messages if m.role == "user")
    if t == 0:
        return json.dumps(PLAN)
    seg = int(re.search(r"segment (\d+)", first).group(1))
    if "lesson 2" not in first and seg % 2:
        return final("0")
    m = re.search(r"Output of calc:\n(\S+)", req.messages[-1].content)
    if m:
        return final(f"{float(m.group(1)):.2f}")
    a = re.search(r"2019: ([\d.]+)", first).group(1)
    b = re.search(r"2018: ([\d.]+)", first).group(1)
    if "calc" not in json.dumps(req.json_schema or {}):
        return final(f"{float(a) - float(b):.2f}")
    return act("calc", expr=f"{a}-{b}")


def depth_backend() -> ScriptedBackend:
    return ScriptedBackend(
        [
            Rule("bank_summarize", summary_reply),
            Rule("qa_annotate", lessons_annotator),
            Rule("qa_solve", depth_solver),
        ]
    )
