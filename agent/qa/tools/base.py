"""The contract every FinAcumen tool follows.

A tool is called by the ReAct loop with a JSON-ready mapping of arguments (validated against
``args_schema``) and returns a :class:`ToolResult`: the text the model sees (bounded), whether
the call succeeded, and the numbers it produced (for the answer gate, which checks that every
number of a final answer traces to the context, an image transcription or a tool output). A
tool never raises for a bad call by the model: a bad argument, a crash inside the tool or a
sandbox limit is an ``ok=False`` result whose text says what went wrong, so the loop continues.
Tools hold per-question state (e.g. a Python worker) until :meth:`Tool.close`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

__all__ = ["ToolResult", "Tool", "MAX_TOOL_TEXT", "TOOL_TEXT_CEILING", "cut_text", "bounded"]

#: Most characters of one tool output shown to the model by default (the toolset's
#: ``text_chars``; the rest is cut with a marker).
MAX_TOOL_TEXT = 4000
#: Most characters a :class:`ToolResult` holds whatever the toolset's bound (memory only).
TOOL_TEXT_CEILING = 100_000


def cut_text(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the cut marked and counted."""
    if len(text) <= limit:
        return text
    return text[: limit - 40] + f"\n... [{len(text) - limit + 40} chars cut]"


def bounded(result: ToolResult, limit: int) -> ToolResult:
    """``result`` with its text cut to ``limit`` characters (the same result when shorter)."""
    return result if len(result.text) <= limit else replace(result, text=cut_text(result.text, limit))


@dataclass(frozen=True)
class ToolResult:
    """Outcome of one tool call.

    Attributes:
        ok: False for a failed call (bad arguments, error in the code, limit hit, tool crash).
        text: what the model sees (the toolset cuts it to its ``text_chars``, by default
            :data:`MAX_TOOL_TEXT`; at most :data:`TOOL_TEXT_CEILING` characters here).
        numbers: numeric values the output contains (for the answer gate's provenance check).
        error: short machine-readable reason when not ok (e.g. ``timeout``, ``memory``,
            ``bad_args``, ``exception``, ``refused``).
        images: image files the output refers to (a retrieved chart); the solver attaches them
            to the model's next message when the model takes images.
    """

    ok: bool
    text: str
    numbers: tuple[float, ...] = field(default=())
    error: str | None = None
    images: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if len(self.text) > TOOL_TEXT_CEILING:
            object.__setattr__(self, "text", cut_text(self.text, TOOL_TEXT_CEILING))


@runtime_checkable
class Tool(Protocol):
    """A deterministic tool: ``name``, a one-line ``description`` for the prompt, the JSON
    schema of its arguments object, a call, and ``close`` for per-question resources."""

    name: str
    description: str
    args_schema: Mapping[str, Any]

    def __call__(self, args: Mapping[str, Any]) -> ToolResult: ...

    def close(self) -> None: ...
