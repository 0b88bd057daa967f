"""QA items, with the gold answer kept apart from everything the agent may see.

A :class:`QAItem` pairs a :class:`Question` (the only thing a solver, its tools, its memory
and its answer gate receive) with a :class:`Gold` (read only by scorers and by the bank
builder on training items). Loaders build items; evaluation code hands ``item.question`` to
the agent and ``item.gold`` to the scorer, never the other way round. The one exception is
explicit and recorded: a run that reproduces the authors' released protocol may put inputs
read from the gold into the question (:mod:`agent.qa.data.gold_inputs`), and such a question names
them in ``from_gold``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from localfin.errors import ConfigError

__all__ = [
    "SPLITS",
    "ANSWER_TYPES",
    "SCALES",
    "Question",
    "Gold",
    "QAItem",
    "check_split_name",
    "with_gold_evidence",
]

#: The usual split names. A split is taken as the data names it (e.g. TAT-QA's ``test_gold``),
#: so any name of the form :data:`_SPLIT_NAME` is allowed; these are only the common ones.
SPLITS = ("train", "validation", "dev", "test")
_SPLIT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")
#: number: one numeric value; span / multi-span: text; count: an integer; choice: an option label;
#: free: free text judged by a model (FinTMMBench-style).
ANSWER_TYPES = ("number", "span", "multi-span", "count", "choice", "free")
SCALES = ("", "thousand", "million", "billion", "percent")


def check_split_name(value: str, what: str = "split") -> str:
    """``value`` if it can name a split (letters, digits, ``_``, ``.``, ``-``; at most 64
    characters, starting with a letter or digit); ConfigError naming ``what`` otherwise."""
    if not isinstance(value, str) or not _SPLIT_NAME.fullmatch(value):
        raise ConfigError(
            f"{what}={value!r}; allowed: a split name of letters, digits, '_', '.' or '-' "
            f"(e.g. {', '.join(SPLITS)}, test_gold)"
        )
    return value


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
        instructions: answer instructions shown with the question to the tools variants (empty
            unless a run asks for instructions derived from the gold answer,
            :mod:`agent.qa.data.gold_inputs`).
        from_gold: what of this question was read from its gold at test time (e.g.
            ``format_hints:authors``, ``evidence:authors``; empty: nothing). Loaders never set
            it; :func:`agent.qa.data.gold_inputs.with_gold_inputs` does, and says so.
    """

    item_id: str
    dataset: str
    text: str
    context: str = ""
    images: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    answer_format: str = ""
    instructions: tuple[str, ...] = ()
    from_gold: tuple[str, ...] = ()

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
    """One benchmark item: the question the agent sees, the gold it never sees, its split (as
    the data names it) and its subset (the benchmark's own part, e.g. FinMMR ``easy``; "" where
    the benchmark has none)."""

    question: Question
    gold: Gold
    split: str = "test"
    subset: str = ""

    def __post_init__(self) -> None:
        check_split_name(self.split, "QAItem.split")

    @property
    def item_id(self) -> str:
        return self.question.item_id

    @property
    def source_set(self) -> str:
        """The benchmark and its part, e.g. ``finmmr/easy``, ``bizbench/SEC-NUM``, ``tatqa``: the
        group a bank entry distilled from this item belongs to (the paper's snapshots draw
        evenly from these groups, :mod:`bank.snapshots`)."""
        d = self.question.dataset
        return f"{d}/{self.subset}" if self.subset else d


def with_gold_evidence(item: QAItem) -> QAItem:
    """``item`` with the evidence its gold annotation cites put into its question: the text of
    ``gold.extra['evidence_context']`` after the question's context and the image files of
    ``gold.extra['evidence_images']`` after its images (each once). This reads the gold side:
    a protocol that uses it hands the solver evidence chosen by the answer's annotation (the
    FinAcumen authors' adapter does, for FinTMMBench, in every variant). An item without such
    evidence comes back unchanged."""
    extra = item.gold.extra
    text = str(extra.get("evidence_context") or "").strip()
    images = tuple(str(x) for x in extra.get("evidence_images") or ())
    q = item.question
    context = q.context
    if text and text not in context:
        context = f"{context}\n\n{text}" if context.strip() else text
    new_images = q.images + tuple(x for x in dict.fromkeys(images) if x not in q.images)
    if context == q.context and new_images == q.images:
        return item
    return replace(item, question=replace(q, context=context, images=new_images))
