"""Moira's own model calls: pair selection, daily direction and training reflection.

Each builder renders a YAML prompt (``agent/prompts/pairs_*.yaml``) and returns a
:class:`ChatRequest` whose reply schema bounds every field (the enum of candidate labels for the
selected pair, the three actions for the direction, 1-3 principles of bounded length). The
observation travels as a JSON user message (paper A.6); company context, pair-quality memory and
accepted principles are appended to the system prompt. Parsers turn a :class:`ChatResult` into
a value or a fallback reason; they never raise on a bad reply.

Decoding (``CallSettings.decoding``, :data:`agent.pairs.moira.config.DECODINGS`): ``schema``
sends each schema as structured outputs; ``prompt`` (the paper's) sends it only to check the
reply (``ChatRequest.constrained`` False: serving reads the first JSON object of the final text,
after any reasoning), and the training reflection asks for the paper's text form instead of
JSON: the reflection, then a line ``Principles:`` and one principle a line
(:func:`read_reflection_text`), checked against the same schema as the JSON form.

Every text that reaches the model has passed through the masking helper first (the payload
builders in :mod:`agent.pairs.moira.payloads` do that); these builders add only fixed prompt text.
The prompt texts are the packaged ones or, with ``[prompt] dir``, the user's files of the same
format (:func:`agent.prompting.load_prompt`). A reply bound of 0 in :class:`PromptConfig` removes
the field's ``maxLength`` (the paper states none); the builders need no model and no tokenizer.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.pairs.lifecycle.calls import budget
from agent.pairs.market.settlement import ACTIONS, FLAT
from agent.pairs.moira.config import BLOCK_ORDERS, DECODINGS, MaxTokens, PromptConfig
from agent.prompting import Prompt, load_prompt
from localfin.errors import ConfigError
from serving.chat.replies import parse_reply
from serving.chat.types import ChatRequest, ChatResult, Message, Sampling

__all__ = [
    "CallSettings",
    "prompt_of",
    "set_bound",
    "render_payload",
    "selection_request",
    "parse_selection",
    "direction_request",
    "parse_direction",
    "reflection_request",
    "parse_reflection",
    "read_reflection_text",
    "Parsed",
]


def prompt_of(name: str, directory: str = "") -> Prompt:
    """The prompt ``name`` a run renders: the packaged file, or the user's in ``directory``."""
    return load_prompt(name, directory or None)


def set_bound(prop: dict[str, Any], limit: int, key: str = "maxLength") -> None:
    """``prop[key] = limit`` (``maxLength`` or ``minLength`` of a string property of a reply
    schema), or no such bound at all for ``limit`` 0."""
    if limit:
        prop[key] = int(limit)
    else:
        prop.pop(key, None)


@dataclass(frozen=True)
class CallSettings:
    """What every request of one run shares: model key, sampling (the run's seed in it),
    budgets, prompt sizes, and how replies are decoded (``schema`` or ``prompt``, module
    docstring)."""

    model: str
    sampling: Sampling
    max_tokens: MaxTokens
    prompt: PromptConfig
    decoding: str = "schema"

    def __post_init__(self) -> None:
        if self.decoding not in DECODINGS:
            raise ConfigError(f"model.decoding={self.decoding!r}; allowed: {', '.join(DECODINGS)}")

    @property
    def constrained(self) -> bool:
        """Whether reply schemas go to the engine as structured outputs."""
        return self.decoding == "schema"


@dataclass(frozen=True)
class Parsed:
    """A parsed reply: ``value`` (None on a fallback) and ``fallback`` (why it was not usable)."""

    value: Any
    fallback: str | None = None


