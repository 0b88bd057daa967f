"""Turning raw model text into (final text, reasoning, parsed JSON).

Shared by every backend so that parsing rules are identical whichever engine produced the text.
Only the final text is parsed; reasoning is kept apart.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from serving.chat.types import ChatRequest, ChatResult, ToolCall, Usage
from serving.errors import BackendError, ConfigError

__all__ = [
    "split_reasoning",
    "thinks",
    "first_json_object",
    "parse_reply",
    "build_result",
    "error_result",
    "FailureStreak",
    "over_context",
]

_OPEN, _CLOSE = "<think>", "</think>"
#: Qwen3's tool-call opening tag: vLLM's qwen3 reasoning parser ends the reasoning there too.
_TOOL_OPEN = "<tool_call>"


def split_reasoning(raw: str, *, thinking: bool = False) -> tuple[str, str | None]:
    """Split Qwen3-style ``<think>...</think>`` reasoning from the answer.

    Returns ``(final_text, reasoning)``. A reply with a closing tag but no opening one (the chat
    template put ``<think>`` in the prompt) is handled; a reply whose thinking never closed (cut
    at ``max_tokens``) is all reasoning and an empty final text.

    ``thinking``: the request was sent with thinking on to a model served with a reasoning
    parser. The reply then starts in reasoning whether or not it opens with ``<think>``, as
    vLLM's ``qwen3`` parser reads it (``vllm serve --reasoning-parser qwen3`` returns such a
    reply as ``reasoning`` with no ``content``): text before ``</think>`` (or before a
    ``<tool_call>``, which also ends reasoning there) is reasoning, and a reply that never
    leaves it, e.g. one cut at ``max_tokens`` mid-thought, has an empty final text. Without
    ``thinking`` a reply with no tags is all answer text.
    """
    text = raw.lstrip()
    if _CLOSE in text:
        head, _, tail = text.partition(_CLOSE)
        reasoning = head.removeprefix(_OPEN).strip()
        return tail.strip(), reasoning
    if thinking and _TOOL_OPEN in text:
        head, sep, tail = text.partition(_TOOL_OPEN)
        return (sep + tail).strip(), head.removeprefix(_OPEN).strip()
    if thinking or text.startswith(_OPEN):
        return "", text.removeprefix(_OPEN).strip()
    return raw.strip(), None


def thinks(req: ChatRequest, spec: Any) -> bool:
    """Whether ``req`` runs in thinking mode on the model of registry entry ``spec``: the model
    has a reasoning parser and the request (or, when it leaves it unset, the entry's default)
    does not turn thinking off. Unset with no default counts as on, as vLLM's parser and
    Qwen3's chat template both default ``enable_thinking`` to true."""
    if not getattr(spec, "reasoning_parser", None):
        return False
    thinking = req.thinking if req.thinking is not None else spec.thinking_default
    return thinking is not False


def first_json_object(text: str) -> tuple[Any, str | None]:
    """The first JSON object written in free ``text`` and the error when there is none.

    The rule of an unconstrained reply (the model was asked for JSON in the prompt only): the
    whole text when it is one JSON value (a fenced block included), else the first ``{`` at
    which a whole JSON object decodes, prose before or after it ignored. A ``{`` that starts no
    valid object is skipped, so ``"note {draft} then {...}"`` yields the second object.
    """
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`")
        body = body.removeprefix("json").strip()
    try:
        return json.loads(body), None
    except json.JSONDecodeError as exc:
        whole = f"invalid JSON: {exc.msg} at char {exc.pos}"
    decoder = json.JSONDecoder()
    start = text.find("{")
    if start < 0:
        return None, "no JSON object in the reply"
    while start >= 0:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value, None
        start = text.find("{", start + 1)
    return None, whole


def parse_reply(
    text: str, schema: Mapping[str, Any] | None, *, constrained: bool = True
) -> tuple[Any, str | None]:
    """Parse ``text`` as JSON and check it against ``schema``.

    Returns ``(parsed, error)``: ``parsed`` is ``None`` whenever ``error`` is set. Without a
    schema nothing is parsed and both are ``None``. A fenced reply (```json ... ```) is accepted,
    since HTTP backends without structured decoding often produce one. ``constrained`` False
    (the reply was not decoded under the schema): the first JSON object of the text is read
    (:func:`first_json_object`), then checked against the same schema.
    """
    if schema is None:
        return None, None
    if constrained:
        body = text.strip()
        if body.startswith("```"):
            body = body.strip("`")
            body = body.removeprefix("json").strip()
        try:
            value = json.loads(body)
        except json.JSONDecodeError as exc:
            return None, f"invalid JSON: {exc.msg} at char {exc.pos}"
    else:
        value, err = first_json_object(text)
        if err is not None:
            return None, err
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
    thinking: bool = False,
    tool_calls: tuple[ToolCall, ...] = (),
) -> ChatResult:
    """A :class:`ChatResult` from raw model text: reasoning split off, reply parsed.

    ``reasoning`` is given when the server already separated it (``--reasoning-parser``);
    otherwise reasoning is split here (:func:`split_reasoning` with ``thinking``: the request
    had thinking on and the model a reasoning parser, so both backends read a tagless reply
    the way vLLM's parser does). A ``length`` finish with a schema is recorded as a parse error
    (a cut reply is never valid JSON we can trust; the agents count it as a fallback).
    ``tool_calls``: the native tool calls the backend's tool-call parser read from the reply
    (``raw`` is then the text besides them).
    """
    if reasoning is None:
        text, reasoning = split_reasoning(raw, thinking=thinking)
    else:
        text = raw.strip()
    parsed, err = parse_reply(text, req.json_schema, constrained=req.constrained)
    if req.json_schema is not None and finish_reason == "length":
        where = " while thinking (no answer text)" if not text and reasoning else ""
        parsed, err = None, f"reply cut at max_tokens (finish_reason=length){where}"
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
        tool_calls=tuple(tool_calls),
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


