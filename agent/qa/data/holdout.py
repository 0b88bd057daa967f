"""A fixed train/test partition for a benchmark that ships none (FinTMMBench, FinMME).

FinAcumen evaluates FinTMMBench on 1,136 items and FinMME on 2,220 (Table 6), which are 20 % of
the 5,676 and 11,099 items those benchmarks release, rounded up; the paper's bank also holds
entries of both (Appendix E.1 draws snapshots from all six settings), from items outside the
test part. It does not publish which items it held out. :func:`hold_out` draws a part of that
size reproducibly: the items are ranked by ``sha256(f"{seed}:{item_id}")`` and the first
``ceil(share * n)`` are the test part, the rest the train part, so the partition depends only
on the item ids, the share and the seed (not on file order), and a bank built from the train
part never holds a test item.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import replace

from agent.qa.core.items import QAItem
from localfin.errors import ConfigError

__all__ = ["HOLDOUT_SEED", "PARTS", "hold_out"]

HOLDOUT_SEED = 42
PARTS = ("train", "test")


def _rank(item_id: str, seed: int) -> str:
    return hashlib.sha256(f"{seed}:{item_id}".encode()).hexdigest()


def hold_out(items: Sequence[QAItem], share: float, part: str, *, seed: int = HOLDOUT_SEED) -> list[QAItem]:
    """The ``part`` (``train`` or ``test``) of ``items`` under a test share of ``share``, in the
    items' own order, each with its ``split`` set to the part."""
    if not 0.0 < share < 1.0:
        raise ConfigError(f"test share={share!r}; allowed: (0, 1)")
    if part not in PARTS:
        raise ConfigError(f"part={part!r}; allowed: {', '.join(PARTS)}")
    ids = [it.item_id for it in items]
    if len(set(ids)) != len(ids):
        raise ConfigError("hold_out needs unique item ids")
    n_test = math.ceil(share * len(items))
    test = set(sorted(ids, key=lambda i: _rank(i, seed))[:n_test])
    return [replace(it, split=part) for it in items if (it.item_id in test) == (part == "test")]
