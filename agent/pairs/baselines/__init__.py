"""Moira's non-LLM baselines, one module each, on the same screen, calendar,
settlement, metrics and run-folder code as the agent:

* :mod:`~agent.pairs.baselines.fixed_direction`: Long-Short and Short-Long on the top pair;
* :mod:`~agent.pairs.baselines.equal_weight`: 1/N buy-and-hold of the pool;
* :mod:`~agent.pairs.baselines.eg_z`: Engle-Granger spread with z-score entry / exit thresholds;
* :mod:`~agent.pairs.baselines.eg_ddqn`: a Double DQN on z-score lags, position and half-life;
* :mod:`~agent.pairs.baselines.runner`: run one baseline or all of them on a window;
* :mod:`~agent.pairs.baselines.finmem.run`: the FinMem-style LLM trader (lockstep programs);
* :mod:`~agent.pairs.baselines.rolling`: rolling yearly windows over a long history;
* :mod:`~agent.pairs.baselines.plugins`: baselines of installed plugins (``localfin.baselines``).

Names are re-exported lazily so that importing the package imports neither torch nor numba.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "Window",
    "FixedDirectionConfig",
    "EqualWeightConfig",
    "EGZConfig",
    "DDQNConfig",
    "BaselineConfig",
    "DEFAULT_BASELINES",
    "RunSettings",
    "BaselineResult",
    "run_baseline",
    "run_all",
    "run_planned",
    "FinMemConfig",
    "prepare_finmem",
    "finmem_program",
    "write_finmem_run",
    "run_finmem",
    "RollingResult",
    "run_rolling",
    "BaselinePlugin",
    "PairView",
    "Decision",
]

_HOME = {
    "Window": "common",
    "FixedDirectionConfig": "fixed_direction",
    "EqualWeightConfig": "equal_weight",
    "EGZConfig": "eg_z",
    "DDQNConfig": "eg_ddqn",
    "BaselineConfig": "runner",
    "DEFAULT_BASELINES": "runner",
    "RunSettings": "runner",
    "BaselineResult": "runner",
    "run_baseline": "runner",
    "run_all": "runner",
    "run_planned": "runner",
    "FinMemConfig": "finmem.run",
    "prepare_finmem": "finmem.run",
    "finmem_program": "finmem.run",
    "write_finmem_run": "finmem.run",
    "run_finmem": "finmem.run",
    "RollingResult": "rolling",
    "run_rolling": "rolling",
    "BaselinePlugin": "plugins",
    "PairView": "plugins",
    "Decision": "plugins",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'agent.pairs.baselines' has no attribute {name!r}")
    return getattr(importlib.import_module(f"agent.pairs.baselines.{home}"), name)