class FailureStreak:
    """Counts requests that failed outright (``finish_reason == "error"``: an engine exception,
    a request the server refused) in a row, across calls; :meth:`update` raises
    :class:`~serving.errors.BackendError` once ``limit`` have failed in a row. One bad request
    is its own recorded fallback; a backend that fails every request stops the run instead of
    filling it with fallbacks (its journal keeps every answered call; a rerun resumes)."""

    def __init__(self, limit: int = 8, *, what: str = "the backend") -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ConfigError(f"max_failures_in_a_row={limit!r}; allowed: a whole number >= 1")
        self.limit = limit
        self.what = what
        self.count = 0

    def update(self, results: list[ChatResult]) -> None:
        """Count ``results`` in order; raise when the streak reaches the limit."""
        for res in results:
            if res.finish_reason != "error":
                self.count = 0
                continue
            self.count += 1
            if self.count >= self.limit:
                self.count = 0
                raise BackendError(
                    f"{self.what} failed {self.limit} requests in a row (last: {res.parse_error}); the "
                    "run stopped with every answered call journaled: fix the cause (the log file has "
                    "each failure), then rerun with --resume",
                    done={i: r for i, r in enumerate(results) if r.finish_reason != "error"},
                )


def over_context(prompt: int, max_tokens: int, context: int, setting: str) -> str:
    """Why a request of ``prompt`` tokens and ``max_tokens`` does not fit a ``context`` of
    tokens that ``setting`` bounds ("" when it fits): what a server answers with HTTP 400."""
    if prompt + max_tokens <= context:
        return ""
    return (
        f"prompt of {prompt:,} tokens + max_tokens {max_tokens:,} = {prompt + max_tokens:,} passes the "
        f"context of {context:,} tokens ({setting}); allowed: prompt + max_tokens <= {context:,} (a "
        "lower max_tokens, a shorter prompt, or a larger max_model_len)"
    )
