"""What a FinAcumen shard runs on its node, and the values it is built from.

Every body is a frozen dataclass (Ray pickles it to the node) holding values only: items,
settings, the :class:`~agent.qa.solver.toolset.ToolsetConfig` its tools are built from, a
:class:`BankCopy` and the query vectors of a memory, and :class:`Servers` (which models to call,
at which servers). On the node it builds the tools, the memory and the clients, restores its
journal from the keeper, and runs the one-process function on its items in its scratch folder:

- :class:`EvalShard`: :func:`agent.qa.evaluation.evaluate.evaluate` on a share of an evaluation's items;
  returns its calls, its per-call engine shares and its image transcriptions;
- :class:`BankShard`: :func:`agent.qa.evaluation.bank_build.bank_calls` on a share of a bank build's items
  (the trajectories, their judging and summaries; no bank); returns its calls and transcriptions;
- :class:`BatchShard`: a slice of one batch of requests (a judge pass or check, an extraction pass).

A memory's retrievals are the driver's: the shard opens a copy of the bank and embeds nothing,
taking the query vectors the driver computed for the whole stage in one batch
(:class:`bank.embedder.KnownVectors`). The tools are built on the node from localfin's toolset config
(:class:`agent.qa.solver.toolset.Tools`); another tool factory goes as it is (it must pickle). The
shards use localfin's OCR (:func:`agent.qa.solver.toolset.ocr_transcriber`) where the run transcribes
images.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agent.qa.core import runs
from agent.qa.core.item_score import ItemScore
from agent.qa.core.items import QAItem, Question
from agent.qa.evaluation.bank_build import BankBuildConfig, Scorer, bank_calls
from agent.qa.evaluation.evaluate import EvalConfig, evaluate
from agent.qa.evaluation.programs import ByModel
from agent.qa.memory.memory import ExperienceMemory, MemoryConfig
from agent.qa.solver.react import QASolver, SolverConfig, ToolFactory
from agent.qa.solver.toolset import ToolsetConfig, ocr_transcriber, tool_factory
from bank.embedder import KnownVectors
from bank.retrieval import Retriever
from bank.store import DB_NAME, INDEX_NAME, ExperienceBank
from serving.chat.backend import Backend
from serving.chat.types import ChatRequest, ChatResult
from serving.cluster.endpoints import Endpoints
from serving.cluster.shards import ShardContext
from serving.journal import Journal, JournaledBackend
from serving.models.registry import Registry
from serving.open import BackendSpec, check_backend, open_backend

__all__ = ["Servers", "BankCopy", "MemoryCopy", "EvalShard", "BankShard", "BatchShard", "TRANSCRIPTIONS"]

#: the evaluation's image transcriptions (:mod:`agent.qa.evaluation.evaluate`)
TRANSCRIPTIONS = "transcriptions.jsonl"


@dataclass(frozen=True)
class Servers:
    """Which models a shard calls and where: ``model`` (and ``others``, the judge or answer
    extractor where they are other models and the shard's work asks them) at a server of the
    shard's node or a named one (:mod:`serving.cluster.endpoints`), through the HTTP client
    with these settings."""

    model: str
    others: tuple[str, ...] = ()
    endpoints: Endpoints = field(default_factory=Endpoints)
    registry: Registry | None = None
    timeout_s: float | None = None
    max_retries: int = 4
    #: builds the client of a model key instead (tests: a scripted model; must pickle for Ray)
    factory: Callable[[str], Backend] | None = None

    def only(self, model: str) -> Servers:
        """The same servers for ``model`` alone."""
        return replace(self, model=model, others=())

    def with_models(self, *keys: str | None) -> Servers:
        """The same servers, also for the models ``keys`` (the solver's own and empty ones left out)."""
        more = tuple(dict.fromkeys(k for k in (*self.others, *keys) if k and k != self.model))
        return replace(self, others=more)

    def _client(self, ctx: ShardContext, model: str) -> Backend:
        if self.factory is not None:
            return self.factory(model)
        url = ctx.endpoint(self.endpoints, model)
        spec = BackendSpec(
            "openai", model, base_url=url, timeout_s=self.timeout_s, max_retries=self.max_retries
        )
        return open_backend(spec, self.registry)

    def open(self, ctx: ShardContext) -> Backend:
        """The shard's backend, asked whether it answers (a server that is down or does not
        serve the model fails here, before any request)."""
        solver = self._client(ctx, self.model)
        if not self.others:
            check_backend(solver)
            return solver
        both = _Both(solver, {k: self._client(ctx, k) for k in self.others})
        check_backend(solver)
        for k in self.others:
            check_backend(both.by_model[k])
        return both

    def settings(self, address: str, shards: int) -> dict[str, object]:
        """What the run's manifest records in place of one client's settings."""
        return {
            "backend": "ray cluster",
            "address": address,
            "shards": shards,
            "servers": "each node's own (LOCALFIN_ENDPOINTS), else the named ones",
            "named": {k: list(v) for k, v in self.endpoints.named},
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
        }


class _Both(ByModel):
    """The solver's, the judge's and the extractor's clients as one backend; closing it closes
    them all."""

    def close(self) -> None:
        self.default.close()
        for b in self.by_model.values():
            b.close()


@dataclass(frozen=True)
class BankCopy:
    """A bank's two files (the database read through its WAL, the index) as bytes."""

    db: bytes
    index: bytes | None

    @classmethod
    def of(cls, bank: ExperienceBank) -> BankCopy:
        bank.flush()
        with closing(sqlite3.connect(f"file:{bank.folder / DB_NAME}?mode=ro", uri=True)) as db:
            data = bytes(db.serialize())
        index = bank.folder / INDEX_NAME
        return cls(data, index.read_bytes() if index.is_file() else None)

    def open(self, folder: Path) -> ExperienceBank:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / DB_NAME).write_bytes(self.db)
        if self.index is not None:
            (folder / INDEX_NAME).write_bytes(self.index)
        return ExperienceBank.open(folder)


@dataclass(frozen=True)
class MemoryCopy:
    """An experience memory for a shard: the bank's copy, the stage's query vectors (computed
    by the driver in one batch) and the memory's settings."""

    bank: BankCopy
    vectors: KnownVectors
    config: MemoryConfig

    @classmethod
    def of(cls, memory: ExperienceMemory, questions: Sequence[Question]) -> MemoryCopy:
        texts = [memory.query_text(q) for q in questions]
        emb = memory.retriever.embedder
        vecs = emb.embed(texts) if texts else []
        known = KnownVectors(emb.model_id, emb.dim, dict(zip(texts, vecs)))
        return cls(BankCopy.of(memory.retriever.bank), known, memory.config)

    def open(self, folder: Path) -> tuple[ExperienceMemory, ExperienceBank]:
        bank = self.bank.open(folder)
        return ExperienceMemory(Retriever(bank, self.vectors), self.config), bank


def _unscored(dataset: str, gold: Any, prediction: str, **kw: Any) -> ItemScore:
    """A shard scores nothing (it never reads a gold answer): the driver scores the gathered run."""
    return ItemScore(False, 0.0, "scored when the shards are gathered")


def make_tools(toolset: ToolsetConfig | ToolFactory | None) -> ToolFactory | None:
    """A shard's tools: built from localfin's toolset config, or the factory shipped as it is."""
    if isinstance(toolset, ToolsetConfig):
        return tool_factory(toolset)
    return toolset


class _Recording:
    """A transcriber that remembers what it read (path -> text)."""

    def __init__(self, inner: Callable[[str], str]) -> None:
        self.inner, self.seen = inner, {}

    def __call__(self, path: str) -> str:
        if path not in self.seen:
            self.seen[path] = self.inner(path)
        return self.seen[path]


@dataclass(frozen=True)
class EvalShard:
    """A share of one evaluation (module doc)."""

    items: tuple[QAItem, ...]
    run_name: str
    config: EvalConfig
    servers: Servers
    toolset: ToolsetConfig | ToolFactory | None = None
    memory: MemoryCopy | None = None
    transcribe: bool = False

    def __call__(self, ctx: ShardContext) -> dict[str, Any]:
        run_dir = ctx.folder / self.run_name
        ctx.restore(run_dir / runs.JOURNAL)
        backend = ctx.relay(self.servers.open(ctx))
        bank = None
        try:
            memory = None
            if self.memory is not None:
                memory, bank = self.memory.open(ctx.folder / "bank")
            s = evaluate(
                list(self.items),
                backend,
                run_dir,
                self.config,
                tools=make_tools(self.toolset),
                memory=memory,
                scorer=_unscored,
                transcriber=ocr_transcriber() if self.transcribe else None,
            )
        finally:
            backend.close()
            if bank is not None:
                bank.close()
        trans = run_dir / TRANSCRIPTIONS
        return {
            "calls": s.model_calls,
            "replayed": s.replayed,
            "shares": runs.read_json(run_dir / "timings.json")["shares"],
            "transcriptions": runs.read_jsonl(trans) if trans.is_file() else [],
        }


@dataclass(frozen=True)
class BankShard:
    """A share of one bank build's items (module doc)."""

    items: tuple[QAItem, ...]
    run_name: str
    solver: SolverConfig
    config: BankBuildConfig
    labels: tuple[tuple[str, str], ...]
    servers: Servers
    toolset: ToolsetConfig | ToolFactory | None = None
    judge_model: str | None = None
    scorer: Scorer | None = None
    transcribe: bool = False
    extract_model: str | None = None

    def __call__(self, ctx: ShardContext) -> dict[str, Any]:
        run_dir = ctx.folder / self.run_name
        ctx.restore(run_dir / runs.JOURNAL)
        backend = ctx.relay(self.servers.open(ctx))
        seen = _Recording(ocr_transcriber()) if self.transcribe else None
        try:
            solver = QASolver(self.solver, tools=make_tools(self.toolset))
            calls, replayed = bank_calls(
                list(self.items),
                solver,
                backend,
                run_dir,
                labels=dict(self.labels),
                config=self.config,
                scorer=self.scorer,
                judge_model=self.judge_model,
                extract_model=self.extract_model,
                transcriber=seen,
            )
        finally:
            backend.close()
        return {"calls": calls, "replayed": replayed, "transcriptions": dict(seen.seen) if seen else {}}


@dataclass(frozen=True)
class BatchShard:
    """A slice of one batch of requests, journaled in ``journal`` (a judge pass or check, an
    extraction pass)."""

    requests: tuple[ChatRequest, ...]
    journal: str
    servers: Servers
    chunk_size: int = 256

    def __call__(self, ctx: ShardContext) -> dict[str, Any]:
        path = ctx.folder / self.journal
        ctx.restore(path)
        backend = ctx.relay(self.servers.open(ctx))
        try:
            with Journal(path) as j:
                jb = JournaledBackend(backend, j, chunk_size=self.chunk_size)
                results: list[ChatResult] = jb.chat(list(self.requests))
        finally:
            backend.close()
        return {"calls": jb.called, "replayed": jb.replayed, "n": len(results)}
