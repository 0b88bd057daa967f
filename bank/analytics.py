"""Retrieval analytics over bank snapshots (FinAcumen Appendix E): hit rate H_n, mean entries
per query E_n, adjacent-snapshot Jaccard J (empty/empty = 1), change fraction C, tau sweeps,
and the closed forms E[J] ~ n/(n+dn) and C = 1-(1-p)^dn they are checked against.

Snapshot n holds the first n entries of an order (:mod:`bank.snapshots`: the paper's stratified
order, or insertion order). Sets are computed from one float64 similarity matrix with the same
selection rule as :func:`bank.retrieval.select_hits`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from bank.errors import BankConfigError, BankInputError
from bank.plots import plot_sweep
from bank.retrieval import select_hits
from bank.schema import SnapshotRow, query_text
from bank.snapshots import SNAPSHOT_SEED, snapshot_order, stratified_order
from localfin.progress import NULL_PROGRESS, Progress

if TYPE_CHECKING:
    from bank.embedder import Embedder

__all__ = [
    "SnapshotRow",
    "similarity_matrix",
    "retrieval_sets",
    "hit_rate",
    "mean_entries",
    "jaccard",
    "change_fraction",
    "snapshot_table",
    "tau_sweep",
    "stratified_order",
    "expected_jaccard",
    "expected_change_fraction",
    "AnalysisOutput",
    "analyze_bank",
]

RSets = list[frozenset[int]]


def similarity_matrix(queries: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """Cosine similarities (Q, N) float64 of unit query rows with unit entry rows."""
    return np.asarray(queries, dtype=np.float64) @ np.asarray(vectors, dtype=np.float64).T


def retrieval_sets(
    sims: np.ndarray,
    sources: Sequence[str],
    order: np.ndarray,
    n: int,
    tau: float,
    k_max: int | None = None,
    dedupe_source: bool = True,
) -> RSets:
    """Entry-id set per query for the snapshot ``order[:n]`` (entry ids), threshold ``tau``."""
    cols = np.asarray(order[:n], dtype=np.int64)
    out: RSets = []
    for row in sims[:, cols] if n else np.zeros((len(sims), 0)):
        idx = np.flatnonzero(row >= tau)
        labels, s = cols[idx], row[idx]
        o = np.lexsort((labels, -s))
        out.append(frozenset(h.entry_id for h in select_hits(labels[o], s[o], sources, k_max, dedupe_source)))
    return out


def hit_rate(sets: RSets) -> float:
    """H_n: fraction of queries whose set is non-empty."""
    return float(np.mean([len(s) > 0 for s in sets])) if sets else 0.0


def mean_entries(sets: RSets) -> float:
    """E_n: mean set size."""
    return float(np.mean([len(s) for s in sets])) if sets else 0.0


def jaccard(a: RSets, b: RSets) -> float:
    """Mean per-query Jaccard of two snapshots' sets, 1 where both are empty."""
    _same_len(a, b)
    vals = [1.0 if not (x or y) else len(x & y) / len(x | y) for x, y in zip(a, b)]
    return float(np.mean(vals)) if vals else 1.0


def change_fraction(a: RSets, b: RSets) -> float:
    """C: fraction of queries whose set differs between two snapshots."""
    _same_len(a, b)
    return float(np.mean([x != y for x, y in zip(a, b)])) if a else 0.0


def _same_len(a: RSets, b: RSets) -> None:
    if len(a) != len(b):
        raise BankConfigError(f"set lists must cover the same queries, got {len(a)} and {len(b)}")


def snapshot_table(
    sims: np.ndarray,
    sources: Sequence[str],
    sizes: Sequence[int],
    tau: float,
    k_max: int | None = None,
    order: np.ndarray | None = None,
    dedupe_source: bool = True,
) -> list[SnapshotRow]:
    """One row per snapshot size (ascending), J and C against the previous size."""
    n_all = sims.shape[1]
    order = np.arange(n_all) if order is None else np.asarray(order)
    sizes = sorted(int(s) for s in sizes)
    if any(s < 0 or s > len(order) for s in sizes):
        raise BankConfigError(f"sizes must lie in [0, {len(order)}], got {sizes}")
    rows: list[SnapshotRow] = []
    prev: RSets | None = None
    for n in sizes:
        cur = retrieval_sets(sims, sources, order, n, tau, k_max, dedupe_source)
        rows.append(
            SnapshotRow(
                tau,
                n,
                hit_rate(cur),
                mean_entries(cur),
                None if prev is None else jaccard(prev, cur),
                None if prev is None else change_fraction(prev, cur),
            )
        )
        prev = cur
    return rows


def tau_sweep(
    sims: np.ndarray,
    sources: Sequence[str],
    sizes: Sequence[int],
    taus: Sequence[float],
    k_max: int | None = None,
    order: np.ndarray | None = None,
) -> list[SnapshotRow]:
    """:func:`snapshot_table` for each tau, concatenated."""
    return [row for tau in taus for row in snapshot_table(sims, sources, sizes, tau, k_max, order)]


def expected_jaccard(n: int, dn: int, p: float | None = None) -> float:
    """Paper's E[J_{n,n+dn}] ~ n/(n+dn). With ``p`` given, the exact value for independent
    entries under the empty/empty = 1 rule: (1-P0) n/(n+dn) + P0, P0 = (1-p)^(n+dn)."""
    base = n / (n + dn)
    if p is None:
        return base
    p0 = (1.0 - p) ** (n + dn)
    return (1.0 - p0) * base + p0


