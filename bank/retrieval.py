"""FinAcumen retrieval: embed question + context head, keep entries with cosine >= tau, one per
source item, at most k_max; an empty result means no memory block at all.

Results equal an exact float64 brute force. With a cap k_max, hnswlib's approximate neighbours
only *raise* the search threshold to the k_max-th best distinct-source similarity they found
(every entry of the true answer is at least that similar), and the exact search at that
threshold then decides; so speed comes from hnswlib and correctness from the exact search.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from bank.embedder import Embedder
from bank.errors import BankConfigError
from bank.exact import ExactConfig, exact_sims
from bank.schema import BankEntry, Hit, RetrievalConfig, query_text
from bank.store import ExperienceBank

__all__ = [
    "select_hits",
    "threshold_hits",
    "retrieve_vector",
    "Retriever",
    "RetrievalResult",
    "format_memory_block",
]

log = logging.getLogger(__name__)

_SEED_FACTOR = 4  # hnsw neighbours fetched per k_max to seed the threshold
_SEED_MIN_ROWS = ExactConfig().min_rows  # below this the exact search scans every row: no seeding

SearchFn = Callable[[np.ndarray, float, int], tuple[np.ndarray, np.ndarray]]
KnnFn = Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]]


def select_hits(
    labels: np.ndarray,
    sims: np.ndarray,
    sources: Sequence[str],
    k_max: int | None,
    dedupe_source: bool = True,
) -> tuple[Hit, ...]:
    """From ``labels``/``sims`` ordered by descending similarity then ascending label, keep the
    first (most similar) entry of each source item, then the first ``k_max`` (None: all)."""
    out: list[Hit] = []
    seen: set[str] = set()
    for label, sim in zip(labels.tolist(), sims.tolist()):
        src = sources[label]
        if dedupe_source:
            if src in seen:
                continue
            seen.add(src)
        out.append(Hit(label, src, sim))
        if k_max is not None and len(out) >= k_max:
            break
    return tuple(out)


def threshold_hits(
    q: np.ndarray,
    config: RetrievalConfig,
    n: int,
    *,
    search: SearchFn,
    knn: KnnFn,
    vectors: np.ndarray,
    sources: Sequence,
) -> tuple[Hit, ...]:
    """The retrieval rule over rows < ``n`` of an index: ``search(q, threshold, limit)`` is the
    exact threshold search, ``knn(q, k)`` any approximate neighbour search (only used to seed
    the threshold when ``config.k_max`` caps the result), ``vectors`` the stored rows and
    ``sources[i]`` the source item of row i."""
    if n <= 0:
        return ()
    threshold = config.tau
    if config.k_max is not None and n >= _SEED_MIN_ROWS:
        labels, _ = knn(q, min(n, _SEED_FACTOR * config.k_max))
        labels = np.sort(labels[labels < n])
        if len(labels):
            sims = exact_sims(vectors[labels], q)
            order = np.lexsort((labels, -sims))
            seeds = select_hits(labels[order], sims[order], sources, config.k_max, config.dedupe_source)
            if len(seeds) == config.k_max:
                threshold = max(threshold, seeds[-1].similarity)
    labels, sims = search(q, threshold, n)
    return select_hits(labels, sims, sources, config.k_max, config.dedupe_source)


def retrieve_vector(
    bank: ExperienceBank,
    q: np.ndarray,
    config: RetrievalConfig,
    limit: int | None = None,
    *,
    among: np.ndarray | None = None,
) -> tuple[Hit, ...]:
    """Hits for unit query vector ``q`` over entries with id < ``limit`` (an insertion-order
    snapshot; None = all), or, with ``among``, over exactly those entry ids (a snapshot in any
    order, :mod:`bank.snapshots`): the exact search at tau over the whole bank, the entries
    outside ``among`` dropped, then the same selection rule (so the result equals the brute
    force over ``among`` alone)."""
    if among is not None:
        if limit is not None:
            raise BankConfigError("give either limit or among, not both")
        labels, sims = bank.threshold_search(q, config.tau, None)
        keep = np.isin(labels, np.asarray(among, dtype=np.int64))
        return select_hits(labels[keep], sims[keep], bank.sources, config.k_max, config.dedupe_source)
    n = len(bank) if limit is None else min(limit, len(bank))
    return threshold_hits(
        q, config, n, search=bank.threshold_search, knn=bank.knn, vectors=bank.vectors(), sources=bank.sources
    )


@dataclass(frozen=True)
class RetrievalResult:
    """Hits and their entries for one query; ``entries`` is empty when nothing passed tau."""

    text: str  # the embedded query text
    hits: tuple[Hit, ...]
    entries: tuple[BankEntry, ...]


class Retriever:
    """Retrieval over a bank with the embedder that built it."""

    def __init__(
        self,
        bank: ExperienceBank,
        embedder: Embedder,
        config: RetrievalConfig | None = None,
        record_hits: bool = False,
    ) -> None:
        if bank.model_id is not None and (bank.model_id != embedder.model_id or bank.dim != embedder.dim):
            raise BankConfigError(
                f"embedder {embedder.model_id!r} dim {embedder.dim} does not match the bank's "
                f"{bank.model_id!r} dim {bank.dim}"
            )
        self.bank = bank
        self.embedder = embedder
        self.config = config or RetrievalConfig()
        self.record_hits = record_hits

    def retrieve(self, question: str, context: str = "", limit: int | None = None) -> RetrievalResult:
        """Entries for a question and its context (limit: snapshot size, None = whole bank)."""
        text = query_text(question, context, self.config.context_chars)
        q = self.embedder.embed([text])[0]
        hits = retrieve_vector(self.bank, q, self.config, limit)
        entries = tuple(self.bank.get([h.entry_id for h in hits]))
        if self.record_hits and hits:
            self.bank.record_hits([h.entry_id for h in hits])
        return RetrievalResult(text, hits, entries)


def format_memory_block(entries: Sequence[BankEntry]) -> str:
    """Plain-text memory block of findings and cautions; "" when there are no entries (the
    prompt is then identical to the tools-only variant)."""
    if not entries:
        return ""
    parts = ["Relevant experience from solved problems:"]
    for i, e in enumerate(entries, 1):
        parts.append(f"[{i}] Similar question: {e.question}")
        if e.answer:
            parts.append(f"  Its answer: {e.answer}")
        parts.extend(f"  - Finding: {f}" for f in e.findings)
        parts.extend(f"  - Caution: {c}" for c in e.cautions)
    return "\n".join(parts)
