"""Moira's own model calls: pair selection, daily direction and training reflection.

Each builder renders a YAML prompt (``agent/prompts/pairs_*.yaml``) and returns a
:class:`ChatRequest` whose reply schema bounds every field (the enum of candidate labels for the
selected pair, the three actions for the direction, 1-3 principles of bounded length). The
observation travels as a JSON user message (paper A.6); company context, pair-quality memory and
accepted principles are appended to the system prompt. Parsers turn a :class:`ChatResult` into
a value or a fallback reason; they never raise on a bad reply.

Every text that reaches the model has passed through the masking helper first (the payload
builders in :mod:`agent.pairs.moira.payloads` do that); these builders add only fixed prompt text.
The prompt texts are the packaged ones or, with ``[prompt] dir``, the user's files of the same
format (:func:`agent.prompting.load_prompt`). A reply bound of 0 in :class:`PromptConfig` removes
the field's ``maxLength`` (the paper states none); the builders need no model and no tokenizer.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.pairs.lifecycle.calls import budget
from agent.pairs.market.settlement import ACTIONS, FLAT
from agent.pairs.moira.config import BLOCK_ORDERS, MaxTokens, PromptConfig
from agent.prompting import Prompt, load_prompt
from localfin.errors import ConfigError
from serving.types import ChatRequest, ChatResult, Message, Sampling

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
    budgets, prompt sizes."""

    model: str
    sampling: Sampling
    max_tokens: MaxTokens
    prompt: PromptConfig


@dataclass(frozen=True)
class Parsed:
    """A parsed reply: ``value`` (None on a fallback) and ``fallback`` (why it was not usable)."""

    value: Any
    fallback: str | None = None


def render_payload(payload: Mapping[str, Any]) -> str:
    """The JSON user message (fixed key order, compact, non-ASCII kept)."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def _request(
    s: CallSettings, call_type: str, system: str, user: str, schema: Mapping[str, Any]
) -> ChatRequest:
    return ChatRequest(
        model=s.model,
        messages=(Message("system", system), Message("user", user)),
        max_tokens=budget(s.max_tokens.for_call(call_type), schema),
        json_schema=schema,
        call_type=call_type,
        **s.sampling.request_fields(),
    )


def _check_order(block_order: str) -> None:
    if block_order not in BLOCK_ORDERS:
        raise ConfigError(f"prompt.block_order={block_order!r}; allowed: {', '.join(BLOCK_ORDERS)}")


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


def reflection_request(s: CallSettings, payload: Mapping[str, Any]) -> ChatRequest:
    """The training reflection on one round (``payload``: :func:`payloads.reflection_payload`)."""
    p = prompt_of("pairs_reflect", s.prompt.dir)
    system, user = p.render(payload=render_payload(payload))
    schema = copy.deepcopy(p.schema)
    set_bound(schema["properties"]["principles"]["items"], s.prompt.principle_max_chars)
    set_bound(schema["properties"]["principles"]["items"], s.prompt.principle_min_chars, "minLength")
    set_bound(schema["properties"]["reflection"], s.prompt.reflection_max_chars)
    return _request(s, "reflection", system, user, schema)


def parse_reflection(result: ChatResult) -> Parsed:
    """``{"reflection", "principles"}`` (principles unchecked; see :mod:`agent.pairs.moira.principles`)."""
    why = _usable(result)
    if why:
        return Parsed(None, why)
    principles = result.parsed.get("principles")
    if not isinstance(principles, list) or not principles:
        return Parsed(None, "no principles in the reply")
    return Parsed(
        {"reflection": str(result.parsed.get("reflection", "")), "principles": [str(x) for x in principles]}
    )
