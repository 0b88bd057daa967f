"""FinMMR's official scoring: a language model reads each solution's final answer, then
``get_acc`` compares it with the gold (the ``official`` FinMMR scorer).

FinMMR's ``evaluate.py`` (addictedLL/FinMMR @ d8b12ccc) does not score the solver's text
directly: an extraction model (its ``ans_extract_model``, temperature 0) is asked for the final
answer of each solution as a numeric value or "None"; an extracted answer that is empty or
contains "none" scores 0, any other is scored by ``get_acc``
(:func:`agent.qa.scoring.finmmr_metric.finmmr_get_acc`). Here a local model does the extraction, with
our own prompt (``qa_answer_extract``: the question and the solution in, the number out, under
a JSON schema), journaled like every call (call type ``answer_extract``). The prompt never holds
the gold answer. Official runs ask again, once, for the answers that came back invalid; at
temperature 0 on a deterministic engine that request is the same and so is its reply (a
journal replays it), so none is sent: an invalid extraction scores 0 as it would after the
retry.

:func:`extract_requests` builds the calls and :func:`extracted_answers` reads them (a reply cut
or off-schema is the answer "None": a recorded fallback, scored 0). :func:`solution_text` is
what the extractor reads of a trajectory: its last model reply (the Base variant's whole answer,
the ReAct loop's final step), else the final answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent.prompting import load_prompt
from agent.qa.core.item_score import ItemScore
from agent.qa.core.items import QAItem
from agent.qa.core.schemas import char_bound
from agent.qa.scoring.finmmr_metric import finmmr_acc
from localfin.errors import ConfigError
from serving.chat.types import ChatRequest, ChatResult, Message

__all__ = [
    "EXTRACT_PROMPT",
    "EXTRACT_CALL",
    "extract_requests",
    "extracted_answers",
    "solution_text",
    "official_finmmr_scores",
]

EXTRACT_PROMPT = "qa_answer_extract"
EXTRACT_CALL = "answer_extract"
_MAX_SOLUTION_CHARS = 12_000  # a solution longer than this is cut at its start (its end holds the answer)


def solution_text(row: Mapping[str, Any]) -> str:
    """What the extractor reads of a trajectory (a trace row or :meth:`Trajectory.to_dict`)."""
    steps = row.get("steps") or []
    last = str(steps[-1].get("reply") or "") if steps and isinstance(steps[-1], Mapping) else ""
    return last or str(row.get("answer") or "")


def extract_requests(
    items: Sequence[QAItem], solutions: Sequence[str], model: str, *, max_tokens: int | None = None
) -> list[ChatRequest]:
    """One extraction request per (item, solution), in order (temperature 0, schema-bound)."""
    if len(items) != len(solutions):
        raise ConfigError(f"items ({len(items)}) and solutions ({len(solutions)}) must have the same length")
    if not model:
        raise ConfigError("the answer extractor needs a model (a registry key)")
    prompt = load_prompt(EXTRACT_PROMPT)
    budget = max_tokens if max_tokens is not None else char_bound(prompt.schema or {}) + 16
    if not 16 <= budget <= 4096:
        raise ConfigError(f"max_tokens={budget}; allowed: 16..4096")
    out = []
    for item, sol in zip(items, solutions):
        text = str(sol).strip()
        if len(text) > _MAX_SOLUTION_CHARS:
            text = "..." + text[-_MAX_SOLUTION_CHARS:]
        system, user = prompt.render(question=item.question.text, solution=text or "(empty)")
        out.append(
            ChatRequest(
                model=model,
                messages=(Message("system", system), Message("user", user)),
                max_tokens=budget,
                temperature=0.0,
                json_schema=prompt.schema,
                call_type=EXTRACT_CALL,
            )
        )
    return out


def extracted_answers(results: Sequence[ChatResult]) -> list[tuple[str, str]]:
    """``(answer, note)`` per reply; an unusable reply is ``("None", why)``."""
    out = []
    for r in results:
        parsed = r.parsed if isinstance(r.parsed, dict) else None
        if r.is_fallback or parsed is None or not isinstance(parsed.get("answer"), str):
            out.append(
                ("None", f"extraction unusable ({r.parse_error or f'finish_reason={r.finish_reason}'})")
            )
            continue
        out.append((parsed["answer"].strip(), ""))
    return out


def official_finmmr_scores(items: Sequence[QAItem], extracted: Sequence[tuple[str, str]]) -> list[ItemScore]:
    """FinMMR's official verdict on each extracted answer (the CoT check, then ``get_acc``)."""
    scores = []
    for item, (answer, note) in zip(items, extracted):
        ok = bool(finmmr_acc(answer, item.gold.answer))
        said = f"extracted {answer[:40]!r} vs gold {item.gold.answer!r}: get_acc={int(ok)}"
        scores.append(ItemScore(ok, float(ok), f"{said}; {note}" if note else said))
    return scores
