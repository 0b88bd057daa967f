"""Reproducing FinAcumen's tables: the ``[qa]`` table of a config (:mod:`~agent.reproduce.qa.plan`)
with its two protocols (:mod:`~agent.reproduce.qa.protocols`), what a plan sets up
(:mod:`~agent.reproduce.qa.setup`), one plan run (:mod:`~agent.reproduce.qa.run`) or its arms one
after another (:mod:`~agent.reproduce.qa.arms`), the report's rows (:mod:`~agent.reproduce.qa.rows`)
and a plan shrunk onto the demo set for the smoke run (:mod:`~agent.reproduce.qa.shrink`)."""

from __future__ import annotations

__all__: list[str] = []
