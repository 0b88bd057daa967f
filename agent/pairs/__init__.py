"""Moira pair trading (the Moira paper), one subpackage per part:

* :mod:`agent.pairs.screen`: the causal pair screen and its evaluation on the synthetic market;
* :mod:`agent.pairs.market`: what every trader of an experiment shares: the market view, the
  t+1 settlement, the metrics, the run-folder records and the date masking;
* :mod:`agent.pairs.lifecycle`: lifecycle monitoring of the held pair (factors, news, the two
  model calls, the state machine, the monitor a run holds);
* :mod:`agent.pairs.moira`: the agent itself (its calls and payloads, counterfactual and
  pair-quality memory, principles, replay-gated policy memory, one window pass);
* :mod:`agent.pairs.baselines`: the non-LLM baselines and FinMem (:mod:`agent.pairs.baselines.finmem`);
* :mod:`agent.pairs.experiment`: configs, one experiment (agent and baselines in lockstep), the
  matrix and its executors, the manifest, summaries and the CPU demo.

Imports run down this list, never up (a test checks it); nothing here imports ``agent.report``.
"""

from __future__ import annotations

__all__: list[str] = []
