"""Bank-size snapshots in the paper's order (FinAcumen Appendix E.1).

A snapshot of size n is the first n entries of an order over the bank. The paper's order
partitions the entries by their source benchmark (our entries' ``dataset`` field: the
benchmark and its part, e.g. ``finmmr/easy``), shuffles each group with seed 42 and takes the
first S/6 of each of its six groups for a snapshot of S. :func:`stratified_order` interleaves
the shuffled groups round-robin (groups in name order), so every prefix holds as even a draw as
the groups allow: a prefix of S has S/G entries of each of G groups while every group still
has entries left; where one runs out, the next entries come from the others in turn, so a
snapshot of n always holds n entries (the paper's nominal sizes; the paper's own snapshots fell
slightly short where entries lacked embeddings). ``insertion`` is the plain prefix in insertion
order. Both the retrieval of Base+FT+FM at a bank size (:class:`agent.qa.memory.memory.MemoryConfig`)
and the retrieval analytics use the same order, so their snapshots are the same entries.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bank.errors import BankConfigError

__all__ = ["ORDERS", "SNAPSHOT_SEED", "stratified_order", "snapshot_order"]

ORDERS = ("stratified", "insertion")
SNAPSHOT_SEED = 42  # FinAcumen E.1


def stratified_order(datasets: Sequence[str], seed: int = SNAPSHOT_SEED) -> np.ndarray:
    """The paper's snapshot order (module docstring): entry ids grouped by dataset, each group
    shuffled with ``seed``, interleaved round-robin."""
    rng = np.random.default_rng(seed)
    groups: dict[str, list[int]] = {}
    for i, d in enumerate(datasets):
        groups.setdefault(d, []).append(i)
    shuffled = [rng.permutation(np.asarray(groups[d])) for d in sorted(groups)]
    out: list[int] = []
    for j in range(max((len(g) for g in shuffled), default=0)):
        out.extend(int(g[j]) for g in shuffled if j < len(g))
    return np.asarray(out, dtype=np.int64)


def snapshot_order(
    datasets: Sequence[str], order: str = "stratified", seed: int = SNAPSHOT_SEED
) -> np.ndarray:
    """Entry ids in snapshot order: ``stratified`` (:func:`stratified_order`) or ``insertion``."""
    if order not in ORDERS:
        raise BankConfigError(f"snapshot order={order!r}; allowed: {', '.join(ORDERS)}")
    if order == "insertion":
        return np.arange(len(datasets), dtype=np.int64)
    return stratified_order(datasets, seed)
