"""Moira experiments: the config files (:mod:`~agent.pairs.experiment.config`,
:mod:`~agent.pairs.experiment.matrix_config`), one run of the agent
(:mod:`~agent.pairs.experiment.backtest`), one experiment with its baselines in lockstep
(:mod:`~agent.pairs.experiment.run`, :mod:`~agent.pairs.experiment.baselines`), the matrix
(:mod:`~agent.pairs.experiment.matrix`), the manifest and the CPU demo
(:mod:`~agent.pairs.experiment.demo`)."""

from __future__ import annotations

__all__: list[str] = []
