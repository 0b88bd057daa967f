"""The full trace of a Moira run (``runs/<run_id>/trace.parquet``): one row per state transition.

Rows are written in the order the run made them: pair selections (and screens without enough
candidates), direction decisions, settlements, lifecycle checks, boundary verdicts, reflections
and policy accept/reject steps. A row that came from a model call carries the request key (the
sha256 of the exact request, which is also its journal key: the prompt can be read back from
``journal.sqlite``), the reply text, the finish reason, token counts and, when the reply was not
usable, the fallback reason. Nothing in a row depends on timing or on whether a reply was
replayed from the journal, so an interrupted and resumed run writes the identical trace.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.pairs.market.provenance import ProvenanceLog
from serving.chat.types import ChatResult

__all__ = ["TraceEvent", "TraceLog", "read_trace"]


@dataclass(frozen=True)
class TraceEvent:
    """One state transition.

    phase: ``train`` or ``test``; round: training round (0 = warmup; 0 in test); step: 1-based
    step of the window (0 for round-level events); date: the session (ISO; the trace is for
    audits and never shown to the model); kind: what happened; pair: the pair held (``A/B``)
    after the event; call_type/request_key/reply/finish_reason/prompt_tokens/completion_tokens:
    the model call behind it (empty when none); decision: JSON of what was decided;
    fallback: why a reply was not used (empty when it was); state_before/state_after: the state
    that changed (pair, lifecycle state, policy); detail: JSON of the rest.
    """

    run_id: str
    seq: int
    phase: str
    round: int
    step: int
    date: str
    kind: str
    pair: str
    call_type: str = ""
    request_key: str = ""
    reply: str = ""
    finish_reason: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    decision: str = ""
    fallback: str = ""
    state_before: str = ""
    state_after: str = ""
    detail: str = ""


def _json(value: Any) -> str:
    if value is None or value == "":
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


class TraceLog:
    """An append-only list of :class:`TraceEvent` of one run, with the run's provenance log
    (what each model call's payload drew from, :mod:`agent.pairs.market.provenance`)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.events: list[TraceEvent] = []
        self.provenance = ProvenanceLog(run_id)

    def add(
        self,
        *,
        phase: str,
        round: int,
        step: int,
        date: str,
        kind: str,
        pair: str,
        result: ChatResult | None = None,
        decision: Any = None,
        fallback: str | None = None,
        state_before: str = "",
        state_after: str = "",
        detail: Mapping[str, Any] | None = None,
    ) -> TraceEvent:
        call: dict[str, Any] = {}
        if result is not None:
            call = {
                "call_type": result.call_type,
                "request_key": result.request_key,
                "reply": result.text,
                "finish_reason": result.finish_reason,
                "prompt_tokens": int(result.usage.prompt_tokens),
                "completion_tokens": int(result.usage.completion_tokens),
            }
        ev = TraceEvent(
            run_id=self.run_id,
            seq=len(self.events),
            phase=phase,
            round=round,
            step=step,
            date=date,
            kind=kind,
            pair=pair,
            decision=_json(decision),
            fallback=fallback or "",
            state_before=state_before,
            state_after=state_after,
            detail=_json(dict(detail) if detail else None),
            **call,
        )
        self.events.append(ev)
        return ev

    def write(self, path: str | Path) -> Path:
        """Write the trace as Parquet (temp file, then rename)."""
        from agent.pairs.market.records import write_rows

        return write_rows(path, self.events, TraceEvent)


def read_trace(path: str | Path) -> Any:
    """The trace as a pandas DataFrame (a torn file: a DamagedFileError naming it)."""
    from localfin.files import read_parquet

    return read_parquet(path)
