"""The judge pass of a finished evaluation (FinTMMBench): grade its final answers with a model.

Scoring, never solving: :func:`agent.qa.evaluation.evaluate.evaluate` runs the solver on
``item.question`` only and writes the run folder; afterwards :func:`judge_run` reads the final
answers from the run's ``trace.jsonl``, pairs them with the items' gold answers, and sends one
judge request per item (:func:`agent.qa.scoring.judge.judge_requests`) through a
:class:`serving.journal.JournaledBackend` whose journal is the run folder's ``judge.sqlite``,
kept apart from the solver's ``journal.sqlite``. A rerun replays it (no model call). The
verdicts go to ``judge_scores.json`` (per item: verdict, detail; and the judged accuracy).

During the solver run a judged benchmark's items cannot be scored, so :func:`deferred_scorer`
scores them as not correct with a detail pointing at ``judge_scores.json`` (or, where the chosen
scorer has a rule of its own before its judge, as the FinAcumen authors' SQuAD match, by that
rule, as their harness does before its judge regrades); the run's own ``scores.json`` accuracy
of such a set is therefore provisional and the judged figure is the one to read. The same holds
for FinMMR under its ``official`` scorer, whose answers a model extracts after the run
(:mod:`agent.qa.scoring.extract_pass`). The judge prompt is the chosen scorer's (``qa_judge`` or the
strict ``qa_judge_strict``, :mod:`agent.qa.scoring.scorers`), or the authors' own
(:data:`agent.qa.scoring.judge.AUTHORS_JUDGE`, their prompt read from their checkout): then, as
their harness does, a judge call that fails leaves every row of the run graded by SQuAD exact
match (:func:`agent.qa.scoring.authors_metrics.fintmm_authors_em`), said in ``judge_scores.json``
(``fallback``). The paper judged with GPT-4o-mini; offline the judge is a local model the caller
names.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.qa.core import runs
from agent.qa.core.item_score import ItemScore
from agent.qa.core.items import Gold, QAItem
from agent.qa.scoring.judge import AUTHORS_JUDGE, CANDIDATE_CHARS, JUDGE_PROMPT, judge_requests, judge_scores
from agent.qa.scoring.scorer_check import Scorer
from agent.qa.scoring.scorers import spec_of
from agent.qa.scoring.scoring import score_answer
from localfin.errors import InputError
from serving.backend import Backend
from serving.journal import Journal, JournaledBackend

__all__ = [
    "JUDGED_DATASETS",
    "JUDGE_JOURNAL",
    "JUDGE_SCORES",
    "JudgeSummary",
    "deferred_scorer",
    "run_answers",
    "judge_run",
]

log = logging.getLogger(__name__)

#: Benchmarks whose answers are graded by a judge model after the run.
JUDGED_DATASETS = ("fintmmbench",)
JUDGE_JOURNAL = "judge.sqlite"
JUDGE_SCORES = "judge_scores.json"


@dataclass(frozen=True)
class JudgeSummary:
    """The figures of one judge pass (also written to ``judge_scores.json``)."""

    judge_model: str
    prompt: str
    n: int
    correct: int
    accuracy: float
    unusable: int  # judge replies that were cut or off-schema (counted incorrect)
    model_calls: int
    replayed: int
    run_dir: str


def deferred_scorer(inner: Scorer | None = None) -> Scorer:
    """A scorer for :func:`agent.qa.evaluation.evaluate.evaluate` that leaves what a model grades after
    the run to that pass (a judge: :func:`judge_run`; FinMMR's extractor:
    :func:`agent.qa.scoring.extract_pass.extract_run`) and scores everything else with ``inner``
    (default: the benchmarks' scorer). A model-graded answer scores as not correct with a
    pointer to the pass's file, or by the chosen scorer's own rule where it has one before its
    judge (provisional, said in the detail)."""

    score = inner or score_answer

    def scorer(dataset: str, gold: Gold, prediction: str, **kw: Any) -> Any:
        spec = spec_of(inner, dataset)
        graded = spec.model_graded if spec is not None else dataset in JUDGED_DATASETS
        if not graded:
            return score(dataset, gold, prediction, **kw)
        where = "extract_scores.json" if spec is not None and spec.extract else JUDGE_SCORES
        if spec is not None and spec.rule is not None and not spec.extract:
            s = score(dataset, gold, prediction, **kw)
            said = f"{s.detail}; provisional: the judge regrades it, see {where}"
            return ItemScore(s.correct, s.score, said)
        return ItemScore(False, 0.0, f"graded by a model after the run: see {where}")

    scorer.inner = inner  # type: ignore[attr-defined]  # the scorer the model passes follow
    return scorer


def run_answers(run: Path, items: Sequence[QAItem]) -> list[str]:
    """The final answer of each item in the finished evaluation ``run`` (its trace), in order."""
    trace = runs.read_jsonl(run / runs.TRACE)
    answers = {str(r.get("item_id")): str(r.get("answer") or "") for r in trace}
    missing = [it.item_id for it in items if it.item_id not in answers]
    if missing:
        raise InputError(
            f"{run / runs.TRACE} has no answer for {len(missing)} item(s) (first: {missing[0]!r}); "
            "run the evaluation to the end first"
        )
    return [answers[it.item_id] for it in items]


def judge_run(
    run_dir: str | Path,
    items: Sequence[QAItem],
    backend: Backend,
    judge_model: str,
    *,
    chunk_size: int = 256,
    max_tokens: int | None = None,
    prompt_name: str = JUDGE_PROMPT,
    candidate_chars: int = CANDIDATE_CHARS,
    authors: Any = None,
) -> JudgeSummary:
    """Judge the final answers of the evaluation in ``run_dir`` (see the module docstring).

    Args:
        run_dir: a finished evaluation folder (its ``trace.jsonl`` holds the answers).
        items: the evaluated items (their gold answers go into the judge prompts only).
        backend: serves ``judge_model`` (journaled here in ``run_dir/judge.sqlite``).
        judge_model: registry key of the judge model.
        chunk_size: judge calls per journal transaction.
        max_tokens: reply budget of one verdict (None: the verdict schema's worst case).
        prompt_name: the judge prompt (:data:`agent.qa.scoring.judge.JUDGE_PROMPTS`).
        candidate_chars: most characters of an answer shown to the judge.
        authors: the authors' checkout (``prompt_name`` :data:`agent.qa.scoring.judge.AUTHORS_JUDGE`).
    """
    run = Path(run_dir)
    predictions = run_answers(run, items)
    requests = judge_requests(
        items, predictions, judge_model, max_tokens=max_tokens, prompt_name=prompt_name,
        candidate_chars=candidate_chars, authors=authors,
    )  # fmt: skip
    with Journal(run / JUDGE_JOURNAL, run_id=f"{run.name}-judge") as journal:
        jb = JournaledBackend(backend, journal, chunk_size=chunk_size)
        results = jb.chat(requests) if requests else []
    scores = judge_scores(results, prompt_name)
    fallback = ""
    if prompt_name == AUTHORS_JUDGE and any(r.finish_reason == "error" for r in results):
        from agent.qa.data.gold_inputs import gold_text
        from agent.qa.scoring.authors_metrics import fintmm_authors_em

        fallback = "a judge call failed: every row graded by SQuAD exact match, as the authors' harness does"
        log.warning("judge %s on %s: %s", judge_model, run, fallback)
        scores = [
            ItemScore(ok, float(ok), f"SQuAD exact match (judge fallback): {ok}")
            for it, p in zip(items, predictions)
            for ok in [fintmm_authors_em(gold_text(it.gold), p)]
        ]
    n, correct = len(scores), sum(s.correct for s in scores)
    unusable = sum(1 for s in scores if s.detail.startswith("judge reply unusable"))
    summary = JudgeSummary(
        judge_model=judge_model,
        prompt=prompt_name,
        n=n,
        correct=correct,
        accuracy=correct / n if n else 0.0,
        unusable=unusable,
        model_calls=jb.called,
        replayed=jb.replayed,
        run_dir=str(run),
    )
    per_item = [
        {"item_id": it.item_id, "answer": p, "correct": s.correct, "score": s.score, "detail": s.detail}
        for it, p, s in zip(items, predictions, scores)
    ]
    runs.write_json(
        run / JUDGE_SCORES, {**runs.to_jsonable(summary), "fallback": fallback, "items": per_item}
    )
    log.info("judge %s: accuracy %.3f on %d answers (%s)", judge_model, summary.accuracy, n, run)
    return summary
