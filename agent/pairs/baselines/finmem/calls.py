"""FinMem's model calls: the daily decision, the training reflection, and the one re-ask of a
reply that failed validation.

* Requests: ``finmem_decision`` (action, reason, and the ids of the recalled items behind it,
  one list per memory layer) and ``finmem_reflection`` (a lesson on a settled training decision,
  with ids per layer), rendered from ``agent/prompts/pairs_finmem_*.yaml``. As FinMem's own
  output format does, each layer's id list may hold only the ids that layer recalled: the
  prompt names them and the reply schema's enum holds them. ``max_tokens`` 0 means "the longest
  compact reply the schema allows".
* Decoding (``CallSettings.decoding``, as ``[model] decoding``): ``schema`` sends the reply schema
  to the engine as structured outputs; ``prompt`` (FinMem's way: its guard asks for the JSON in
  the prompt and validates the reply) sends it only to check the reply: the first JSON object
  of the final text is read and checked against the same schema.
* Re-ask (:func:`reask_request`): a reply that was cut, did not parse or broke the schema is
  answered once more with the reply and what was wrong appended, as FinMem's guard re-asks
  (``num_reasks = 1``); the re-ask is a call of the same call type, and its tokens count.
* Parsers never raise: a reply that is still unusable is a recorded fallback (FLAT for a
  decision, no lesson for a reflection).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.pairs.baselines.finmem.memory import LAYERS
from agent.pairs.market.settlement import ACTIONS, FLAT
from agent.prompting import Prompt, load_prompt
from localfin.errors import ConfigError
from serving.chat.types import ChatRequest, ChatResult, Message, Sampling

__all__ = [
    "DECISION_CALL",
    "CALL_TYPES",
    "DECODINGS",
    "REFLECTION_CALL",
    "ID_FIELDS",
    "CallSettings",
    "Parsed",
    "reply_char_bound",
    "decision_request",
    "parse_decision",
    "reflection_request",
    "parse_reflection",
    "reask_request",
    "unusable",
]

DECISION_CALL = "finmem_decision"
REFLECTION_CALL = "finmem_reflection"
#: FinMem's model calls (their ``call_type`` labels).
CALL_TYPES = (DECISION_CALL, REFLECTION_CALL)
#: How replies are decoded and read (``[baselines.finmem] decoding``, as ``[model] decoding``).
DECODINGS = ("schema", "prompt")
#: The reply field of each layer's cited ids.
ID_FIELDS = {layer: f"{layer}_memory_ids" for layer in LAYERS}


def _prompt(name: str, directory: str = "") -> Prompt:
    return load_prompt(name, directory or None)


@dataclass(frozen=True)
class CallSettings:
    """What every request of one run shares (see :class:`agent.pairs.baselines.finmem.run.FinMemConfig`)."""

    model: str
    sampling: Sampling
    max_tokens_decision: int
    max_tokens_reflection: int
    reason_max_chars: int
    reflection_max_chars: int
    cite_max: int
    prompt_dir: str = ""
    decoding: str = "schema"

    def __post_init__(self) -> None:
        if self.decoding not in DECODINGS:
            raise ConfigError(f"baselines.finmem.decoding={self.decoding!r}; allowed: {', '.join(DECODINGS)}")


@dataclass(frozen=True)
class Parsed:
    """A reply's usable content and, when it was not usable, why (``fallback``)."""

    value: dict[str, Any]
    fallback: str | None = None


def _value_bound(s: Mapping[str, Any]) -> int:
    if "enum" in s:
        return max((len(json.dumps(v)) for v in s["enum"]), default=4)
    t = s.get("type")
    if t == "string":
        return 2 + 2 * int(s.get("maxLength", 256))  # quotes + worst-case escapes
    if t == "integer":
        return 20
    if t == "array":
        n = int(s.get("maxItems", 16))
        return 2 + n * (_value_bound(s.get("items", {})) + 1)
    if t == "object":
        props = s.get("properties", {})
        return 2 + sum(len(json.dumps(k)) + 1 + _value_bound(v) + 1 for k, v in props.items())
    return 16


def reply_char_bound(schema: Mapping[str, Any]) -> int:
    """Characters of the longest compact JSON reply ``schema`` allows (a token is >= 1 character)."""
    return _value_bound(schema)


def _bound(prop: dict[str, Any], limit: int) -> None:
    """A string property's maxLength (``limit`` 0: none)."""
    if limit:
        prop["maxLength"] = int(limit)
    else:
        prop.pop("maxLength", None)


def _ids_schema(schema: dict[str, Any], shown: Mapping[str, Sequence[int]], cite_max: int) -> None:
    """Each layer's id list: an enum of the ids that layer recalled, at most ``cite_max`` of them
    (none when the layer recalled nothing)."""
    for layer, name in ID_FIELDS.items():
        prop = schema["properties"][name]
        ids = sorted(shown.get(layer, ()))
        if ids:
            prop["items"] = {"type": "integer", "enum": ids}
            prop["maxItems"] = min(cite_max, len(ids))
        else:
            prop["items"] = {"type": "integer"}
            prop["maxItems"] = 0


