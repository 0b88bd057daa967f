"""What every trader of a Moira experiment shares: the market view of the pool
(:mod:`~agent.pairs.market.view`), the t+1 settlement of a position
(:mod:`~agent.pairs.market.settlement`), the metrics (:mod:`~agent.pairs.market.metrics`),
the run-folder format (:mod:`~agent.pairs.market.records`) and the date masking of every
model-visible text (:mod:`~agent.pairs.market.masking`)."""

from __future__ import annotations

__all__: list[str] = []
