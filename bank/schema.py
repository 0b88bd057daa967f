"""Values of the experience bank: entries, retrieval configuration, hits.

An entry is one distilled experience (FinAcumen §4.2 and G.2): the source question, the head of
its context, the source item's gold answer (a training item's: entries are built from training
splits only), findings from successful trajectories and cautions from failed ones, plus the id
and dimension of the embedding model that produced its vector.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from bank.errors import BankConfigError

__all__ = [
    "SnapshotRow",
    "CONTEXT_CHARS",
    "DEFAULT_TAU",
    "DEFAULT_K_MAX",
    "NewEntry",
    "BankEntry",
    "RetrievalConfig",
    "Hit",
    "EntryRecord",
    "query_text",
]

CONTEXT_CHARS = 600  # FinAcumen G.2: question + first 600 characters of context
DEFAULT_TAU = 0.65  # FinAcumen §5.5
DEFAULT_K_MAX = 5  # FinAcumen §5.5


def query_text(question: str, context: str = "", context_chars: int = CONTEXT_CHARS) -> str:
    """The text that is embedded for an entry or a query: question, newline, context head.

    ``context_chars`` is the number of leading context characters kept (600 in the paper).
    """
    if context_chars < 0:
        raise BankConfigError(f"context_chars must be >= 0, got {context_chars}")
    head = context[:context_chars]
    return f"{question}\n{head}" if head else question


@dataclass(frozen=True)
class NewEntry:
    """An entry before it is stored: what a bank builder produces for one source item."""

    source_id: str  # id of the training item the experience was distilled from
    dataset: str  # benchmark / dataset name, e.g. "TAT-QA"
    question: str
    context_head: str = ""  # first CONTEXT_CHARS characters of the item's context
    findings: tuple[str, ...] = ()  # strategies from trajectories that reached the gold answer
    cautions: tuple[str, ...] = ()  # guard rules from trajectories that failed
    #: the source item's gold answer as text (a training item's; "" when not recorded)
    answer: str = ""
    #: the source item's image files (shown with the entry where a memory block shows entries)
    images: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.source_id:
            raise BankConfigError("source_id must be a non-empty string")
        if not self.question:
            raise BankConfigError(f"question must be non-empty (source_id={self.source_id!r})")

    def text(self, context_chars: int = CONTEXT_CHARS) -> str:
        """The embedded text of this entry (same rule as for queries)."""
        return query_text(self.question, self.context_head, context_chars)


@dataclass(frozen=True)
class BankEntry:
    """A stored entry; ``id`` is its 0-based insertion rank (snapshot n holds ids < n)."""

    id: int
    source_id: str
    dataset: str
    question: str
    context_head: str
    findings: tuple[str, ...]
    cautions: tuple[str, ...]
    model_id: str  # embedding model that produced the vector
    dim: int  # embedding dimension
    created_at: float  # unix seconds
    use_count: int = 0  # times rendered into a prompt
    hit_count: int = 0  # times returned by retrieval
    answer: str = ""  # the source item's gold answer ("" in banks built before it was stored)
    images: tuple[str, ...] = ()  # the source item's image files (() in banks built before)


@dataclass(frozen=True)
class RetrievalConfig:
    """Threshold retrieval as in FinAcumen: cosine >= tau, one entry per source, at most k_max."""

    tau: float = DEFAULT_TAU  # cosine threshold in [-1, 1]
    k_max: int | None = DEFAULT_K_MAX  # cap on entries returned; None = all above tau (analytics)
    context_chars: int = CONTEXT_CHARS  # leading context characters in the query text
    dedupe_source: bool = True  # keep only the most similar entry of each source item

    def __post_init__(self) -> None:
        if not (isinstance(self.tau, (int, float)) and math.isfinite(self.tau) and -1.0 <= self.tau <= 1.0):
            raise BankConfigError(f"tau must be a finite cosine in [-1, 1], got {self.tau!r}")
        if self.k_max is not None and (not isinstance(self.k_max, int) or self.k_max < 1):
            raise BankConfigError(f"k_max must be None or an int >= 1, got {self.k_max!r}")
        if self.context_chars < 0:
            raise BankConfigError(f"context_chars must be >= 0, got {self.context_chars}")


@dataclass(frozen=True)
class Hit:
    """One retrieved entry. Results are ordered by descending similarity, then ascending id."""

    entry_id: int
    source_id: str
    similarity: float  # cosine: float64 dot product of the stored float32 unit vectors


class EntryRecord(BaseModel):
    """One line of an entries JSONL file (the `localfin bank build` input)."""

    model_config = ConfigDict(extra="forbid")

    source_id: str = Field(min_length=1)
    dataset: str = ""
    question: str = Field(min_length=1)
    context: str = ""  # full context; only its head is stored
    context_head: str | None = None  # given instead of context when already cut
    findings: list[str] = Field(default_factory=list)
    cautions: list[str] = Field(default_factory=list)
    answer: str = ""  # the source item's gold answer (training items only)
    images: list[str] = Field(default_factory=list)  # the source item's image files

    def to_new_entry(self, context_chars: int = CONTEXT_CHARS) -> NewEntry:
        head = self.context_head if self.context_head is not None else self.context[:context_chars]
        return NewEntry(
            source_id=self.source_id,
            dataset=self.dataset,
            question=self.question,
            context_head=head[:context_chars],
            findings=tuple(self.findings),
            cautions=tuple(self.cautions),
            answer=self.answer,
            images=tuple(self.images),
        )


@dataclass(frozen=True)
class SnapshotRow:
    """Metrics at one (tau, n); J and C compare with the previous snapshot (None for the first)."""

    tau: float
    n: int  # entries in the snapshot
    hit_rate: float  # fraction of queries with >= 1 entry
    mean_entries: float  # mean entries per query
    jaccard_prev: float | None
    change_prev: float | None  # fraction of queries whose set changed
