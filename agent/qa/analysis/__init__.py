"""Reading finished run folders back: the variant table and the bank's retrieval analytics
(:mod:`~agent.qa.analysis.analyze`), bootstrap intervals (:mod:`~agent.qa.analysis.bootstrap`,
:mod:`~agent.qa.analysis.intervals`) and what the solver's limits cut
(:mod:`~agent.qa.analysis.cuts`)."""

from __future__ import annotations

__all__: list[str] = []
