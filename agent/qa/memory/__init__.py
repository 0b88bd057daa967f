"""Financial Memory at inference: retrieval from the experience bank and the annotator call
(:mod:`~agent.qa.memory.memory`), and the memory block the solver reads
(:mod:`~agent.qa.memory.memory_block`); the bank is built by
:mod:`agent.qa.evaluation.bank_build`, which runs the solver."""

from __future__ import annotations

__all__: list[str] = []
