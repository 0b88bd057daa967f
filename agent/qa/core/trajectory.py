"""What one solver run did, step by step: the record the evaluation traces and the bank builder
summarises. Plain frozen values, JSON-ready through :meth:`Trajectory.to_dict`.

Step kinds: ``annotate`` (memory annotator call), ``plan``, ``action`` (a tool call, a final
answer, or an unusable reply), ``final_forced`` (the answer asked for when no steps are left),
``base`` (the single call of the Base variant).

Fallback labels (recorded on the step and collected on the trajectory):
``annotate_unparsed`` (annotator reply unusable: the retrieved entries are shown as they are),
``plan_unparsed`` (plan reply unusable: the loop continues without a plan),
``bad_reply`` (an action reply that is not valid JSON for the schema, cut at max_tokens, or an
engine error), ``unknown_tool`` (cannot happen with schema decoding; kept for HTTP backends
without it), ``tool_error`` (the tool returned ``ok=False``), ``tool_crash`` (the tool raised;
the loop continues), ``gate_rejected`` (the answer check failed: reasons sent back),
``gate_unresolved`` (the check still failed when no rejections were left: the answer stands,
flagged), ``step_limit`` (no final answer within ``max_steps``: one forced final call),
``bad_reply_limit`` (too many unusable replies in a row: forced final call), ``no_answer`` (no
usable answer at all: the answer is empty); under the authors' loop
(:mod:`agent.qa.solver.authors_loop`) also ``no_tool_call`` (a reply that called no tool) and
``zero_tool_stop`` (the third such reply in a row ended the run).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["CUTS", "Step", "Trajectory", "FALLBACKS"]

FALLBACKS = (
    "annotate_unparsed",
    "plan_unparsed",
    "bad_reply",
    "unknown_tool",
    "tool_error",
    "tool_crash",
    "gate_rejected",
    "gate_unresolved",
    "step_limit",
    "bad_reply_limit",
    "no_answer",
    "no_tool_call",
    "zero_tool_stop",
)


@dataclass(frozen=True)
class Step:
    """One model call of a run and what followed from it.

    Attributes:
        index: 0-based position in the run.
        kind: ``annotate``, ``plan``, ``action``, ``final_forced`` or ``base``.
        reply: the model's final text (JSON).
        thought: the ``thought`` (or plan / reasoning) field, when the reply parsed.
        action: tool name, ``final_answer``, or "" when the reply did not parse.
        args: the action's arguments.
        observation: what the model was shown next (tool output, gate reasons, error).
        tool_ok: whether the tool call succeeded (``None``: no tool call).
        gate: the answer check's verdict as a dict (``None``: no answer proposed).
        fallback: a label of :data:`FALLBACKS`, or ``None``.
        prompt_tokens / completion_tokens / cached_tokens: the call's usage.
        latency_s: the backend's wall time for the batch holding this call.
        finish_reason: ``stop``, ``length`` or ``error``.
        request_key: the journal key of the call (links the trace to the journal).
        cuts: what a limit cut at this step, one label each time (:data:`CUTS`).
    """

    index: int
    kind: str
    reply: str = ""
    thought: str = ""
    action: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    observation: str = ""
    tool_ok: bool | None = None
    gate: dict[str, Any] | None = None
    fallback: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    latency_s: float = 0.0
    finish_reason: str = "stop"
    request_key: str = ""
    cuts: tuple[str, ...] = ()


#: What a solver limit can cut (a :attr:`Step.cuts` label): ``context`` (the question's context
#: past ``context_chars``), ``transcription`` (an image transcription past ``observation_chars``),
#: ``tool_output`` (a tool output past ``observation_chars``), ``elided`` (older tool outputs
#: elided to keep the conversation under ``max_prompt_chars``), ``thought`` (a thought at
#: ``thought_chars``), ``answer`` (an answer at ``answer_chars``), ``reply`` (a reply cut at
#: ``max_tokens``), ``history`` (a long reply shortened where the conversation repeats it).
CUTS = ("context", "transcription", "tool_output", "elided", "thought", "answer", "reply", "history")


@dataclass(frozen=True)
class Trajectory:
    """One question's run.

    Attributes:
        item_id / dataset: the question's ids.
        variant: ``base``, ``ft`` or ``ft_fm``.
        seed / temperature: sampling settings of its calls.
        steps: every model call, in order.
        answer: the final answer ("" when none), read by
            :func:`agent.qa.solver.final_answer.extract_final_answer`.
        answer_scale: the answer's separate scale field (benchmarks that score ``[answer,
            scale]``, TAT-QA), or None: the scale, if any, is written into ``answer``.
        gate_ok: the last verdict on the final answer (``None`` for Base, which has no gate).
        fallbacks: labels of every fallback taken, in order.
        memory_hits: bank entry ids retrieved (empty: no memory block).
        memory_similarities: their cosine similarities.
        memory_block: the memory text shown to the solver ("" when none).
        tool_steps: tool calls made.
        wall_s: seconds from the program's start to its end (includes waiting for the other
            programs of a lockstep batch).
        transcript: the run written out as the authors' bank reads it (their loop only, "" else).
        terminated: the answer came from the run's own final action (our ``final_answer``
            step or their ``terminate`` call), not from a forced call or a reading of the replies.
    """

    item_id: str
    dataset: str
    variant: str
    seed: int | None
    temperature: float
    steps: tuple[Step, ...]
    answer: str
    gate_ok: bool | None
    fallbacks: tuple[str, ...]
    memory_hits: tuple[int, ...] = ()
    memory_similarities: tuple[float, ...] = ()
    memory_block: str = ""
    tool_steps: int = 0
    wall_s: float = 0.0
    answer_scale: str | None = None
    transcript: str = ""
    terminated: bool = True

    @property
    def cut_counts(self) -> dict[str, int]:
        """How often each limit cut something in this run (labels of :data:`CUTS`)."""
        out: dict[str, int] = {}
        for s in self.steps:
            for c in s.cuts:
                out[c] = out.get(c, 0) + 1
        return out

    @property
    def prompt_tokens(self) -> int:
        return sum(s.prompt_tokens for s in self.steps)

    @property
    def completion_tokens(self) -> int:
        return sum(s.completion_tokens for s in self.steps)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def model_latency_s(self) -> float:
        return sum(s.latency_s for s in self.steps)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["prompt_tokens"] = self.prompt_tokens
        d["completion_tokens"] = self.completion_tokens
        d["total_tokens"] = self.total_tokens
        d["model_latency_s"] = round(self.model_latency_s, 6)
        d["cut_counts"] = self.cut_counts
        return d
