"""Reading and recording the solver's replies: a reply's JSON (constrained or free), the cut of
a long text, the answer as the gate reads it, and a step from a result."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agent.qa.core.trajectory import Step
from serving.chat.replies import parse_reply
from serving.chat.types import ChatResult

__all__ = ["clip", "plan_text", "reply_json", "step_from", "with_scale"]


def clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: max(0, n - 24)] + f" [... {len(text) - n + 24} chars cut]"


def reply_json(res: ChatResult, schema: Mapping[str, Any], constrained: bool) -> tuple[Any, str | None]:
    """The reply's JSON value and the error that makes it unusable (one of them None). A
    constrained reply was parsed and checked by serving; a free one is read here: its first
    ``{...}`` object (a fenced block or plain text around it is allowed), checked against the
    same schema."""
    if constrained:
        if not res.is_fallback and isinstance(res.parsed, dict):
            return res.parsed, None
        return None, res.parse_error or f"finish_reason={res.finish_reason}"
    if res.finish_reason in ("length", "error"):
        return None, f"reply cut at max_tokens (finish_reason={res.finish_reason})"
    text = res.text or ""
    start = text.find("{")
    if start < 0:
        return None, "no JSON object in the reply"
    try:
        value, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON: {exc.msg} at char {exc.pos}"
    parsed, err = parse_reply(json.dumps(value), schema)
    return (parsed, None) if err is None else (None, err)


def with_scale(answer: str, scale: str | None) -> str:
    """The answer as the gate reads it: a separate scale field written after it."""
    if not scale or not answer:
        return answer
    return f"{answer}%" if scale == "percent" else f"{answer} {scale}"


def plan_text(plan: Mapping[str, Any]) -> str:
    # fixed field order: a parsed reply replayed from the journal may list its keys differently
    return "\n".join(f"{k}: {plan.get(k, '')}" for k in ("inputs", "experience", "plan"))


def step_from(res: ChatResult, index: int, kind: str, **fields: Any) -> Step:
    return Step(
        index=index,
        kind=kind,
        reply=res.text,
        prompt_tokens=res.usage.prompt_tokens,
        completion_tokens=res.usage.completion_tokens,
        cached_tokens=res.usage.cached_tokens,
        latency_s=res.latency_s,
        finish_reason=res.finish_reason,
        request_key=res.request_key,
        **fields,
    )
