"""FinAcumen over a Ray cluster: evaluation, bank build and judge passes sharded over the
cluster's nodes, each shard with its own journal, gathered into the one-process run folder.

- :mod:`agent.qa.cluster.tasks`: what a shard runs on its node (the shard bodies and the
  values they are built from: the servers to call, a copy of the bank, the query vectors).
- :mod:`agent.qa.cluster.driver`: :class:`~agent.qa.cluster.driver.QACluster`, drop-in
  replacements of :func:`agent.qa.evaluation.evaluate.evaluate`,
  :func:`agent.qa.evaluation.bank_build.build_bank`, :func:`agent.qa.scoring.judge_pass.judge_run`
  and :func:`agent.qa.scoring.judge_check.judge_check` that shard the work, merge the journals
  and write the run folder with the one-process code.
"""

from __future__ import annotations

__all__: list[str] = []
