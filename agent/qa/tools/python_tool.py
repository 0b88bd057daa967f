"""FinAcumen's Python tool: model-written code in a sandboxed, stateful worker.

The paper's "numerical reasoning engine" ((o_t, sigma_t) = Execute(code_t, sigma_{t-1})): each
call runs ``code`` in the question's own worker (:class:`agent.qa.sandbox.SandboxSession`),
where the variables of earlier calls are still defined. The model sees what the code printed
and the value of its last expression (as at an interactive prompt), or the error as a short
traceback of its own code. Every number in that output goes to :attr:`ToolResult.numbers` for
the answer gate; numbers of a traceback do not.

Failures are results, never exceptions (the ReAct loop continues): ``bad_args`` (no code,
unknown keys), ``exception`` (the code raised), ``timeout`` (CPU or wall limit), ``memory``,
``output_limit``, ``crashed`` (the worker died or garbled its reply, or its reply pipe held a
reply that did not answer the call: a reply forged by the code never passes for a later call's
reply, see :mod:`agent.qa.sandbox.session`) and ``refused`` (no
isolation here: the code is not run at all). When a worker is lost, the result says the
variables are gone, and so does the next call's, which runs in a fresh worker.

The constructor checks that isolation can exist here (bubblewrap and friends, the interpreter
files) and raises :class:`SandboxUnavailable` otherwise; with ``on_unavailable="refuse"`` it
builds a tool whose every call is refused instead, so a run without a sandbox still goes on
(with the tool failing visibly) rather than stopping.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Literal

from agent.qa.sandbox import ExecResult, SandboxConfig, SandboxSession, SandboxUnavailable
from agent.qa.tools.base import MAX_TOOL_TEXT, ToolResult

__all__ = ["PythonTool", "extract_numbers", "MAX_NUMBERS"]

#: Most numbers one output contributes to the answer gate's provenance set.
MAX_NUMBERS = 1000

# A number not glued to a word: 1,234.5  -0.25  3e-4  12  .5 (not the 1 of x1 or the 64 of float64)
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")

#: Characters of printed output shown with an ``output_limit`` error.
_SHOWN_ON_OVERFLOW = 500

_RESTART_NOTE = (
    "Note: the Python worker was restarted because the previous one was stopped; "
    "variables defined before are gone."
)


def extract_numbers(text: str, limit: int = MAX_NUMBERS) -> tuple[float, ...]:
    """The finite numbers written in ``text``, in order (thousands separators allowed)."""
    out: list[float] = []
    for match in _NUMBER.finditer(text):
        try:
            value = float(match.group().replace(",", ""))
        except ValueError:
            continue
        if math.isfinite(value):
            out.append(value)
            if len(out) >= limit:
                break
    return tuple(out)


class PythonTool:
    """The Python tool of one question (see the module docstring).

    Args:
        config: sandbox limits (defaults: :class:`SandboxConfig`).
        on_unavailable: ``"raise"`` (default) raises :class:`SandboxUnavailable` here when no
            isolation is possible; ``"refuse"`` builds a tool that refuses every call.
        text_chars: longest output shown (characters); a longer one keeps its head and its
            last part (the error or value).
    """

    name = "python"
    description = (
        "Run Python 3 code (numpy and pandas available; no network; only /tmp is writable). "
        "Variables persist between calls. Print results or end with an expression to see its value."
    )

    def __init__(
        self,
        config: SandboxConfig | None = None,
        *,
        on_unavailable: Literal["raise", "refuse"] = "raise",
        text_chars: int = MAX_TOOL_TEXT,
    ) -> None:
        if on_unavailable not in ("raise", "refuse"):
            raise ValueError(f"on_unavailable must be 'raise' or 'refuse', got {on_unavailable!r}")
        self.config = config or SandboxConfig()
        self.text_chars = text_chars
        self.args_schema: Mapping[str, Any] = {
            "type": "object",
            "properties": {
                "code": {"type": "string", "minLength": 1, "maxLength": self.config.max_code_chars}
            },
            "required": ["code"],
            "additionalProperties": False,
        }
        self._session: SandboxSession | None = None
        self._refusal: str | None = None
        try:
            self._session = SandboxSession(self.config)
        except SandboxUnavailable as exc:
            if on_unavailable == "raise":
                raise
            self._refusal = str(exc)

    @property
    def session(self) -> SandboxSession | None:
        """The sandbox session (None when the tool refuses every call)."""
        return self._session

    def __call__(self, args: Mapping[str, Any]) -> ToolResult:
        code = args.get("code") if isinstance(args, Mapping) else None
        extra = sorted(set(args) - {"code"}) if isinstance(args, Mapping) else []
        if not isinstance(code, str) or not code.strip() or extra:
            got = f"unknown keys {extra}" if extra else f"code={code!r:.60}"
            text = f'bad arguments: expected {{"code": "<python source>"}}, got {got}'
            return ToolResult(False, text, (), "bad_args")
        if len(code) > self.config.max_code_chars:
            limit = self.config.max_code_chars
            text = f"bad arguments: code has {len(code)} characters, at most {limit} allowed"
            return ToolResult(False, text, (), "bad_args")
        if self._session is None or self._refusal is not None:
            return self._refused()
        try:
            result = self._session.execute(code)
        except SandboxUnavailable as exc:
            self._refusal = str(exc)
            return self._refused()
        return self._to_tool_result(result)

    def _refused(self) -> ToolResult:
        return ToolResult(False, f"refused: code was not run. {self._refusal}", (), "refused")

    def _to_tool_result(self, result: ExecResult) -> ToolResult:
        cfg = self.config
        parts: list[str] = []
        if result.restarted:
            parts.append(_RESTART_NOTE)
        stdout = result.stdout
        if result.error_kind == "output_limit" and len(stdout) > _SHOWN_ON_OVERFLOW:
            stdout = stdout[:_SHOWN_ON_OVERFLOW] + f"... [{len(stdout) - _SHOWN_ON_OVERFLOW} more chars]"
        if stdout:
            parts.append(stdout.rstrip("\n"))
        if result.value is not None:
            parts.append(f"=> {result.value}")
        numbers = extract_numbers("\n".join(p for p in (result.stdout, result.value or "") if p))
        if result.ok:
            if result.stdout == "" and result.value is None:
                parts.append("(no output: print() a value or end the code with an expression)")
            return ToolResult(True, _fit(parts, self.text_chars), numbers, None)
        kind = result.error_kind or "crashed"
        reason = {
            "timeout": f"the call ran past its CPU limit ({cfg.cpu_seconds:g} s) and was interrupted; "
            "variables are kept",
            "memory": f"the call needed more than the {cfg.memory_mb} MiB memory limit",
            "output_limit": f"the call printed more than {cfg.max_output_chars} characters and was stopped; "
            "print less (e.g. df.head(), a few values)",
        }.get(kind, "")
        if result.worker_lost:
            reason = f"{result.error_text}; its variables are gone (a fresh worker runs the next call)"
        detail = result.error_text if not result.worker_lost and kind in ("exception", "memory") else ""
        parts.append(f"Error ({kind})" + (f": {reason}" if reason else ":"))
        if detail:
            parts.append(detail.rstrip("\n"))
        return ToolResult(False, _fit(parts, self.text_chars), numbers, kind)

    def close(self) -> None:
        """Kill the worker (the question is done)."""
        if self._session is not None:
            self._session.close()

    def __enter__(self) -> PythonTool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _fit(parts: list[str], limit: int) -> str:
    """Join the parts; keep the end (the error or value) when the printed output is longer
    than ``limit`` characters."""
    text = "\n".join(parts)
    if len(text) <= limit:
        return text
    tail = "\n".join(parts[-1:])[-(limit // 2) :]
    head_room = limit - len(tail) - 60
    cut = len(text) - head_room - len(tail)
    return text[:head_room] + f"\n... [{cut} chars cut] ...\n" + tail