def expected_change_fraction(p: float, dn: int) -> float:
    """Paper's P(change) = 1 - (1-p)^dn for dn added entries each above tau with probability p."""
    return 1.0 - (1.0 - p) ** dn


@dataclass(frozen=True)
class AnalysisOutput:
    """What :func:`analyze_bank` wrote into ``out``: file names, queries used, snapshot sizes."""

    out: Path
    files: tuple[str, ...]
    queries: int
    sizes: tuple[int, ...]
    rows: tuple[SnapshotRow, ...]
    embedder: str = ""
    dim: int = 0
    #: per query set (the queries' ``set`` or ``dataset`` field), when they name two or more
    by_set: dict[str, tuple[SnapshotRow, ...]] = field(default_factory=dict)


def analyze_bank(
    folder: str | Path,
    queries_path: str | Path,
    embedder: Embedder,
    out: str | Path,
    *,
    steps: int = 10,
    taus: Sequence[float] = (0.50, 0.55, 0.60, 0.65, 0.70, 0.75, 0.80, 0.85, 0.90),
    k_max: int | None = None,
    order: str = "stratified",
    plots: bool = True,
    progress: Progress = NULL_PROGRESS,
) -> AnalysisOutput:
    """Snapshot metrics (H_n, E_n, Jaccard, change fraction) of an existing bank over a tau sweep,
    for the queries of a JSONL file (``question``, optional ``context``, optional ``set`` or
    ``dataset`` naming the query's benchmark).

    Snapshots are the first n entries of ``order`` (``stratified``: the paper's, or
    ``insertion``) for n = N/steps, 2N/steps, ..., N (and 0). Writes ``sweep.csv``,
    ``sweep.json`` (all queries pooled), ``sweep_by_set.csv`` (one row block per query set, when
    the queries name two or more), ``meta.json`` (the embedder and its dimension, the taus, the
    order and its seed, the bank's entries per dataset, the queries per set) and, with
    ``plots``, three PNGs into ``out``.
    """
    import csv
    import dataclasses
    import json

    from bank.workflows import open_existing, read_jsonl

    if order not in ("stratified", "insertion"):
        raise BankConfigError(f"order={order!r}; allowed: 'stratified', 'insertion'")
    if steps < 1:
        raise BankConfigError(f"steps={steps}; allowed: >= 1")
    if not taus:
        raise BankConfigError("taus is empty; give at least one cosine threshold in [-1, 1]")
    bad = [t for t in taus if not -1.0 <= t <= 1.0]
    if bad:
        raise BankConfigError(f"taus {bad} out of range; allowed: cosines in [-1, 1]")
    texts, groups = [], []
    for lineno, obj in read_jsonl(queries_path):
        if not isinstance(obj.get("question"), str):
            raise BankInputError(f"{queries_path}:{lineno}: needs a 'question' string")
        texts.append(query_text(obj["question"], str(obj.get("context", ""))))
        groups.append(str(obj.get("set") or obj.get("dataset") or ""))
    if not texts:
        raise BankInputError(f"{queries_path}: no queries")
    with open_existing(folder) as bank:
        if bank.model_id != embedder.model_id:
            raise BankConfigError(f"bank model {bank.model_id!r} differs from embedder {embedder.model_id!r}")
        with progress.task(f"embedding {len(texts)} queries"):
            sims = similarity_matrix(embedder.embed(texts), bank.vectors())
        n = len(bank)
        datasets = bank.datasets()
        perm = snapshot_order(datasets, order)
        sizes = sorted({0, *(round(n * i / steps) for i in range(1, steps + 1))})
        rows: list[SnapshotRow] = []
        labels = list(dict.fromkeys(groups)) if len(set(groups)) > 1 else []
        by_set: dict[str, list[SnapshotRow]] = {g: [] for g in labels}
        with progress.task("tau sweep", total=len(taus)) as task:
            for tau in taus:
                rows += snapshot_table(sims, bank.sources, sizes, tau, k_max, perm)
                for g in labels:
                    sel = np.asarray([i for i, x in enumerate(groups) if x == g])
                    by_set[g] += snapshot_table(sims[sel], bank.sources, sizes, tau, k_max, perm)
                task.advance()
        model_id, dim = bank.model_id or "", bank.dim or 0
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    dicts = [dataclasses.asdict(r) for r in rows]
    with open(out / "sweep.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(dicts[0]))
        w.writeheader()
        w.writerows(dicts)
    (out / "sweep.json").write_text(json.dumps(dicts, indent=1), encoding="utf-8")
    written = ["sweep.csv", "sweep.json"]
    if by_set:
        with open(out / "sweep_by_set.csv", "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=["set", *dicts[0]])
            w.writeheader()
            w.writerows({"set": g, **dataclasses.asdict(r)} for g, rs in by_set.items() for r in rs)
        written.append("sweep_by_set.csv")
    meta = {
        "embedder": model_id,
        "dim": dim,
        "taus": list(taus),
        "k_max": k_max,
        "order": order,
        "seed": SNAPSHOT_SEED if order == "stratified" else None,
        "bank_rows": n,
        "bank_by_dataset": {d: datasets.count(d) for d in sorted(set(datasets))},
        "queries": len(texts),
        "queries_by_set": {g: groups.count(g) for g in labels},
        "sizes": sizes,
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    written.append("meta.json")
    if plots:
        written += [p.name for p in plot_sweep(rows, out)]
    return AnalysisOutput(
        out,
        tuple(written),
        len(texts),
        tuple(sizes),
        tuple(rows),
        model_id,
        dim,
        {g: tuple(rs) for g, rs in by_set.items()},
    )
