"""What every stage of FinAcumen shares: an item with its gold answer kept apart
(:mod:`~agent.qa.core.items`), the score of one answer (:mod:`~agent.qa.core.item_score`),
numbers and answer forms read as financial answers write them (:mod:`~agent.qa.core.numbers`,
:mod:`~agent.qa.core.answer_format`), the reply schemas (:mod:`~agent.qa.core.schemas`), the
record of one solver run (:mod:`~agent.qa.core.trajectory`) and the run-folder format
(:mod:`~agent.qa.core.runs`)."""

from __future__ import annotations

__all__: list[str] = []
