"""A deterministic backend for unit tests only: replies come from a script, not a model.

Never used by the demo or a benchmark. A reply is chosen by the first rule whose call type
(and optional substring of the last user message) matches; a rule's reply may be a string, a
JSON-ready value (serialised), or a callable ``request -> str``. For a request with native
``tools`` the reply is read as a Hermes-style server would read it: each
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` is a tool call (ids ``call_0``,
``call_1``, ...) and the text before the first is the reply's text.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from serving.errors import ConfigError
from serving.replies import build_result, error_result
from serving.types import ChatRequest, ChatResult, ToolCall, Usage, ensure_requests

__all__ = ["Rule", "ScriptedBackend", "tagged_tool_calls"]

_TAGGED = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


def tagged_tool_calls(text: str) -> tuple[str, tuple[ToolCall, ...]]:
    """The text before the first ``<tool_call>`` block and the calls of the blocks that parse
    (a block that is not a JSON object with a ``name`` is left out)."""
    calls = []
    for i, m in enumerate(_TAGGED.finditer(text)):
        try:
            d = json.loads(m.group(1))
        except json.JSONDecodeError:
            continue
        if isinstance(d, dict) and isinstance(d.get("name"), str):
            args = d.get("arguments", {})
            calls.append(
                ToolCall(f"call_{i}", d["name"], args if isinstance(args, str) else json.dumps(args))
            )
    head = text.split("<tool_call>", 1)[0] if calls else text
    return head, tuple(calls)


Reply = str | Callable[[ChatRequest], str] | dict | list


@dataclass(frozen=True)
class Rule:
    """Reply with ``reply`` to requests of ``call_type`` (``*``: any) whose last message
    contains ``contains`` (empty: any)."""

    call_type: str
    reply: Any
    contains: str = ""


class ScriptedBackend:
    """Scripted replies; counts calls so tests can assert what reached the "model"."""

    name = "scripted"

    def __init__(
        self,
        rules: Sequence[Rule] = (),
        *,
        default: Reply | None = None,
        fail_on: Callable[[ChatRequest], bool] | None = None,
    ) -> None:
        self.rules = list(rules)
        self.default = default
        self.fail_on = fail_on
        self.calls: list[ChatRequest] = []

    def _reply_for(self, req: ChatRequest) -> str:
        last = req.messages[-1].content
        for rule in self.rules:
            if rule.call_type in ("*", req.call_type) and rule.contains in last:
                return self._render(rule.reply, req)
        if self.default is None:
            raise ConfigError(f"ScriptedBackend has no rule for call_type={req.call_type!r} and no default")
        return self._render(self.default, req)

    @staticmethod
    def _render(reply: Reply, req: ChatRequest) -> str:
        if callable(reply):
            return str(reply(req))
        if isinstance(reply, (dict, list)):
            return json.dumps(reply)
        return str(reply)

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        out = []
        for req in ensure_requests(requests):
            self.calls.append(req)
            t0 = time.perf_counter()
            if self.fail_on is not None and self.fail_on(req):
                out.append(error_result(req, "scripted failure", backend=self.name))
                continue
            raw = self._reply_for(req)
            words = raw.split()
            finish = "stop"
            if len(words) > req.max_tokens:  # one "token" per word in the script
                raw, finish = " ".join(words[: req.max_tokens]), "length"
            prompt_tokens = sum(len(m.content.split()) for m in req.messages)
            calls: tuple[ToolCall, ...] = ()
            text = raw
            if req.tools and req.tool_choice != "none":
                text, calls = tagged_tool_calls(raw)
            out.append(
                build_result(
                    req,
                    text,
                    finish_reason=finish,
                    usage=Usage(prompt_tokens, len(raw.split()), 0),
                    latency_s=time.perf_counter() - t0,
                    backend=self.name,
                    revision="scripted",
                    tool_calls=calls,
                )
            )
        return out

    def close(self) -> None:
        return None
