"""The extraction pass of a finished FinMMR evaluation under its ``official`` scorer: a model reads
each solution's final answer, then FinMMR's ``get_acc`` grades it (:mod:`agent.qa.scoring.answer_extract`).

Scoring, never solving: :func:`extract_run` reads the trajectories from the run's ``trace.jsonl``
(:func:`agent.qa.scoring.answer_extract.solution_text` of each), sends one ``answer_extract`` request per
item through a :class:`serving.journal.JournaledBackend` whose journal is the run folder's
``extract.sqlite`` (kept apart from the solver's), so a rerun replays it, and writes
``extract_scores.json``: per item the extracted answer, the verdict and its detail, and the
accuracy. The extraction prompt never holds the gold; the gold is read after the replies.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.qa.core import runs
from agent.qa.core.items import QAItem
from agent.qa.scoring.answer_extract import (
    extract_requests,
    extracted_answers,
    official_finmmr_scores,
    solution_text,
)
from localfin.errors import InputError
from serving.chat.backend import Backend
from serving.chat.types import ChatRequest
from serving.journal import Journal, JournaledBackend

__all__ = ["EXTRACT_JOURNAL", "EXTRACT_SCORES", "ExtractSummary", "extract_run", "run_extract_requests"]

log = logging.getLogger(__name__)

EXTRACT_JOURNAL = "extract.sqlite"
EXTRACT_SCORES = "extract_scores.json"


@dataclass(frozen=True)
class ExtractSummary:
    """The figures of one extraction pass (also written to ``extract_scores.json``)."""

    extract_model: str
    n: int
    correct: int
    accuracy: float
    unusable: int  # replies cut or off-schema (read as "None": scored 0)
    invalid: int  # extracted answers the official check refuses (empty or holding "none")
    model_calls: int
    replayed: int
    run_dir: str


def run_extract_requests(run: Path, items: Sequence[QAItem], extract_model: str) -> list[ChatRequest]:
    """The extraction request of each item's solution in the finished evaluation ``run`` (its
    trace), in order."""
    trace = {str(r.get("item_id")): r for r in runs.read_jsonl(run / runs.TRACE)}
    missing = [it.item_id for it in items if it.item_id not in trace]
    if missing:
        raise InputError(
            f"{run / runs.TRACE} has no trajectory for {len(missing)} item(s) (first: {missing[0]!r}); "
            "run the evaluation to the end first"
        )
    return extract_requests(items, [solution_text(trace[it.item_id]) for it in items], extract_model)


def extract_run(
    run_dir: str | Path,
    items: Sequence[QAItem],
    backend: Backend,
    extract_model: str,
    *,
    chunk_size: int = 256,
) -> ExtractSummary:
    """Extract and grade the final answers of the evaluation in ``run_dir`` (module docstring)."""
    run = Path(run_dir)
    requests = run_extract_requests(run, items, extract_model)
    with Journal(run / EXTRACT_JOURNAL, run_id=f"{run.name}-extract") as journal:
        jb = JournaledBackend(backend, journal, chunk_size=chunk_size)
        results = jb.chat(requests) if requests else []
    extracted = extracted_answers(results)
    scores = official_finmmr_scores(items, extracted)  # the gold is read from here on
    n, correct = len(scores), sum(s.correct for s in scores)
    summary = ExtractSummary(
        extract_model=extract_model,
        n=n,
        correct=correct,
        accuracy=correct / n if n else 0.0,
        unusable=sum(1 for _, note in extracted if note),
        invalid=sum(1 for a, _ in extracted if not a or "none" in a.lower()),
        model_calls=jb.called,
        replayed=jb.replayed,
        run_dir=str(run),
    )
    per_item = [
        {"item_id": it.item_id, "extracted": a, "correct": s.correct, "score": s.score, "detail": s.detail}
        for it, (a, _), s in zip(items, extracted, scores)
    ]
    runs.write_json(run / EXTRACT_SCORES, {**runs.to_jsonable(summary), "items": per_item})
    log.info("extract %s: accuracy %.3f on %d answers (%s)", extract_model, summary.accuracy, n, run)
    return summary
