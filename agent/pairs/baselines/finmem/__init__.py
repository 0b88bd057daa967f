"""The FinMem-style LLM baseline: config, market and runs (:mod:`~agent.pairs.baselines.finmem.run`),
one run's decisions as a lockstep program (:mod:`~agent.pairs.baselines.finmem.trader`), its two
model calls (:mod:`~agent.pairs.baselines.finmem.calls`) and its layered memory
(:mod:`~agent.pairs.baselines.finmem.memory`)."""

from __future__ import annotations

__all__: list[str] = []