def render_payload(payload: Mapping[str, Any]) -> str:
    """The JSON user message (fixed key order, compact, non-ASCII kept)."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def _request(
    s: CallSettings,
    call_type: str,
    system: str,
    user: str,
    schema: Mapping[str, Any],
    *,
    send_schema: bool = True,
) -> ChatRequest:
    """The request; ``schema`` sets the auto budget and, with ``send_schema``, checks the reply
    (constrained under ``schema`` decoding); without it the reply is free text the caller reads."""
    return ChatRequest(
        model=s.model,
        messages=(Message("system", system), Message("user", user)),
        max_tokens=budget(s.max_tokens.for_call(call_type), schema),
        json_schema=schema if send_schema else None,
        call_type=call_type,
        constrained=s.constrained,
        **s.sampling.request_fields(),
    )


def _check_order(block_order: str) -> None:
    if block_order not in BLOCK_ORDERS:
        raise ConfigError(f"prompt.block_order={block_order!r}; allowed: {', '.join(BLOCK_ORDERS)}")


def _usable_text(result: ChatResult) -> str | None:
    """Why a free-text reply (no schema on its request) cannot be read, or None."""
    if result.finish_reason == "length":
        return "cut at max_tokens"
    if result.finish_reason == "error":
        return f"backend error: {result.parse_error or ''}"[:200]
    return None


def _usable(result: ChatResult) -> str | None:
    if result.finish_reason == "length":
        return "cut at max_tokens"
    if result.finish_reason == "error":
        return f"backend error: {result.parse_error or ''}"[:200]
    if result.parse_error is not None or result.parsed is None:
        return f"invalid reply: {result.parse_error or 'nothing parsed'}"[:200]
    return None


# -- pair selection ------------------------------------------------------------------------------


def selection_request(
    s: CallSettings,
    payload: Mapping[str, Any],
    labels: Sequence[str],
    company_lines: Sequence[str],
    memory_lines: Sequence[str],
    *,
    block_order: str = "paper",
) -> ChatRequest:
    """Pick one of ``labels`` (the candidates, ``"A/B"``) given the masked ``payload``
    (its candidates' statistics, known lifecycle states and legs' recent news). Pair
    selection has no principles, so ``block_order`` does not change its blocks (A.6: company
    context, then pair-quality memory); it is taken for one signature with the direction."""
    _check_order(block_order)
    p = prompt_of("pairs_select", s.prompt.dir)
    system, user = p.render(
        company_lines=list(company_lines),
        memory_lines=list(memory_lines),
        payload=render_payload(payload),
    )
    schema = copy.deepcopy(p.schema)
    schema["properties"]["selected_pair"]["enum"] = list(labels)
    schema["properties"]["selected_pair"]["maxLength"] = max(len(x) for x in labels)
    set_bound(schema["properties"]["pair_selection_reason"], s.prompt.reason_max_chars)
    return _request(s, "pair_selection", system, user, schema)


def parse_selection(result: ChatResult, labels: Sequence[str]) -> Parsed:
    """The selected label, or a fallback (invalid reply, cut reply, label not a candidate)."""
    why = _usable(result)
    if why:
        return Parsed(None, why)
    pick = result.parsed.get("selected_pair")
    if pick not in labels:
        return Parsed(None, f"selected_pair {pick!r} is not a candidate")
    return Parsed({"pair": pick, "reason": result.parsed.get("pair_selection_reason", "")})


# -- daily direction -----------------------------------------------------------------------------


def direction_request(
    s: CallSettings,
    payload: Mapping[str, Any],
    company_lines: Sequence[str],
    memory_lines: Sequence[str],
    principles: Sequence[str],
    *,
    block_order: str = "paper",
) -> ChatRequest:
    """Trade the held pair today. The system prompt appends, for ``block_order`` ``paper``
    (A.6), COMPANY CONTEXT, then PAIR QUALITY MEMORY, then the learned principles;
    ``memory_last`` puts the memory (which changes every step) after the principles."""
    _check_order(block_order)
    p = prompt_of("pairs_direction", s.prompt.dir)
    system, user = p.render(
        company_lines=list(company_lines),
        memory_lines=list(memory_lines),
        principles=list(principles),
        memory_last=block_order == "memory_last",
        payload=render_payload(payload),
    )
    schema = copy.deepcopy(p.schema)
    set_bound(schema["properties"]["direction_reason"], s.prompt.reason_max_chars)
    return _request(s, "direction", system, user, schema)


def parse_direction(result: ChatResult) -> Parsed:
    """``{"action", "reason"}``; on a fallback the action is FLAT (the step falls back)."""
    why = _usable(result)
    action = result.parsed.get("action") if why is None else None
    if why is None and action not in ACTIONS:
        why = f"action {action!r} not one of {', '.join(ACTIONS)}"
    if why:
        return Parsed({"action": FLAT, "reason": ""}, why)
    return Parsed({"action": action, "reason": result.parsed.get("direction_reason", "")})


# -- training reflection -------------------------------------------------------------------------


def _reflection_schema(s: CallSettings) -> dict[str, Any]:
    schema = copy.deepcopy(prompt_of("pairs_reflect", s.prompt.dir).schema)
    set_bound(schema["properties"]["principles"]["items"], s.prompt.principle_max_chars)
    set_bound(schema["properties"]["principles"]["items"], s.prompt.principle_min_chars, "minLength")
    set_bound(schema["properties"]["reflection"], s.prompt.reflection_max_chars)
    return schema


def reflection_request(s: CallSettings, payload: Mapping[str, Any]) -> ChatRequest:
    """The training reflection on one round (``payload``: :func:`payloads.reflection_payload`).
    Under ``prompt`` decoding it asks for the paper's text form and carries no schema (the
    reply is read by :func:`parse_reflection`)."""
    p = prompt_of("pairs_reflect", s.prompt.dir)
    text = not s.constrained
    system, user = p.render(payload=render_payload(payload), text_reply=text)
    return _request(s, "reflection", system, user, _reflection_schema(s), send_schema=not text)


#: The line that opens the principles in the paper's text form ("Principles:"), with the list
#: or emphasis marks a model may put around it.
_PRINCIPLES_LINE = re.compile(r"^[\s>#*_\-]*principles[\s*_]*:[\s*_]*(.*)$", re.IGNORECASE)
#: A list mark in front of a principle: "-", "*", "+", a bullet, or "1.", "1)", "(1)" followed by
#: a space (so that "1.5 standard deviations ..." keeps its number).
_MARK = re.compile(r"^\s*(?:[-*+\u2022]\s*|\(?\d{1,2}[.)]\s+|\(\d{1,2}\)\s+)")


def read_reflection_text(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """The paper's text form of a reflection reply as ``{"reflection", "principles"}``, or the
    reason it cannot be read: the text before the last ``Principles:`` line is the reflection,
    every non-empty line after it (and any text after the colon) a principle, with list marks
    removed. No such line, or no principle after it, does not parse."""
    lines = text.strip().splitlines()
    at = None
    for k, line in enumerate(lines):
        if _PRINCIPLES_LINE.match(line):
            at = k
    if at is None:
        return None, "no 'Principles:' line in the reply"
    head = _PRINCIPLES_LINE.match(lines[at])
    rest = ([head.group(1)] if head and head.group(1).strip() else []) + lines[at + 1 :]
    principles = [_MARK.sub("", x).strip().strip("*_").strip() for x in rest]
    principles = [x for x in principles if x]
    if not principles:
        return None, "no principle after the 'Principles:' line"
    return {"reflection": "\n".join(lines[:at]).strip(), "principles": principles}, None


def parse_reflection(result: ChatResult, s: CallSettings | None = None) -> Parsed:
    """``{"reflection", "principles"}`` (principles unchecked; see :mod:`agent.pairs.moira.principles`).
    ``s`` under ``prompt`` decoding: the reply is the paper's text form
    (:func:`read_reflection_text`), checked against the same schema as the JSON form."""
    if s is not None and not s.constrained:
        why = _usable_text(result)
        if why:
            return Parsed(None, why)
        value, why = read_reflection_text(result.text)
        if value is not None:
            value, why = parse_reply(json.dumps(value), _reflection_schema(s))
        if why:
            return Parsed(None, f"invalid reply: {why}"[:200])
        return Parsed({"reflection": value["reflection"], "principles": list(value["principles"])})
    why = _usable(result)
    if why:
        return Parsed(None, why)
    principles = result.parsed.get("principles")
    if not isinstance(principles, list) or not principles:
        return Parsed(None, "no principles in the reply")
    return Parsed(
        {"reflection": str(result.parsed.get("reflection", "")), "principles": [str(x) for x in principles]}
    )
