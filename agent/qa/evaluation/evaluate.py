"""Evaluating the three variants on the same backend and scorer, one run folder per evaluation.

Variants: ``base`` (the model alone: no tools, no memory, and so no OCR transcriptions; a model
that takes images sees the images themselves, a text-only model only the question and its text
context), ``ft`` (the ReAct solver with the tools, the OCR transcriptions put before the loop and
the answer gate), ``ft_fm`` (the same plus the experience memory). A question whose images the
model sees neither as images nor as transcriptions is still asked and scored; the summary counts
them (``images_unseen``, and ``image_only_unseen`` for those with no text context at all). All questions of an
evaluation run as lockstep programs (:func:`serving.lockstep.run_lockstep`): every round sends
the pending calls of all questions (up to ``EvalConfig.max_active`` at a time) to the engine
as one batch. Every call goes through a
:class:`serving.journal.JournaledBackend` whose journal lives in the run folder, so a killed
evaluation rerun with the same arguments replays what it had and calls the model for the rest.

The agent only ever receives ``item.question``; gold answers are read by the scorer after all
programs have ended. (A question may carry inputs a run read from the gold before it started,
the authors' protocol, :mod:`agent.qa.data.gold_inputs`: the manifest counts them under
``from_gold``.) The bank is only read (no hit counters are written).

Latency: ``engine_s`` of a question is its share of the engine time of the batches its calls
were in (batch wall time / batch size). Shares are kept in the run folder's ``timings.json``
with the wall time of every attempt, so a resumed or replayed run still reports the time its
calls took when they were made (``run_wall_s`` is the sum over the attempts that called the
model). ``wall_s`` is the time from a program's start to its end in the last attempt, which
includes waiting for the other questions of each round (and is near 0 on a full replay). Start
an in-process engine before calling :func:`evaluate` (``VLLMBackend.start()``); otherwise its
start-up lands in the first batch's time.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.qa.core import runs
from agent.qa.core.items import QAItem, Question
from agent.qa.core.trajectory import Trajectory
from agent.qa.data.gold_inputs import gold_input_counts
from agent.qa.evaluation.programs import run_waves
from agent.qa.memory.memory import ExperienceMemory
from agent.qa.scoring.scorer_check import Scorer, default_scorer, score_with
from agent.qa.solver.react import QASolver, SolverConfig, ToolFactory
from localfin import runlock
from localfin.errors import ConfigError
from localfin.progress import NULL_PROGRESS, Progress
from serving.backend import Backend
from serving.journal import Journal, JournaledBackend
from serving.lockstep import RoundInfo
from serving.open import backend_settings
from serving.types import ChatRequest, ChatResult

__all__ = [
    "VARIANTS",
    "EvalConfig",
    "EvalSummary",
    "evaluate",
    "Transcriber",
]

log = logging.getLogger(__name__)

VARIANTS = ("base", "ft", "ft_fm")

#: ``transcriber(image_path)`` returns the structured text of one image (OCR before the loop).
Transcriber = Callable[[str], str]


@dataclass(frozen=True)
class EvalConfig:
    """One evaluation.

    Attributes:
        variant: one of :data:`VARIANTS`.
        solver: solver settings (model, steps, bounds; temperature 0 at test).
        chunk_size: calls per journal transaction (the most a kill can lose).
        max_active: questions whose loops run together (each holds a Python worker of about
            30 MB while it runs); None: all at once.
    """

    variant: str
    solver: SolverConfig
    chunk_size: int = 256
    max_active: int | None = 64

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ConfigError(f"EvalConfig.variant={self.variant!r}; allowed: {', '.join(VARIANTS)}")
        if self.chunk_size < 1:
            raise ConfigError(f"EvalConfig.chunk_size={self.chunk_size}; allowed: >= 1")
        if self.max_active is not None and self.max_active < 1:
            raise ConfigError(f"EvalConfig.max_active={self.max_active}; allowed: >= 1 or None")


@dataclass(frozen=True)
class EvalSummary:
    """The figures of one evaluation (also written to ``scores.json``)."""

    variant: str
    n: int
    correct: int
    accuracy: float
    mean_score: float  # the scorer's graded score (TAT-QA: F1; right/wrong benchmarks: = accuracy)
    mean_prompt_tokens: float
    mean_completion_tokens: float
    mean_total_tokens: float
    mean_engine_s: float
    mean_wall_s: float
    run_wall_s: float  # summed over the attempts that called the model (see the module docstring)
    mean_tool_steps: float
    gate_pass_rate: float | None  # share of answers the gate accepted (None for base)
    memory_hit_rate: float | None  # share of questions with >= 1 retrieved entry (ft_fm)
    mean_tokens_with_memory: float | None  # questions with a memory block (ft_fm)
    mean_tokens_without_memory: float | None
    fallbacks: dict[str, int] = field(default_factory=dict)
    model_calls: int = 0
    replayed: int = 0
    bank_limit: int | None = None
    k_max: int | None = None
    tau: float | None = None
    bank_rows: int | None = None
    embedder: str | None = None  # the bank's embedding model (ft_fm)
    embedder_dim: int | None = None
    snapshot_order: str | None = None  # how a bank-size snapshot draws its entries (ft_fm)
    with_images: int = 0  # questions that have images
    images_unseen: int = 0  # of them, shown to the model neither as images nor as transcriptions
    image_only_unseen: int = 0  # of those, with no text context (their data is only in the images)
    run_dir: str = ""


class _Meter:
    """Wraps the model backend: records each request's share of its batch's wall time."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.name = inner.name
        self.share: dict[str, float] = {}

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        t0 = time.perf_counter()
        out = self.inner.chat(requests)
        each = (time.perf_counter() - t0) / max(1, len(requests))
        for r in requests:
            self.share[r.key()] = each
        return out

    def close(self) -> None:
        self.inner.close()


