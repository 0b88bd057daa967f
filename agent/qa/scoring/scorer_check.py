"""The scorer of each source, named and checked: which rule grades a dataset
(:func:`scorer_label`), a scorer called with a solver's scale field where the answer has one
(:func:`score_with`), and :func:`check_scorers`, which refuses a source whose scorer cannot run
before any model call (the bank build and a reproduction run call it first)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agent.qa.core.items import Gold, QAItem
from agent.qa.scoring.scorers import ScorerSpec, spec_of
from agent.qa.scoring.scoring import JUDGED, SCORER_NAMES, gold_as_prediction, score_answer
from localfin.errors import ConfigError

__all__ = ["Scorer", "check_scorers", "default_scorer", "score_with", "scorer_label"]


#: ``scorer(dataset, gold, prediction)`` (``scale=`` too, for an answer with a scale field)
#: returns an object with a boolean ``correct`` (:func:`agent.qa.scoring.scoring.score_answer`).
Scorer = Callable[..., Any]


def default_scorer() -> Scorer:
    """The benchmarks' scorer (:func:`agent.qa.scoring.scoring.score_answer`: each benchmark's
    default rule, :data:`agent.qa.scoring.scorers.DEFAULT_SCORERS`)."""

    return score_answer


def _spec(scorer: Scorer | None, dataset: str) -> ScorerSpec | None:
    try:
        return spec_of(scorer, dataset)
    except ConfigError:  # a dataset no scorer knows by name (a test's, a plugin not installed)
        return None


def scorer_label(dataset: str, scorer: Scorer | None, judge_model: str | None) -> str:
    """What grades ``dataset``'s trajectories: the chosen scorer's label (``judge <model>`` where
    a judge grades), or a given scorer's function name."""
    spec = _spec(scorer, dataset)
    judge = f"judge {judge_model}" if judge_model else "judge (none named)"
    if spec is None:
        if dataset in JUDGED:
            return judge
        if scorer is None or scorer is score_answer:
            return SCORER_NAMES.get(dataset, dataset)
        return getattr(scorer, "__name__", type(scorer).__name__)
    if spec.judge_prompt:
        return judge if spec.name == "localfin" else f"{spec.label}: {judge}"
    return spec.label


def score_with(scorer: Scorer, dataset: str, gold: Gold, answer: str, scale: str | None) -> Any:
    """``scorer`` on an answer, with its scale field when it has one (``scale=``)."""
    if scale is None:
        return scorer(dataset, gold, answer)
    return scorer(dataset, gold, answer, scale=scale)


def check_scorers(
    items: Sequence[QAItem], scorer: Scorer | None, judge_model: str | None, extract_model: str | None = None
) -> dict[str, str]:
    """Refuse (ConfigError) a source set whose trajectories could not be scored, before any model
    call: each set's first item, its gold answer written as a solver would
    (:func:`agent.qa.scoring.scoring.gold_as_prediction`), must score correct under the set's scorer
    (a scorer a model grades: its own rule, where it has one), a judged set needs
    ``judge_model`` and an extracted one ``extract_model``. Returns set -> scorer label."""
    score = scorer or default_scorer()
    first: dict[str, QAItem] = {}
    for it in items:
        first.setdefault(it.source_set, it)
    out: dict[str, str] = {}
    for name, it in first.items():
        d = it.question.dataset
        out[name] = scorer_label(d, scorer, judge_model)
        spec = _spec(scorer, d)
        judged = bool(spec.judge_prompt) if spec is not None else d in JUDGED
        if judged and not judge_model:
            raise ConfigError(
                f"source {name!r} ({d}) is scored by a judge model and none is named; "
                "allowed: a judge model's registry key (qa.judge_model)"
            )
        if spec is not None and spec.extract and not extract_model:
            raise ConfigError(
                f"source {name!r} ({d}): its scorer ({spec.name}) reads answers with an extraction "
                "model and none is named; allowed: a model's registry key (qa.extract_model)"
            )
        if (spec is not None and spec.rule is None) or (spec is None and judged):
            continue
        try:
            s = score(d, it.gold, gold_as_prediction(d, it.gold))
        except Exception as exc:  # any failure of a scorer refuses its source, named
            raise ConfigError(
                f"source {name!r}: its scorer ({out[name]}) cannot score item {it.item_id!r}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if not getattr(s, "correct", False):
            raise ConfigError(
                f"source {name!r}: its scorer ({out[name]}) scores the gold answer of item "
                f"{it.item_id!r} as wrong ({getattr(s, 'detail', s)}); the scorer does not fit the data"
            )
    return out
