"""QA items, with the gold answer kept apart from everything the agent may see.

A :class:`QAItem` pairs a :class:`Question` (the only thing a solver, its tools, its memory
and its answer gate receive) with a :class:`Gold` (read only by scorers and by the bank
builder on training items). Loaders build items; evaluation code hands ``item.question`` to
the agent and ``item.gold`` to the scorer, never the other way round.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from localfin.errors import ConfigError

__all__ = ["SPLITS", "ANSWER_TYPES", "SCALES", "Question", "Gold", "QAItem"]

SPLITS = ("train", "validation", "dev", "test")
#: number: one numeric value; span / multi-span: text; count: an integer; choice: an option label;
#: free: free text judged by a model (FinTMMBench-style).
ANSWER_TYPES = ("number", "span", "multi-span", "count", "choice", "free")
SCALES = ("", "thousand", "million", "billion", "percent")


@dataclass(frozen=True)
class Question:
    """What the agent sees of an item.

    Attributes:
        item_id: unique within its dataset.
        dataset: benchmark name (e.g. ``tatqa``, ``finmmr``, ``bizbench``, ``demo``).
        text: the question.
        context: the item's text context (paragraphs, tables rendered as text); image places
            are marked ``<image N>`` (1-based) where the benchmark marks them.
        images: local image file paths, in ``<image N>`` order.
        options: answer options for multiple-choice items (empty otherwise).
        answer_format: what the question asks for, derived from the question text only (or the
            benchmark's published per-item instruction), never from the gold answer.
    """

    item_id: str
    dataset: str
    text: str
    context: str = ""
    images: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    answer_format: str = ""

    def __post_init__(self) -> None:
        if not self.item_id:
            raise ConfigError("Question.item_id must be non-empty")
        if not self.text.strip():
            raise ConfigError(f"Question.text of item {self.item_id!r} must be non-empty")


@dataclass(frozen=True)
class Gold:
    """The reference answer of an item (scorers and training-time bank building only).

    Attributes:
        answer: the benchmark's answer (a number, a string, or a list of strings).
        answer_type: one of :data:`ANSWER_TYPES`.
        scale: one of :data:`SCALES` (TAT-QA-style scale of a numeric answer).
        extra: benchmark-specific fields (derivation, solution code, judge rubric, dimensions).
    """

    answer: Any
    answer_type: str = "number"
    scale: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.answer_type not in ANSWER_TYPES:
            raise ConfigError(f"Gold.answer_type={self.answer_type!r}; allowed: {', '.join(ANSWER_TYPES)}")
        if self.scale not in SCALES:
            raise ConfigError(f"Gold.scale={self.scale!r}; allowed: {', '.join(repr(s) for s in SCALES)}")


@dataclass(frozen=True)
class QAItem:
    """One benchmark item: the question the agent sees, the gold it never sees, its split."""

    question: Question
    gold: Gold
    split: str = "test"

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise ConfigError(f"QAItem.split={self.split!r}; allowed: {', '.join(SPLITS)}")

    @property
    def item_id(self) -> str:
        return self.question.item_id