def _transcriptions(
    questions: Sequence[Question], transcriber: Transcriber | None, run_dir: Path
) -> dict[str, tuple[str, ...]]:
    """Image transcriptions per question, cached in the run folder (so a rerun skips the OCR).
    A transcriber with a ``many`` method (:class:`agent.qa.solver.model_ocr.ModelTranscriber`) gets
    every image not in the cache in one call."""
    path = run_dir / "transcriptions.jsonl"
    cache = {r["path"]: r["text"] for r in runs.read_jsonl(path)} if path.exists() else {}
    out: dict[str, tuple[str, ...]] = {}
    if transcriber is None:
        return {q.item_id: () for q in questions}
    todo = list(dict.fromkeys(img for q in questions for img in q.images if img not in cache))
    many = getattr(transcriber, "many", None)
    if todo and callable(many):
        cache.update(zip(todo, many(todo)))
    else:
        cache.update((img, transcriber(img)) for img in todo)
    for q in questions:
        out[q.item_id] = tuple(cache[img] for img in q.images)
    if todo:
        runs.write_jsonl(path, ({"path": p, "text": t} for p, t in cache.items()))
    return out


_IMAGE_MARK = re.compile(r"<image\s*\d+>", re.I)


def image_only(question: Question) -> bool:
    """Whether ``question`` has images and no text context besides its ``<image N>`` marks
    (its data is only in the images)."""
    return bool(question.images) and not _IMAGE_MARK.sub("", question.context).strip()


def _images_unseen(
    questions: Sequence[Question], trans: dict[str, tuple[str, ...]], send_images: bool
) -> tuple[int, int]:
    """Questions with images the model sees neither as images nor as transcriptions, and how
    many of them are image-only (:func:`image_only`)."""
    unseen = [q for q in questions if q.images and not send_images and not any(trans.get(q.item_id, ()))]
    return len(unseen), sum(image_only(q) for q in unseen)


def _mean(xs: Sequence[float]) -> float:
    return float(sum(xs) / len(xs)) if xs else 0.0