def _allowed(shown: Mapping[str, Sequence[int]]) -> dict[str, str]:
    """What the prompt's output format says each layer's id list may hold."""
    return {
        layer: ", ".join(str(i) for i in sorted(shown.get(layer, ()))) or "none (leave the list empty)"
        for layer in LAYERS
    }


def _request(
    s: CallSettings, call_type: str, system: str, user: str, schema: dict[str, Any], budget: int
) -> ChatRequest:
    return ChatRequest(
        model=s.model,
        messages=(Message("system", system), Message("user", user)),
        max_tokens=budget if budget else reply_char_bound(schema) + 8,
        json_schema=schema,
        call_type=call_type,
        constrained=s.decoding == "schema",
        **s.sampling.request_fields(),
    )


def _render(payload: Mapping[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def decision_request(
    s: CallSettings,
    payload: Mapping[str, Any],
    *,
    character: str,
    adaptive: bool,
    company: Sequence[str],
    shown: Mapping[str, Sequence[int]],
) -> ChatRequest:
    """The daily decision on the pair (payload: current_step, pair, today, memory, ...);
    ``shown``: the ids each layer recalled."""
    p = _prompt("pairs_finmem_decision", s.prompt_dir)
    system, user = p.render(
        character=character,
        adaptive=adaptive,
        company_lines=list(company),
        payload=_render(payload),
        allowed=_allowed(shown),
    )
    schema = copy.deepcopy(p.schema)
    _bound(schema["properties"]["reason"], s.reason_max_chars)
    _ids_schema(schema, shown, s.cite_max)
    return _request(s, DECISION_CALL, system, user, schema, s.max_tokens_decision)


def unusable(result: ChatResult) -> str | None:
    """Why a reply cannot be used (None: it parsed under its schema)."""
    if result.finish_reason == "length":
        return "cut at max_tokens"
    if result.finish_reason == "error":
        return f"backend error: {result.parse_error or ''}"[:200]
    if result.parse_error is not None or not isinstance(result.parsed, dict):
        return f"invalid reply: {result.parse_error or 'nothing parsed'}"[:200]
    return None


def _cited(parsed: Mapping[str, Any], shown: Mapping[str, Sequence[int]]) -> dict[str, list[int]]:
    out = {}
    for layer, name in ID_FIELDS.items():
        known = set(shown.get(layer, ()))
        ids = parsed.get(name) or []
        out[layer] = list(dict.fromkeys(int(i) for i in ids if isinstance(i, int) and i in known))
    return out


def _flat(by_layer: Mapping[str, Sequence[int]]) -> list[int]:
    return [i for layer in LAYERS for i in by_layer.get(layer, ())]


def parse_decision(result: ChatResult, shown: Mapping[str, Sequence[int]]) -> Parsed:
    """``{"action", "reason", "cited", "cited_by_layer"}``; a fallback holds FLAT and cites
    nothing."""
    why = unusable(result)
    if why is None and result.parsed.get("action") not in ACTIONS:
        why = f"action {result.parsed.get('action')!r} not one of {', '.join(ACTIONS)}"
    if why:
        return Parsed({"action": FLAT, "reason": "", "cited": [], "cited_by_layer": {}}, why)
    p = result.parsed
    by = _cited(p, shown)
    return Parsed(
        {"action": p["action"], "reason": str(p.get("reason", "")), "cited": _flat(by), "cited_by_layer": by}
    )


def reflection_request(
    s: CallSettings, payload: Mapping[str, Any], shown: Mapping[str, Sequence[int]]
) -> ChatRequest:
    """The training reflection on one settled decision (``shown``: the ids each layer recalled
    for it)."""
    p = _prompt("pairs_finmem_reflection", s.prompt_dir)
    system, user = p.render(payload=_render(payload), allowed=_allowed(shown))
    schema = copy.deepcopy(p.schema)
    _bound(schema["properties"]["reflection"], s.reflection_max_chars)
    _ids_schema(schema, shown, s.cite_max)
    return _request(s, REFLECTION_CALL, system, user, schema, s.max_tokens_reflection)


def parse_reflection(result: ChatResult, shown: Mapping[str, Sequence[int]]) -> Parsed:
    """``{"reflection", "cited"}``; a fallback (or an empty lesson) has no reflection."""
    why = unusable(result)
    text = str(result.parsed.get("reflection", "")).strip() if why is None else ""
    if why is None and not text:
        why = "empty reflection"
    if why:
        return Parsed({"reflection": "", "cited": []}, why)
    return Parsed({"reflection": text, "cited": _flat(_cited(result.parsed, shown))})


def reask_request(s: CallSettings, request: ChatRequest, result: ChatResult, why: str) -> ChatRequest:
    """``request`` asked once more: its messages, the reply it got (the final text) and what was
    wrong with it, under the same schema, budget and call type (FinMem's one re-ask)."""
    p = _prompt("pairs_finmem_reask", s.prompt_dir)
    _system, note = p.render(error=why)
    messages = (*request.messages, Message("assistant", result.text or ""), Message("user", note))
    return ChatRequest(
        model=request.model,
        messages=messages,
        max_tokens=request.max_tokens,
        json_schema=request.json_schema,
        call_type=request.call_type,
        constrained=request.constrained,
        **s.sampling.request_fields(),
    )
