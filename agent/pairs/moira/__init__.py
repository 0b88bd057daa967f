"""The Moira agent: its own model calls (:mod:`~agent.pairs.moira.calls`) and their payloads
(:mod:`~agent.pairs.moira.payloads`), the counterfactual and pair-quality memory
(:mod:`~agent.pairs.moira.memory`), the principle rules (:mod:`~agent.pairs.moira.principles`),
the replay-gated policy memory (:mod:`~agent.pairs.moira.policy`), one window pass as a lockstep
program (:mod:`~agent.pairs.moira.episode`), its counters (:mod:`~agent.pairs.moira.stats`) and
its trace (:mod:`~agent.pairs.moira.trace`)."""

from __future__ import annotations

__all__: list[str] = []
