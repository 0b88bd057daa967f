"""Reproducing Moira's tables: running a config through the experiment matrix
(:mod:`~agent.reproduce.moira.run`), what it runs per backbone for the GPU plan
(:mod:`~agent.reproduce.moira.workload`) and the paper's token tables computed from its runs
(:mod:`~agent.reproduce.moira.token_tables`)."""

from __future__ import annotations

__all__: list[str] = []
