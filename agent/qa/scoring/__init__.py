"""Grading answers, never solving: each benchmark's own rule (:mod:`~agent.qa.scoring.scoring`)
over the official metrics (:mod:`~agent.qa.scoring.tatqa_metric`,
:mod:`~agent.qa.scoring.finmmr_metric`, :mod:`~agent.qa.scoring.finmme_metric`) and the authors'
rules (:mod:`~agent.qa.scoring.authors_metrics`), scorers by name and their checks
(:mod:`~agent.qa.scoring.scorers`, :mod:`~agent.qa.scoring.scorer_check`), the judge model
(:mod:`~agent.qa.scoring.judge`, :mod:`~agent.qa.scoring.judge_check`,
:mod:`~agent.qa.scoring.judge_pass`) and FinMMR's answer extraction
(:mod:`~agent.qa.scoring.answer_extract`, :mod:`~agent.qa.scoring.extract_pass`)."""

from __future__ import annotations

__all__: list[str] = []
