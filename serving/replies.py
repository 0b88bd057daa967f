"""Turning raw model text into (final text, reasoning, parsed JSON).

Shared by every backend so that parsing rules are identical whichever engine produced the text.
Only the final text is parsed; reasoning is kept apart.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from serving.types import ChatRequest, ChatResult, Usage

__all__ = ["split_reasoning", "parse_reply", "build_result", "error_result"]

_OPEN, _CLOSE = "<think>", "</think>"


def split_reasoning(raw: str) -> tuple[str, str | None]:
    """Split Qwen3-style ``<think>...</think>`` reasoning from the answer.

    Returns ``(final_text, reasoning)``. A reply with a closing tag but no opening one (the chat
    template put ``<think>`` in the prompt) is handled; a reply whose thinking never closed (cut
    at ``max_tokens``) is all reasoning and an empty final text.
    """
    text = raw.lstrip()
    if _CLOSE in text:
        head, _, tail = text.partition(_CLOSE)
        reasoning = head.removeprefix(_OPEN).strip()
        return tail.strip(), reasoning
    if text.startswith(_OPEN):
        return "", text.removeprefix(_OPEN).strip()
    return raw.strip(), None


def parse_reply(text: str, schema: Mapping[str, Any] | None) -> tuple[Any, str | None]:
    """Parse ``text`` as JSON and check it against ``schema``.

    Returns ``(parsed, error)``: ``parsed`` is ``None`` whenever ``error`` is set. Without a
    schema nothing is parsed and both are ``None``. A fenced reply (```json ... ```) is accepted,
    since HTTP backends without structured decoding often produce one.
    """
    if schema is None:
        return None, None
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`")
        body = body.removeprefix("json").strip()
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON: {exc.msg} at char {exc.pos}"
    import jsonschema  # light, but only needed here

    try:
        jsonschema.validate(value, dict(schema))
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "<root>"
        return None, f"schema violation at {where}: {exc.message[:200]}"
    except jsonschema.SchemaError as exc:
        return None, f"the request's schema is invalid: {exc.message[:200]}"
    return value, None


def build_result(
    req: ChatRequest,
    raw: str,
    *,
    finish_reason: str,
    usage: Usage,
    latency_s: float,
    backend: str,
    revision: str,
    reasoning: str | None = None,
) -> ChatResult:
    """A :class:`ChatResult` from raw model text: reasoning split off, reply parsed.

    ``reasoning`` is given when the server already separated it (``--reasoning-parser``);
    otherwise ``<think>`` blocks are split here. A ``length`` finish with a schema is recorded
    as a parse error (a cut reply is never valid JSON we can trust).
    """
    if reasoning is None:
        text, reasoning = split_reasoning(raw)
    else:
        text = raw.strip()
    parsed, err = parse_reply(text, req.json_schema)
    if req.json_schema is not None and finish_reason == "length" and err is None:
        parsed, err = None, "reply cut at max_tokens (finish_reason=length)"
    return ChatResult(
        text=text,
        reasoning=reasoning or None,
        parsed=parsed,
        parse_error=err,
        finish_reason=finish_reason,
        usage=usage,
        latency_s=latency_s,
        backend=backend,
        model=req.model,
        revision=revision,
        call_type=req.call_type,
        request_key=req.key(),
    )


def error_result(req: ChatRequest, message: str, *, backend: str, revision: str = "") -> ChatResult:
    """The recorded fallback for a call that failed outright (never journaled)."""
    return ChatResult(
        text="",
        reasoning=None,
        parsed=None,
        parse_error=message,
        finish_reason="error",
        usage=Usage(),
        latency_s=0.0,
        backend=backend,
        model=req.model,
        revision=revision,
        call_type=req.call_type,
        request_key=req.key(),
    )