@runlock.locking("run_dir")
def evaluate(
    items: Sequence[QAItem],
    backend: Backend,
    run_dir: str | Path,
    config: EvalConfig,
    *,
    tools: ToolFactory | None = None,
    memory: ExperienceMemory | None = None,
    scorer: Scorer | None = None,
    transcriber: Transcriber | None = None,
    data_files: Sequence[str | Path] = (),
    progress: Progress = NULL_PROGRESS,
    authors: Any = None,
) -> EvalSummary:
    """Evaluate ``config.variant`` on ``items``; writes the run folder and returns its figures.

    Args:
        items: the evaluation items (their gold answers go to the scorer only).
        backend: the model backend (journaled here, in ``run_dir``).
        run_dir: the evaluation's folder (created; rerun with the same folder to resume).
        config: variant and solver settings.
        tools: per-question tool factory (``ft`` and ``ft_fm``).
        memory: the experience memory (``ft_fm`` only).
        scorer: ``scorer(dataset, gold, prediction)`` (with ``scale=`` for an answer that has a
            scale field); default the benchmarks' scorer.
        transcriber: OCR of one image (questions with images); None: no transcriptions.
        data_files: dataset files whose digests go into the manifest.
        progress: progress display.
        authors: the authors' checkout (:class:`agent.qa.authors.checkout.AuthorsCode`) when the
            solver's loop or Base is theirs.

    The run folder's write lock is held throughout (a second writer gets FolderInUseError);
    a torn journal is a DamagedFileError before any call (docs/faults.md).
    """
    v = config.variant
    if v == "ft_fm" and memory is None:
        raise ConfigError("variant ft_fm needs an experience memory (a bank and an embedder)")
    if v != "ft_fm" and memory is not None:
        raise ConfigError(f"variant {v} runs without memory; memory given")
    if v != "base" and tools is None:
        log.warning("variant %s evaluated without tools: only final_answer is offered", v)
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    ids = [it.item_id for it in items]
    if len(set(ids)) != len(ids):
        raise ConfigError("evaluation items have duplicate ids")
    score = scorer or default_scorer()
    questions = [it.question for it in items]  # the agent's whole view of the items
    solver = QASolver(
        config.solver,
        tools=tools if v != "base" else None,
        memory=memory if v == "ft_fm" else None,
        authors=authors,
    )
    # Base is the model alone: OCR is a tool, so it gets no transcriptions (only the images
    # themselves, for a model that takes them)
    trans = _transcriptions(questions, transcriber if v != "base" else None, run_dir)
    unseen = _images_unseen(questions, trans, config.solver.send_images)
    if unseen[0]:
        log.warning(
            "eval %s: %d question(s) with images whose images this run shows the model neither as "
            "images nor as transcriptions (%d of them have no text context: their data is only in "
            "the images); they are asked without it and scored as usual",
            v,
            *unseen,
        )
    retrievals = memory.retrieve_many(questions) if memory is not None else [None] * len(questions)
    if v == "base":
        programs = [solver.solve_base(q) for q in questions]
    else:
        programs = [
            solver.solve(q, retrieval=r, transcriptions=trans[q.item_id], variant=v)
            for q, r in zip(questions, retrievals)
        ]
    meter = _Meter(backend)
    t0 = time.perf_counter()
    with Journal(run_dir / runs.JOURNAL, run_id=run_dir.name, verify=True) as journal:
        jb = JournaledBackend(meter, journal, chunk_size=config.chunk_size)
        with progress.task(f"eval {v}: {len(questions)} questions", total=len(questions)) as task:

            def on_round(done: int, info: RoundInfo) -> None:
                task.update(completed=done + info.finished, info=f"round {info.round}, {info.requests} calls")

            try:
                trajs: list[Trajectory] = run_waves(programs, jb, wave=config.max_active, on_round=on_round)
            except BaseException:  # a killed attempt keeps the engine time of the calls it made
                _record_timings(run_dir, meter.share, time.perf_counter() - t0, jb, failed=True)
                raise
    timings = _record_timings(run_dir, meter.share, time.perf_counter() - t0, jb)
    run_wall = (
        sum(a["wall_s"] for a in timings["attempts"] if a["model_calls"]) or timings["attempts"][-1]["wall_s"]
    )

    rows = []
    for item, traj in zip(items, trajs):  # gold is read from here on, after every program ended
        s = score_with(score, item.question.dataset, item.gold, traj.answer, traj.answer_scale)
        row = traj.to_dict()
        row.update(
            correct=bool(s.correct),
            score=float(getattr(s, "score", float(bool(s.correct)))),
            score_detail=runs.to_jsonable(getattr(s, "detail", "")),
            engine_s=round(sum(timings["shares"].get(st.request_key, 0.0) for st in traj.steps), 6),
        )
        rows.append(row)
    summary = _summary(config, rows, trajs, run_wall, jb, memory, run_dir, questions, unseen)
    runs.write_jsonl(run_dir / runs.TRACE, rows)
    runs.write_json(run_dir / runs.SCORES, summary)
    bank_info: dict[str, Any] = {}
    if memory is not None:
        bank = memory.retriever.bank
        bank_info = {
            "bank": str(bank.folder),
            "bank_rows": len(bank),
            "bank_digest": runs.file_digest(bank.folder / "bank.sqlite"),
            "embedder": memory.retriever.embedder.model_id,
            "embedder_dim": memory.retriever.embedder.dim,
            "memory": memory.config,
        }
    runs.write_json(
        run_dir / runs.MANIFEST,
        runs.manifest(
            kind="qa_eval",
            model=config.solver.model,
            revision=runs.journal_revision(run_dir / runs.JOURNAL),
            config=config,
            data_files=data_files,
            seed=config.solver.sampling.seed,
            extra={
                "variant": v,
                "items": ids,
                "tools": _tool_names(tools, questions),
                # inputs read from the gold at test time (the authors' protocol), per kind
                "from_gold": gold_input_counts(questions),
                "backend": backend_settings(backend),
                **bank_info,
            },
        ),
    )
    log.info("eval %s: accuracy %.3f on %d questions (%s)", v, summary.accuracy, summary.n, run_dir)
    return summary


