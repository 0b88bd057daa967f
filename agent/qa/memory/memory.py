"""Financial Memory at inference: retrieval from the experience bank and the annotator call.

Retrieval goes through :class:`bank.retrieval.Retriever`'s rule (question + the first 600
context characters embedded; cosine >= tau = 0.65; one entry per source item; at most
k_max = 5). Retrieval only reads the bank: hit counters are not written at test time. A
bank-size snapshot (``bank_limit``) takes its entries in the paper's stratified order by
default (:mod:`bank.snapshots`), the same entries the retrieval analytics use.

When at least one entry passes tau, the solver's prompt starts with a memory block
(:mod:`agent.qa.memory.memory_block`). With the annotator on (``annotator``, the default), one
annotator call (call type ``qa_annotate``) first rewrites the entries into directives for this
question. The ``directives`` block (``block``, the default) is made of those directives; if the
annotator's reply is unusable (bad JSON, cut), or the annotator is off, it shows the retrieved
findings and cautions as stored (fallback ``annotate_unparsed`` for the unusable reply); if the
annotator keeps no directive, the block is empty. The ``entries`` block (the authors' released
code) shows every retrieved entry (question, answer, findings, cautions) with its images, and
the directives after them when the annotator is on. When no entry passes tau there is no
annotator call and no memory block at all: the solver's requests are byte-identical to the
tools-only variant's.

``mode`` is the authors' ``--memory-mode``: ``test`` retrieves (the paper's and the default);
``train`` retrieves nothing at test time (their harness's default, which writes the test items'
experience into the bank instead: that write is not reproduced, as nothing read in the same run
depends on it), so Base+FT+FM then runs without a memory block.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agent.prompting import load_prompt
from agent.qa.core.items import Question
from agent.qa.core.schemas import char_bound, with_lengths
from agent.qa.core.trajectory import Step
from agent.qa.memory.memory_block import BLOCKS, MEMORY_HEADER, authors_block, directives_block, entries_block
from bank.retrieval import RetrievalResult, Retriever, format_memory_block, retrieve_vector
from bank.schema import BankEntry, RetrievalConfig, query_text
from bank.snapshots import ORDERS, SNAPSHOT_SEED, snapshot_order
from localfin.errors import ConfigError
from serving.lockstep import Program
from serving.types import ChatRequest, Message

__all__ = ["MEMORY_MODES", "MemoryConfig", "ExperienceMemory", "MEMORY_HEADER"]

#: the authors' memory modes at test time (``MemoryConfig.mode``)
MEMORY_MODES = ("test", "train")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MemoryConfig:
    """Retrieval and annotation settings.

    Attributes:
        tau: cosine threshold (0.65 in the paper).
        k_max: most entries used (5 in the paper).
        context_chars: leading context characters embedded with the question (600).
        bank_limit: use only a snapshot of ``bank_limit`` entries (None = the whole bank): the
            first ``bank_limit`` of ``snapshot_order`` (:mod:`bank.snapshots`).
        snapshot_order: ``stratified`` (the paper's: entries by source benchmark, each shuffled
            with ``snapshot_seed``, interleaved) or ``insertion`` (the first entries added).
        snapshot_seed: seed of the stratified order (42 in the paper).
        directive_chars: longest directive the annotator may write (characters).
        max_directives: most directives kept.
        entry_chars: longest finding/caution shown to the annotator (characters).
        max_tokens: annotator reply budget; None = the schema's worst case.
        block: the memory block's form, one of :data:`agent.qa.memory.memory_block.BLOCKS`
            (``authors`` needs the authors' checkout, ``ExperienceMemory(authors=...)``).
        annotator: make the annotator call (off: no call; see the module docstring).
        mode: ``test`` (retrieve) or ``train`` (retrieve nothing; the module docstring).
    """

    tau: float = 0.65
    k_max: int = 5
    context_chars: int = 600
    bank_limit: int | None = None
    snapshot_order: str = "stratified"
    snapshot_seed: int = SNAPSHOT_SEED
    directive_chars: int = 200
    max_directives: int = 5
    entry_chars: int = 300
    max_tokens: int | None = None
    block: str = "directives"
    annotator: bool = True
    mode: str = "test"

    def __post_init__(self) -> None:
        RetrievalConfig(tau=self.tau, k_max=self.k_max, context_chars=self.context_chars)  # validates
        if self.bank_limit is not None and self.bank_limit < 0:
            raise ConfigError(f"MemoryConfig.bank_limit={self.bank_limit}; allowed: >= 0 or None")
        if self.snapshot_order not in ORDERS:
            raise ConfigError(
                f"MemoryConfig.snapshot_order={self.snapshot_order!r}; allowed: {', '.join(ORDERS)}"
            )
        if not 20 <= self.directive_chars <= 2000:
            raise ConfigError(f"MemoryConfig.directive_chars={self.directive_chars}; allowed: 20..2000")
        if not 1 <= self.max_directives <= 20:
            raise ConfigError(f"MemoryConfig.max_directives={self.max_directives}; allowed: 1..20")
        if not 20 <= self.entry_chars <= 4000:
            raise ConfigError(f"MemoryConfig.entry_chars={self.entry_chars}; allowed: 20..4000")
        if self.block not in BLOCKS:
            raise ConfigError(f"MemoryConfig.block={self.block!r}; allowed: {', '.join(BLOCKS)}")
        if self.mode not in MEMORY_MODES:
            raise ConfigError(f"MemoryConfig.mode={self.mode!r}; allowed: {', '.join(MEMORY_MODES)}")

    @property
    def retrieval(self) -> RetrievalConfig:
        return RetrievalConfig(tau=self.tau, k_max=self.k_max, context_chars=self.context_chars)


class ExperienceMemory:
    """Retrieval plus the annotator, over a bank opened by the caller (read only here).

    Args:
        retriever: a :class:`bank.retrieval.Retriever` (its own tau/k_max are replaced by
            ``config``'s, and hit counting is off).
        config: memory settings.
    """

    def __init__(
        self, retriever: Retriever, config: MemoryConfig | None = None, *, authors: Any = None
    ) -> None:
        self.config = config or MemoryConfig()
        self.retriever = retriever
        self.authors = authors
        if self.config.block == "authors" and authors is None:
            raise ConfigError(
                "MemoryConfig.block='authors' shows the memory block in the authors' words; give their "
                "checkout (qa.authors_code)"
            )
        self._prompt = load_prompt("qa_annotate")
        self._schema = with_lengths(self._prompt.schema, {"directives": self.config.directive_chars})
        self._schema["properties"]["directives"]["maxItems"] = self.config.max_directives
        self._among = self._snapshot()

    def _snapshot(self) -> np.ndarray | None:
        """The entry ids of the bank-size snapshot (None: the whole bank, or a plain prefix)."""
        c, bank = self.config, self.retriever.bank
        if c.bank_limit is None or c.snapshot_order == "insertion" or c.bank_limit >= len(bank):
            return None
        return np.sort(snapshot_order(bank.datasets(), c.snapshot_order, c.snapshot_seed)[: c.bank_limit])

    def snapshot_ids(self) -> tuple[int, ...]:
        """The entry ids retrieval draws from (the snapshot, or every entry)."""
        n = len(self.retriever.bank)
        if self._among is not None:
            return tuple(int(i) for i in self._among)
        return tuple(range(n if self.config.bank_limit is None else min(n, self.config.bank_limit)))

    # ------------------------------------------------------------------ retrieval
    def query_text(self, question: Question) -> str:
        """The embedded text: question, newline, the first ``context_chars`` of the context."""
        return query_text(question.text, question.context, self.config.context_chars)

    def retrieve_many(self, questions: Sequence[Question]) -> list[RetrievalResult]:
        """Retrieval for every question (one embedding batch)."""
        texts = [self.query_text(q) for q in questions]
        if not texts:
            return []
        if self.config.mode == "train":  # the authors' train mode: nothing retrieved at test time
            return [RetrievalResult(text, (), ()) for text in texts]
        bank = self.retriever.bank
        vecs = self.retriever.embedder.embed(texts)
        out = []
        for text, vec in zip(texts, vecs):
            if self._among is not None:
                hits = retrieve_vector(bank, vec, self.config.retrieval, among=self._among)
            else:
                hits = retrieve_vector(bank, vec, self.config.retrieval, self.config.bank_limit)
            entries = tuple(bank.get([h.entry_id for h in hits]))
            out.append(RetrievalResult(text, hits, entries))
        return out

    # ------------------------------------------------------------------ annotation
    def _clip(self, text: str) -> str:
        n = self.config.entry_chars
        return text if len(text) <= n else text[: n - 3] + "..."

    def annotate_request(
        self, question: Question, entries: Sequence[BankEntry], *, model: str
    ) -> ChatRequest:
        """The annotator call for ``question`` and its retrieved ``entries`` (temperature 0)."""
        shown = [
            {
                "question": self._clip(e.question),
                "answer": self._clip(e.answer),
                "findings": [self._clip(f) for f in e.findings],
                "cautions": [self._clip(c) for c in e.cautions],
            }
            for e in entries
        ]
        system, user = self._prompt.render(
            question=question.text, context_head=question.context[: self.config.context_chars], entries=shown
        )
        return ChatRequest(
            model=model,
            messages=(Message("system", system), Message("user", user)),
            max_tokens=self.config.max_tokens or char_bound(self._schema) + 16,
            temperature=0.0,
            seed=0,
            json_schema=self._schema,
            call_type="qa_annotate",
        )

    def annotate(
        self, question: Question, retrieval: RetrievalResult, *, model: str, image_room: int = 0
    ) -> Program[tuple[str, Step | None, tuple[str, ...]]]:
        """Sub-program: ``(memory block, annotate step, entry images to attach)``; ``("", None,
        ())`` without a hit (no call). ``image_room``: most entry images the prompt can take."""
        if not retrieval.entries:
            return "", None, ()
        c, entries = self.config, retrieval.entries
        if not c.annotator:
            if c.block == "authors":
                block, images = authors_block(self.authors, entries, max_images=image_room)
                return block, None, images
            if c.block == "entries":
                block, images = entries_block(entries, max_images=image_room)
                return block, None, images
            return format_memory_block(entries), None, ()
        req = self.annotate_request(question, entries, model=model)
        (res,) = yield [req]
        fallback = None
        directives: list[str] = []
        if res.is_fallback or not isinstance(res.parsed, dict):
            fallback = "annotate_unparsed"
            log.debug("annotator reply unusable for %s: %s", question.item_id, res.parse_error)
        else:
            directives = [str(d) for d in res.parsed.get("directives", [])]
        images: tuple[str, ...] = ()
        if c.block == "authors":  # the annotator's directives have no place in their block
            block, images = authors_block(self.authors, entries, max_images=image_room)
        elif c.block == "entries":
            block, images = entries_block(entries, directives, max_images=image_room)
        elif fallback:
            block = format_memory_block(entries)
        else:
            block = directives_block(directives)
        step = Step(
            index=0,
            kind="annotate",
            reply=res.text,
            observation=block,
            fallback=fallback,
            prompt_tokens=res.usage.prompt_tokens,
            completion_tokens=res.usage.completion_tokens,
            cached_tokens=res.usage.cached_tokens,
            latency_s=res.latency_s,
            finish_reason=res.finish_reason,
            request_key=res.request_key,
        )
        return block, step, images
