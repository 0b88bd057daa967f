"""The FinMem-style LLM baseline: its settings (:mod:`~agent.pairs.baselines.finmem.config`), the
window it reads, with the pair's news and filings (:mod:`~agent.pairs.baselines.finmem.market`),
runs (:mod:`~agent.pairs.baselines.finmem.run`), one run's decisions as a lockstep program
(:mod:`~agent.pairs.baselines.finmem.trader`), its model calls and their re-ask
(:mod:`~agent.pairs.baselines.finmem.calls`), the texts its memory holds
(:mod:`~agent.pairs.baselines.finmem.texts`), the pair's observation
(:mod:`~agent.pairs.baselines.finmem.observe`), the served context its prompts are checked
against (:mod:`~agent.pairs.baselines.finmem.context`) and its layered memory
(:mod:`~agent.pairs.baselines.finmem.memory`)."""

from __future__ import annotations

__all__: list[str] = []
