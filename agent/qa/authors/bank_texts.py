"""The authors' bank grading, bank summary and FinTMMBench judge: their prompts filled in by our
code, their replies read by their rules (``fm/cross_verify.py``, ``fm/collect.py``,
``fm/pruning_rules.py``, ``ft/eval/fintmm_eval.py``); every text from their checkout.

- :func:`trajectory_text`: one trajectory written out as their grader and summarizer read it
  (``_build_trajectory_text``): each assistant reply (its ``<Think>`` block when it has one, else
  the whole text), each tool call with its arguments, each tool output, blank lines between.
- :func:`problem_text`, :func:`attempts_text`: the problem (context, options, question) and the
  attempts with their headers (correct, scored with the reason, or plain).
- :func:`grading_request_text` / :func:`read_scores`: the one call that grades the wrong
  attempts 0 to 0.99, and its reply: a JSON array (inside ``<Answer>`` or bare; a code fence
  and trailing commas tolerated) of one ``{"score", "reason"}`` per wrong attempt, else nothing.
- :func:`summary_request_text` / :func:`read_summary`: the summary call over every attempt with
  its score, and its ``<Answer>`` JSON: findings and cautions, stripped, repeats dropped, those
  their give-up filter flags removed (:func:`gives_up`).
- :func:`judge_text` / :func:`judged_yes`: the FinTMMBench judge's user message and its verdict
  (a reply starting with ``YES``, any case).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from agent.qa.authors.checkout import AuthorsCode
from serving.types import Message

__all__ = [
    "trajectory_text",
    "problem_text",
    "attempts_text",
    "grading_request_text",
    "read_scores",
    "summary_request_text",
    "read_summary",
    "gives_up",
    "judge_text",
    "judged_yes",
]

_THINK = re.compile(r"<Think>\s*(.*?)\s*</Think>", re.DOTALL | re.IGNORECASE)
_ANSWER = re.compile(r"<Answer>\s*(.*?)\s*</Answer>", re.DOTALL | re.IGNORECASE)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def trajectory_text(code: AuthorsCode, messages: Sequence[Message]) -> str:
    """A conversation (its assistant and tool messages) as their bank reads it."""
    parts: list[str] = []
    for m in messages:
        if m.role == "assistant":
            if m.content:
                t = _THINK.search(m.content)
                if t:
                    parts.append(code.render("trajectory.reasoning", **{"#0": t.group(1).strip()}))
                else:
                    parts.append(code.render("trajectory.assistant", **{"#0": m.content.strip()}))
            for c in m.tool_calls:
                parts.append(code.render("trajectory.call", fn_name=c.name, fn_args=c.arguments or "{}"))
        elif m.role == "tool" and m.content:
            label = (
                code.render("trajectory.output_named", tool_name=m.name)
                if m.name
                else code.text("trajectory.output")
            )
            parts.append(code.render("trajectory.labelled", label=label, content=m.content))
    return "\n\n".join(parts)


def problem_text(code: AuthorsCode, question: str, context: str = "", options: Sequence[str] = ()) -> str:
    parts = []
    if context:
        parts.append(code.render("grading.context", ctx=context))
    if options:
        parts.append(code.render("grading.options", opts="\n".join(options)))
    parts.append(code.render("grading.question", q=question))
    return "\n".join(parts)


def attempts_text(code: AuthorsCode, attempts: Sequence[tuple[str, float | None, str]]) -> str:
    """``attempts``: (trajectory text, score or None, reason), numbered from 1."""
    parts = []
    for i, (text, score, reason) in enumerate(attempts, 1):
        if score == 1.0:
            header = code.render("attempt.correct", i=i)
        elif score is not None:
            header = code.render("attempt.scored", i=i, score=score, reason=reason)
        else:
            header = code.render("attempt.plain", i=i)
        parts.append(code.render("attempt.body", header=header, **{"#1": text}))
    return "\n".join(parts)


def grading_request_text(code: AuthorsCode, problem: str, gold: str, attempts: str) -> str:
    return code.text("grading.prompt").format(problem_text=problem, gold_answer=gold, attempts_text=attempts)


def _inner(text: str, require_answer: bool) -> str | None:
    m = _ANSWER.search(text)
    if m is None and require_answer:
        return None
    inner = (m.group(1) if m else text).strip()
    if inner.startswith("```"):
        inner = re.sub(r"^```\w*\s*", "", inner)
        inner = re.sub(r"\s*```$", "", inner)
    return inner


def _loads(inner: str) -> Any:
    try:
        return json.loads(inner)
    except json.JSONDecodeError:
        try:
            return json.loads(_TRAILING_COMMA.sub(r"\1", inner))
        except json.JSONDecodeError:
            return None


def read_scores(text: str, n: int) -> list[tuple[float, str]] | None:
    """The grading reply's ``n`` (score, reason) pairs, or None when it has not exactly ``n``
    well-formed ones (their build then writes no entry for the item)."""
    inner = _inner(text, require_answer=False)
    value = _loads(inner) if inner is not None else None
    if not isinstance(value, list) or len(value) != n:
        return None
    out = []
    for s in value:
        if not isinstance(s, dict) or "score" not in s or "reason" not in s:
            return None
        try:
            out.append((float(s["score"]), str(s["reason"])))
        except (TypeError, ValueError):
            return None
    return out


def summary_request_text(code: AuthorsCode, problem: str, gold: str, attempts: str, scores_json: str) -> str:
    return code.text("summary.prompt").format(
        problem_text=problem, gold_answer=gold, attempts_text=attempts, scores_json=scores_json
    )


def gives_up(code: AuthorsCode, text: str) -> bool:
    """Their give-up filter: a lesson that says the data is missing (and does not say to retry)."""
    if any(re.search(p, text, re.IGNORECASE) for p in code.table("summary.protective")):
        return False
    return any(re.search(p, text, re.IGNORECASE) for p in code.table("summary.give_up"))


def read_summary(code: AuthorsCode, text: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The summary reply's findings and cautions (module docstring); None when the reply has no
    readable ``<Answer>`` object or, after the filter, no lesson at all."""
    inner = _inner(text, require_answer=True)
    value = _loads(inner) if inner is not None else None
    if not isinstance(value, dict):
        return None

    def lessons(key: str) -> tuple[str, ...]:
        raw = value.get(key, [])
        raw = raw if isinstance(raw, list) else []
        kept = dict.fromkeys(str(x).strip() for x in raw if str(x).strip())
        return tuple(x for x in kept if not gives_up(code, x))

    findings, cautions = lessons("findings"), lessons("cautions")
    if not findings and not cautions:
        return None
    return findings, cautions


def judge_text(code: AuthorsCode, question: str, gold: str, prediction: str) -> str:
    return code.text("judge.prompt").format(question=question, gold=gold, pred=prediction)


def judged_yes(reply: str) -> bool:
    return reply.strip().upper().startswith("YES")
