"""Reply schemas of the QA agent, built at run time from the tools and the configured bounds,
and the worst-case length of a reply (so ``max_tokens`` can always hold a complete one).

Every string has ``maxLength``, every array ``maxItems``, every object
``additionalProperties: false``; a tool's argument schema that leaves a string unbounded is
bounded here with ``arg_chars``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from localfin.errors import ConfigError

__all__ = [
    "bounded",
    "action_schema",
    "final_schema",
    "char_bound",
    "with_lengths",
    "ANSWER_PATTERNS",
    "SCALE_PROPERTY",
]

FINAL = "final_answer"

_NUM = r"[0-9][0-9,]*([.][0-9]+)?"
#: Regular expressions a final answer must match, by answer kind (:mod:`agent.qa.core.answer_format`,
#: read from the question text only): one number with an optional sign, currency mark, scale
#: word or percent sign. Other kinds are free text.
ANSWER_PATTERNS = {
    "number": rf"^[-(]?[$]?-?{_NUM}[)]?( ?(thousand|million|billion|%))?$",
    "percent": rf"^-?{_NUM} ?%?$",
    "count": r"^[0-9][0-9,]*$",
}


def bounded(schema: Mapping[str, Any], arg_chars: int) -> dict[str, Any]:
    """A copy of ``schema`` where unbounded strings get ``maxLength = arg_chars``, unbounded
    arrays ``maxItems = 8`` and objects ``additionalProperties: false``."""
    out = copy.deepcopy(dict(schema))

    def walk(node: Any) -> None:
        if not isinstance(node, dict):
            return
        kind = node.get("type")
        if kind == "string" and "enum" not in node and "const" not in node:
            node["maxLength"] = min(int(node.get("maxLength", arg_chars)), arg_chars)
        if kind == "array":
            node.setdefault("maxItems", 8)
            walk(node.get("items"))
        if kind == "object":
            node.setdefault("additionalProperties", False)
            for sub in node.get("properties", {}).values():
                walk(sub)
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in node.get(key, ()):
                walk(sub)

    walk(out)
    return out


def _action(name: str, args: Mapping[str, Any], thought_chars: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "thought": {"type": "string", "maxLength": thought_chars},
            "action": {"type": "string", "enum": [name]},
            "args": dict(args),
        },
        "required": ["thought", "action", "args"],
        "additionalProperties": False,
    }


def answer_property(answer_chars: int, pattern: str | None) -> dict[str, Any]:
    """The schema of an answer string (bounded; matching ``pattern`` when given)."""
    prop: dict[str, Any] = {"type": "string", "maxLength": answer_chars}
    if pattern:
        prop["pattern"] = pattern
    return prop


#: A separate scale field of a final answer (TAT-QA's release format: ``[answer, scale]``).
SCALE_PROPERTY = {"type": "string", "enum": ["", "thousand", "million", "billion", "percent"]}


def final_schema(
    thought_chars: int, answer_chars: int, pattern: str | None = None, *, answer_scale: bool = False
) -> dict[str, Any]:
    """The schema of a final-answer-only reply (with a ``scale`` field when ``answer_scale``)."""
    props: dict[str, Any] = {"answer": answer_property(answer_chars, pattern)}
    if answer_scale:
        props["scale"] = dict(SCALE_PROPERTY)
    args = {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }
    return _action(FINAL, args, thought_chars)


def action_schema(
    tools: Sequence[tuple[str, Mapping[str, Any]]],
    *,
    thought_chars: int,
    answer_chars: int,
    arg_chars: int,
    answer_pattern: str | None = None,
    answer_scale: bool = False,
) -> dict[str, Any]:
    """One object per action (``anyOf``): ``thought``, ``action`` (the tool's name or
    ``final_answer``) and that action's ``args``; so a reply can only call a tool that exists,
    with arguments of the right shape. ``answer_scale``: ``final_answer`` also takes ``scale``."""
    names = [n for n, _ in tools]
    if FINAL in names or len(set(names)) != len(names):
        raise ConfigError(f"tool names must be unique and not {FINAL!r}; got {names}")
    alts = [_action(n, bounded(a, arg_chars), thought_chars) for n, a in tools]
    alts.append(final_schema(thought_chars, answer_chars, answer_pattern, answer_scale=answer_scale))
    return {"anyOf": alts} if len(alts) > 1 else alts[0]


def with_lengths(schema: Mapping[str, Any] | None, lengths: Mapping[str, int]) -> dict[str, Any]:
    """A copy of a prompt file's flat object schema with ``maxLength`` (strings, or the items
    of string arrays) replaced per property name."""
    if schema is None:
        raise ConfigError("prompt has no reply schema")
    out = copy.deepcopy(dict(schema))
    for name, n in lengths.items():
        prop = out["properties"][name]
        target = prop["items"] if prop.get("type") == "array" else prop
        target["maxLength"] = int(n)
    return out


def char_bound(schema: Mapping[str, Any]) -> int:
    """Most characters a compact JSON value valid under ``schema`` can take (an upper bound;
    a token is at least one character, so it also bounds the tokens of a reply). Strings count
    twice their length as slack for escapes."""
    kind = schema.get("type")
    if "anyOf" in schema or "oneOf" in schema:
        return max(char_bound(s) for s in schema.get("anyOf", schema.get("oneOf", ())))
    if "enum" in schema:
        return max(len(json.dumps(v)) for v in schema["enum"])
    if "const" in schema:
        return len(json.dumps(schema["const"]))
    if kind == "string":
        if "maxLength" not in schema:
            raise ConfigError("unbounded string in a reply schema; give it maxLength")
        return 2 + 2 * int(schema["maxLength"])
    if kind == "integer":
        return 20
    if kind == "number":
        return 32
    if kind == "boolean":
        return 5
    if kind == "null":
        return 4
    if kind == "array":
        if "maxItems" not in schema:
            raise ConfigError("unbounded array in a reply schema; give it maxItems")
        return 2 + int(schema["maxItems"]) * (char_bound(schema.get("items", {"type": "null"})) + 1)
    if kind == "object":
        props = schema.get("properties", {})
        return 2 + sum(len(json.dumps(k)) + 2 + char_bound(v) for k, v in props.items())
    raise ConfigError(f"cannot bound schema node {dict(schema)!r}")
