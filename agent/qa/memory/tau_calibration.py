"""Setting the cosine threshold by the hit rate it gives (``qa.tau_calibration = "hit_rate"``).

The paper set tau = 0.65 with the ``text-embedding-v3`` embedder, where it gave a hit rate (the
share of test queries with at least one bank entry at or above tau) of 79.8 % on its full
1,200-entry bank (§5.4, Fig. 3(a)). With another embedder the same tau admits a different share
of queries. :func:`tau_for_hit_rate` picks, for the run's own embedder and bank, the tau at which
the run's test queries reach a target hit rate: the largest tau with at least that share of
queries hit, i.e. the ``target`` quantile from the top of each query's best cosine similarity.
It reads the questions (the text the memory embeds) and the bank, never a gold answer. The
choice is ours (the paper fixed tau), declared in the run's notes with the tau it gave.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from agent.qa.core.items import Question
from localfin.errors import ConfigError

__all__ = ["CALIBRATIONS", "tau_for_hit_rate", "best_similarities"]

#: ``none``: tau as set; ``hit_rate``: tau set to give ``tau_hit_rate`` (module docstring)
CALIBRATIONS = ("none", "hit_rate")


def best_similarities(memory: object, questions: Sequence[Question]) -> np.ndarray:
    """Each question's best cosine similarity over the memory's bank (its snapshot), as
    retrieval embeds it; ``-inf`` for an empty bank."""
    texts = [memory.query_text(q) for q in questions]  # type: ignore[attr-defined]
    bank = memory.retriever.bank  # type: ignore[attr-defined]
    ids = np.asarray(memory.snapshot_ids(), dtype=np.int64)  # type: ignore[attr-defined]
    if not texts:
        return np.zeros(0)
    if len(ids) == 0:
        return np.full(len(texts), -math.inf)
    q = np.asarray(memory.retriever.embedder.embed(texts), dtype=np.float64)  # type: ignore[attr-defined]
    v = np.asarray(bank.vectors(), dtype=np.float64)[ids]
    return (q @ v.T).max(axis=1)


def tau_for_hit_rate(best: Sequence[float], target: float) -> float:
    """The largest tau in (0, 1) at which at least ``target`` of the queries (their ``best``
    similarities) are hit; ConfigError for a target outside (0, 1] or no query."""
    if not 0.0 < target <= 1.0:
        raise ConfigError(f"qa.tau_hit_rate={target}; allowed: (0, 1]")
    s = np.sort(np.asarray(best, dtype=np.float64))[::-1]
    s = s[np.isfinite(s)]
    if len(s) == 0:
        raise ConfigError("qa.tau_calibration='hit_rate' needs test questions and a bank with entries")
    need = math.ceil(target * len(best) - 1e-9)
    if need > len(s):
        return float(np.nextafter(0.0, 1.0))
    tau = float(s[max(need, 1) - 1])
    return min(max(tau, float(np.nextafter(0.0, 1.0))), float(np.nextafter(1.0, 0.0)))