def _record_timings(
    run_dir: Path, shares: dict[str, float], wall: float, jb: JournaledBackend, failed: bool = False
) -> dict[str, Any]:
    """Merge this attempt's per-call engine shares (first measurement of a call wins) and its
    wall time into ``timings.json``; returns the merged record."""
    path = run_dir / "timings.json"
    data: dict[str, Any] = runs.read_json(path) if path.exists() else {"shares": {}, "attempts": []}
    for key, v in shares.items():
        data["shares"].setdefault(key, round(v, 6))
    data["attempts"].append(
        {"wall_s": round(wall, 3), "model_calls": jb.called, "replayed": jb.replayed, "failed": failed}
    )
    runs.write_json(path, data)
    return data


def _tool_names(tools: ToolFactory | None, questions: Sequence[Question]) -> list[str]:
    """The tools offered, in order, over one question of each kind (dataset, with or without
    images): the kinds a tool suite tells apart (``reparse_image``, ``retrieve``)."""
    if tools is None or not questions:
        return []
    kinds = {(q.dataset, bool(q.images)): q for q in questions}
    names: list[str] = []
    for q in kinds.values():
        made = list(tools(q))
        try:
            names += [t.name for t in made if t.name not in names]
        finally:
            for t in made:
                t.close()
    return names


def _summary(
    config: EvalConfig,
    rows: list[dict[str, Any]],
    trajs: Sequence[Trajectory],
    run_wall: float,
    jb: JournaledBackend,
    memory: ExperienceMemory | None,
    run_dir: Path,
    questions: Sequence[Question],
    unseen: tuple[int, int],
) -> EvalSummary:
    n = len(rows)
    fallbacks: dict[str, int] = {}
    for t in trajs:
        for f in t.fallbacks:
            fallbacks[f] = fallbacks.get(f, 0) + 1
    tokens = [float(r["total_tokens"]) for r in rows]
    with_mem = [float(r["total_tokens"]) for r, t in zip(rows, trajs) if t.memory_block]
    without_mem = [float(r["total_tokens"]) for r, t in zip(rows, trajs) if not t.memory_block]
    fm = config.variant == "ft_fm"
    mc = memory.config if memory is not None else None
    return EvalSummary(
        variant=config.variant,
        n=n,
        correct=sum(r["correct"] for r in rows),
        accuracy=sum(r["correct"] for r in rows) / n if n else 0.0,
        mean_score=_mean([r["score"] for r in rows]),
        mean_prompt_tokens=_mean([r["prompt_tokens"] for r in rows]),
        mean_completion_tokens=_mean([r["completion_tokens"] for r in rows]),
        mean_total_tokens=_mean(tokens),
        mean_engine_s=_mean([r["engine_s"] for r in rows]),
        mean_wall_s=_mean([t.wall_s for t in trajs]),
        run_wall_s=run_wall,
        mean_tool_steps=_mean([t.tool_steps for t in trajs]),
        gate_pass_rate=None  # Base and the authors' loop have no answer gate
        if config.variant == "base" or config.solver.loop == "authors"
        else _mean([1.0 if t.gate_ok else 0.0 for t in trajs]),
        memory_hit_rate=_mean([1.0 if t.memory_hits else 0.0 for t in trajs]) if fm else None,
        mean_tokens_with_memory=_mean(with_mem) if fm and with_mem else None,
        mean_tokens_without_memory=_mean(without_mem) if fm and without_mem else None,
        fallbacks=fallbacks,
        model_calls=jb.called,
        replayed=jb.replayed,
        bank_limit=mc.bank_limit if mc else None,
        k_max=mc.k_max if mc else None,
        tau=mc.tau if mc else None,
        bank_rows=len(memory.retriever.bank) if memory is not None else None,
        embedder=memory.retriever.embedder.model_id if memory is not None else None,
        embedder_dim=memory.retriever.embedder.dim if memory is not None else None,
        snapshot_order=mc.snapshot_order if mc else None,
        with_images=sum(bool(q.images) for q in questions),
        images_unseen=unseen[0],
        image_only_unseen=unseen[1],
        run_dir=str(run_dir),
    )
