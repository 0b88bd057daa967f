"""Building the experience bank from training items (FinAcumen §4.2, G.2).

For each training item: K trajectories of the tools-only solver sampled at temperature > 0
(K requests with K different seeds reach the engine in one batch, round after round), each
scored against the gold answer with the benchmark's scorer; then one summary call (call type
``bank_summarize``) that sees the gold answer and the scored trajectories and writes findings
(only when some trajectory succeeded) and cautions (only when some failed). What the summary
call sees of each trajectory is ``BankBuildConfig.view``: ``digest`` (its actions, cut to
``steps_chars``, with the first ``context_chars`` of the item's context) or ``whole`` (every
step's thought, action, arguments, output and check, uncut, with the whole context: what the
authors' summarizer reads); with ``analysis`` its reply first derives the gold answer, as the
authors' does. Each summary
becomes one :class:`bank.schema.NewEntry` (source item id, question, context head, the
training item's gold answer, findings, cautions: the paper's entry, G.2; and the item's image
files, which the ``entries`` memory block shows), embedded with
question + the first 600 context characters; its ``dataset`` is the
item's source set (``finmmr/easy``, :attr:`agent.qa.core.items.QAItem.source_set`), the group the
paper's stratified snapshots draw from. The report counts items and entries per source set and
for the whole bank, with the embedder and its dimension.

Each source is scored by its own rule: the benchmarks' scorer (:func:`agent.qa.scoring.scoring.
score_answer`, or the ``scorer`` given) for the scored benchmarks, and a judge model
(``judge_model``) for FinTMMBench, whose K trajectories go to the judge as one batch inside the
same lockstep rounds (journaled with the build's calls; a backend that serves both models, such
as :class:`agent.qa.evaluation.programs.ByModel`, routes them). Before any model call the build checks that
every source set can be scored: its first item's gold answer, written as a solver would, must
score correct under its scorer, and a judged set needs a judge model; a source that fails is
refused with the reason.

Items run in waves (``items_per_wave``); the entries of a wave are committed to the bank, and its
trace rows appended, when the wave ends. A build that is stopped keeps every committed wave: run
again with the same arguments, items already in the bank (by source id) are skipped and the
rest replay from the journal, so the bank ends as an uninterrupted build's would.

Only items whose split is not ``test`` are accepted: a test item passed here is an error, and
evaluation never writes to the bank.

``BankBuildConfig.grading = "authors"`` grades and summarizes as the authors' code does instead
(:mod:`agent.qa.evaluation.authors_bank`: trajectories without their own final answer dropped,
the 1 % rule, a model grading the wrong ones, their summary prompt); ``entry_context = "whole"``
stores each entry's whole context (the authors' entries carry it; retrieval still embeds the
first ``context_chars``).
"""

from __future__ import annotations

import copy
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.prompting import load_prompt
from agent.qa.core import runs
from agent.qa.core.items import QAItem
from agent.qa.core.schemas import char_bound, with_lengths
from agent.qa.core.trajectory import Trajectory
from agent.qa.evaluation.bank_items import (
    BankBuildConfig,
    ItemOutcome,
    describe,
    describe_whole,
)
from agent.qa.evaluation.bank_items import (
    answer_text as _answer_text,
)
from agent.qa.evaluation.bank_items import (
    gold_text as _gold_text,
)
from agent.qa.evaluation.programs import merged
from agent.qa.scoring.answer_extract import (
    extract_requests,
    extracted_answers,
    official_finmmr_scores,
    solution_text,
)
from agent.qa.scoring.judge import AUTHORS_JUDGE, JUDGE_PROMPT, judge_requests, judge_scores
from agent.qa.scoring.scorer_check import Scorer, check_scorers, default_scorer, score_with, scorer_label
from agent.qa.scoring.scorers import spec_of
from agent.qa.scoring.scoring import JUDGED
from agent.qa.solver.react import QASolver
from bank.embedder import Embedder
from bank.schema import NewEntry
from bank.store import ExperienceBank
from localfin.errors import ConfigError
from localfin.progress import NULL_PROGRESS, Progress
from serving.backend import Backend
from serving.journal import Journal, JournaledBackend
from serving.lockstep import Program, RoundInfo, run_lockstep
from serving.types import ChatRequest, Message

__all__ = [
    "BankBuildConfig",
    "bank_calls",
    "check_training",
    "BankBuildReport",
    "ItemOutcome",
    "Scorer",
    "build_bank",
    "check_scorers",
    "default_scorer",
    "score_with",
    "scorer_label",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BankBuildReport:
    """What a build did."""

    items: int
    skipped_in_bank: int
    entries_added: int
    success_rate: float  # fraction of all trajectories scored correct
    fallbacks: dict[str, int] = field(default_factory=dict)
    model_calls: int = 0
    replayed: int = 0
    wall_s: float = 0.0
    run_dir: str = ""
    #: per source set (:attr:`QAItem.source_set`): items given, already in the bank, items run,
    #: trajectories scored, of them correct, entries added, and which scorer graded them
    by_source: dict[str, dict[str, Any]] = field(default_factory=dict)
    bank_rows: int = 0  # entries in the bank after the build
    bank_by_source: dict[str, int] = field(default_factory=dict)  # entries per source set, whole bank
    embedder: str = ""
    embedder_dim: int = 0
    waves: int = 0  # waves run (and committed) in this call


class _Builder:
    def __init__(
        self,
        solver: QASolver,
        scorer: Scorer,
        config: BankBuildConfig,
        transcriber: Callable[[str], str] | None,
        judge_model: str | None,
        labels: dict[str, str],
        authors: Any = None,
    ) -> None:
        self.solver, self.scorer, self.config = solver, scorer, config
        self.authors = authors
        self.judge_protocol, self.judge_max_tokens = "ours", None
        if (config.grading == "authors" or config.summary_prompt == "authors") and authors is None:
            raise ConfigError(
                "the authors' bank grading and summary prompt read their texts; give their checkout "
                "(qa.authors_code)"
            )
        self.transcriber = transcriber
        self.judge_model = judge_model
        self.extract_model: str | None = None
        self.labels = labels
        self.prompt = load_prompt("qa_summarize")

    def summary_request(
        self, item: QAItem, trajs: Sequence[Trajectory], correct: Sequence[bool]
    ) -> ChatRequest:
        c = self.config
        schema = copy.deepcopy(dict(self.prompt.schema or {}))
        if c.lesson_chars:
            schema = with_lengths(schema, {"findings": c.lesson_chars, "cautions": c.lesson_chars})
        else:  # no bound on a lesson's length
            for name in ("findings", "cautions"):
                schema["properties"][name]["items"].pop("maxLength", None)
        f, k = schema["properties"]["findings"], schema["properties"]["cautions"]
        for prop, some in ((f, any(correct)), (k, not all(correct))):
            if not some:
                prop["maxItems"] = 0
            elif c.max_lessons:
                prop["maxItems"] = c.max_lessons
            else:
                prop.pop("maxItems", None)
        if c.analysis:  # first in the reply: the item's derivation before the lessons
            schema["properties"] = {"analysis": {"type": "string", "minLength": 1}, **schema["properties"]}
            schema["required"] = ["analysis", *schema["required"]]
        # a lesson is asked for where there is something to learn from (a success, a failure)
        f["minItems"], k["minItems"] = (min(1, p.get("maxItems", 1)) for p in (f, k))
        for prop in (f, k):
            prop["items"]["minLength"] = 1
        q = item.question
        whole = c.view == "whole"
        shown = [
            {
                "index": j + 1,
                "correct": ok,
                "answer": _answer_text(t) if whole else _answer_text(t)[:120],
                "steps": describe_whole(t) if whole else describe(t, c.steps_chars),
            }
            for j, (t, ok) in enumerate(zip(trajs, correct))
        ]
        system, user = self.prompt.render(
            question=q.text,
            context_head=q.context if whole else q.context[: c.context_chars],
            whole_context=whole,
            gold=_gold_text(item.gold),
            trajectories=shown,
            analysis=c.analysis,
        )
        return ChatRequest(
            model=self.solver.config.model,
            messages=(Message("system", system), Message("user", user)),
            max_tokens=c.max_tokens or char_bound(schema) + 16,
            temperature=c.summary_temperature,
            seed=c.seed,
            json_schema=schema,
            call_type="bank_summarize",
        )

    def program(self, item: QAItem) -> Program[ItemOutcome]:
        c, q = self.config, item.question
        texts = tuple(self.transcriber(p) for p in q.images) if self.transcriber is not None else ()
        subs = [
            self.solver.solve(
                q, transcriptions=texts, seed=c.seed + j, temperature=c.temperature, variant="bank_sample"
            )
            for j in range(c.k)
        ]
        trajs: list[Trajectory] = yield from merged(subs)
        if c.grading == "authors":
            from agent.qa.evaluation.authors_bank import authors_outcome

            return (yield from authors_outcome(self, item, trajs))
        spec = spec_of(self.scorer, q.dataset)
        judge_prompt = (
            spec.judge_prompt if spec is not None else (JUDGE_PROMPT if q.dataset in JUDGED else "")
        )
        if judge_prompt:
            assert self.judge_model
            if self.judge_protocol == "authors":
                judge_prompt = AUTHORS_JUDGE
            answers = [_answer_text(t) for t in trajs]
            verdicts = yield judge_requests(
                [item] * len(trajs), answers, self.judge_model, prompt_name=judge_prompt,
                candidate_chars=c.judge_candidate_chars, authors=self.authors,
                max_tokens=self.judge_max_tokens,
            )  # fmt: skip
            correct = tuple(bool(v.correct) for v in judge_scores(verdicts, judge_prompt))
        elif spec is not None and spec.extract:
            assert self.extract_model
            solutions = [solution_text(t.to_dict()) for t in trajs]
            replies = yield extract_requests([item] * len(trajs), solutions, self.extract_model)
            scores = official_finmmr_scores([item] * len(trajs), extracted_answers(replies))
            correct = tuple(bool(v.correct) for v in scores)
        else:
            correct = tuple(
                bool(score_with(self.scorer, q.dataset, item.gold, t.answer, t.answer_scale).correct)
                for t in trajs
            )
        label = self.labels.get(item.source_set, "")
        (res,) = yield [self.summary_request(item, trajs, correct)]
        done = {"source_set": item.source_set, "scored_by": label}
        return self.outcome(item, trajs, correct, res, done)

    def outcome(
        self,
        item: QAItem,
        trajs: Sequence[Trajectory],
        correct: tuple[bool, ...],
        res: Any,
        done: dict[str, Any],
    ) -> ItemOutcome:
        """The item's outcome from our summary call's reply ``res``."""
        c, q = self.config, item.question
        if res.is_fallback or not isinstance(res.parsed, dict):
            return ItemOutcome(q.item_id, tuple(trajs), correct, None, "summary_unparsed", res.text, **done)
        findings = tuple(f.strip() for f in res.parsed.get("findings", []) if f.strip())
        cautions = tuple(x.strip() for x in res.parsed.get("cautions", []) if x.strip())
        if not findings and not cautions:
            return ItemOutcome(q.item_id, tuple(trajs), correct, None, "summary_empty", res.text, **done)
        entry = NewEntry(
            source_id=q.item_id,
            dataset=item.source_set,
            question=q.text,
            context_head=q.context if c.entry_context == "whole" else q.context[: c.context_chars],
            findings=findings,
            cautions=cautions,
            answer=_gold_text(item.gold),
            images=q.images,
        )
        return ItemOutcome(q.item_id, tuple(trajs), correct, entry, None, res.text, **done)


def check_training(items: Sequence[QAItem]) -> None:
    """Bank building takes training items only, each once (a ConfigError names the first test
    item or the duplicate)."""
    test = [it.item_id for it in items if it.split == "test"]
    if test:
        raise ConfigError(
            f"bank building takes training items only; {len(test)} test item(s) given "
            f"(first: {test[0]!r}); allowed splits: train, validation, dev"
        )
    ids = [it.item_id for it in items]
    if len(set(ids)) != len(ids):
        raise ConfigError("bank building got duplicate item ids")


def build_bank(
    items: Sequence[QAItem],
    solver: QASolver,
    backend: Backend,
    bank: ExperienceBank,
    embedder: Embedder,
    run_dir: str | Path,
    *,
    config: BankBuildConfig | None = None,
    scorer: Scorer | None = None,
    judge_model: str | None = None,
    data_files: Sequence[str | Path] = (),
    transcriber: Callable[[str], str] | None = None,
    progress: Progress = NULL_PROGRESS,
    extract_model: str | None = None,
    authors: Any = None,
    judge_protocol: str = "ours",
    judge_max_tokens: int | None = None,
) -> BankBuildReport:
    """Build (or complete) ``bank`` from training ``items``; returns what was done.

    Args:
        items: training items (``split`` train, validation or dev); test items are refused.
        solver: the tools-only solver (its memory is not used here).
        backend: the model backend (wrapped here in a journal in ``run_dir``); it serves the
            solver's model and, for judged sources, ``judge_model``.
        bank: the bank to add entries to (each wave's entries committed when the wave ends).
        embedder: the embedding model of the bank.
        run_dir: the build's run folder (journal, trace, manifest).
        config: construction settings.
        scorer: ``scorer(dataset, gold, prediction)``; default the benchmarks' scorer.
        judge_model: registry key of the model that grades judged sources (FinTMMBench).
        extract_model: registry key of the model that reads the final answers for a scorer that
            extracts them (FinMMR ``official``, :mod:`agent.qa.scoring.answer_extract`).
        data_files: dataset files whose digests go into the manifest.
        transcriber: OCR of one image (before the loop, as at test time); None: none.
        progress: progress display.
        authors: the authors' checkout (:class:`agent.qa.authors.checkout.AuthorsCode`), for
            their grading, summary prompt and judge.
        judge_protocol / judge_max_tokens: ``authors``: judged sources are judged by the
            authors' judge (:data:`agent.qa.scoring.judge.AUTHORS_JUDGE`) within this budget.
    """
    cfg = config or BankBuildConfig()
    check_training(items)
    if solver.memory is not None:
        raise ConfigError("bank building samples the tools-only solver; give a solver without memory")
    labels = check_scorers(items, scorer, judge_model, extract_model)  # before any model call
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    have = set(bank.sources)
    todo = [it for it in items if it.item_id not in have]
    builder = _Builder(solver, scorer or default_scorer(), cfg, transcriber, judge_model, labels, authors)
    builder.extract_model = extract_model
    builder.judge_protocol, builder.judge_max_tokens = judge_protocol, judge_max_tokens
    t0 = time.perf_counter()
    size = cfg.items_per_wave or max(1, len(todo))
    outcomes: list[ItemOutcome] = []
    entries: list[NewEntry] = []
    waves = 0
    with Journal(run_dir / runs.JOURNAL, run_id=run_dir.name) as journal:
        jb = JournaledBackend(backend, journal, chunk_size=max(16, cfg.k * 8))
        with progress.task(f"bank build: {len(todo)} items x {cfg.k} trajectories", total=len(todo)) as task:
            for lo in range(0, len(todo), size):
                done = len(outcomes)

                def on_round(info: RoundInfo, done: int = done) -> None:
                    task.update(
                        completed=done + info.finished, info=f"round {info.round}, {info.requests} requests"
                    )

                wave = run_lockstep(
                    [builder.program(it) for it in todo[lo : lo + size]], jb, on_round=on_round
                )
                made = [o.entry for o in wave if o.entry is not None]
                for b in range(0, len(made), cfg.add_batch):  # committed before the next wave starts
                    bank.add_texts(made[b : b + cfg.add_batch], embedder, cfg.context_chars, save_index=False)
                bank.flush()
                _append_trace(run_dir, wave)
                outcomes += wave
                entries += made
                waves += 1
        calls, replayed = jb.called, jb.replayed
    _dedupe_trace(run_dir)
    fallbacks: dict[str, int] = {}
    for o in outcomes:
        if o.fallback:
            fallbacks[o.fallback] = fallbacks.get(o.fallback, 0) + 1
    flat = [ok for o in outcomes for ok in o.correct]
    by_source: dict[str, dict[str, Any]] = {}
    for it in items:
        row = by_source.setdefault(
            it.source_set,
            {"items": 0, "in_bank_before": 0, "run": 0, "trajectories": 0, "correct": 0, "added": 0,
             "no_terminated": 0, "scored_by": labels.get(it.source_set, "")},
        )  # fmt: skip
        row["items"] += 1
        row["in_bank_before"] += it.item_id in have
    for o in outcomes:
        row = by_source[o.source_set]
        row["run"] += 1
        row["trajectories"] += len(o.correct)
        row["correct"] += sum(o.correct)
        # the authors' grading drops an item none of whose trajectories terminated with an answer
        row["no_terminated"] += o.fallback == "no_terminated_trajectory"
    for e in entries:
        by_source[e.dataset]["added"] += 1
    bank_by_source: dict[str, int] = {}
    for d in bank.datasets():
        bank_by_source[d] = bank_by_source.get(d, 0) + 1
    report = BankBuildReport(
        items=len(items),
        skipped_in_bank=len(items) - len(todo),
        entries_added=len(entries),
        success_rate=sum(flat) / len(flat) if flat else 0.0,
        fallbacks=fallbacks,
        model_calls=calls,
        replayed=replayed,
        wall_s=time.perf_counter() - t0,
        run_dir=str(run_dir),
        by_source=by_source,
        bank_rows=len(bank),
        bank_by_source=dict(sorted(bank_by_source.items())),
        embedder=embedder.model_id,
        embedder_dim=embedder.dim,
        waves=waves,
    )
    runs.write_json(run_dir / runs.SCORES, report)
    runs.write_json(
        run_dir / runs.MANIFEST,
        runs.manifest(
            kind="bank_build",
            model=solver.config.model,
            revision=runs.journal_revision(run_dir / runs.JOURNAL),
            config={"build": cfg, "solver": solver.config, "judge_model": judge_model or ""},
            data_files=data_files,
            seed=cfg.seed,
            extra={
                "bank": str(bank.folder),
                "bank_rows": len(bank),
                "embedder": embedder.model_id,
                "embedder_dim": embedder.dim,
                "items": [it.item_id for it in items],
                "scored_by": labels,
            },
        ),
    )
    log.info(
        "bank build: %d entries added from %d items in %d wave(s); the bank holds %d (%s)",
        len(entries),
        len(todo),
        waves,
        len(bank),
        ", ".join(f"{k} {v}" for k, v in report.bank_by_source.items()),
    )
    return report


def bank_calls(
    items: Sequence[QAItem],
    solver: QASolver,
    backend: Backend,
    run_dir: str | Path,
    *,
    labels: dict[str, str],
    config: BankBuildConfig | None = None,
    scorer: Scorer | None = None,
    judge_model: str | None = None,
    extract_model: str | None = None,
    transcriber: Callable[[str], str] | None = None,
    authors: Any = None,
) -> tuple[int, int]:
    """The model calls of building from ``items`` and nothing else: each item's K trajectories,
    their judging and its summary, wave after wave as :func:`build_bank` runs them, journaled in
    ``run_dir`` (no bank is touched). A shard of a cluster build runs this on its items; the
    driver then runs :func:`build_bank` on all of them from the merged journals, so the bank's
    waves and entries are the one-process build's. ``labels``: the scorer of each source set
    (:func:`check_scorers` on the whole build). Returns (calls made, calls replayed)."""
    cfg = config or BankBuildConfig()
    run = Path(run_dir)
    builder = _Builder(solver, scorer or default_scorer(), cfg, transcriber, judge_model, labels, authors)
    builder.extract_model = extract_model
    size = cfg.items_per_wave or max(1, len(items))
    with Journal(run / runs.JOURNAL, run_id=run.name) as journal:
        jb = JournaledBackend(backend, journal, chunk_size=max(16, cfg.k * 8))
        for lo in range(0, len(items), size):
            run_lockstep([builder.program(it) for it in items[lo : lo + size]], jb)
        return jb.called, jb.replayed


def _trace_row(o: ItemOutcome) -> dict[str, Any]:
    return {
        "item_id": o.item_id,
        "source_set": o.source_set,
        "scored_by": o.scored_by,
        "correct": list(o.correct),
        "entry": o.entry,
        "fallback": o.fallback,
        "summary_reply": o.summary_reply,
        "trajectories": [t.to_dict() for t in o.trajectories],
    }


def _append_trace(run_dir: Path, wave: Sequence[ItemOutcome]) -> None:
    """Append a finished wave's rows to the trace (so a stopped build keeps them)."""
    with (run_dir / runs.TRACE).open("a", encoding="utf-8") as fh:
        for o in wave:
            fh.write(json.dumps(runs.to_jsonable(_trace_row(o)), ensure_ascii=False, sort_keys=True) + "\n")


def _dedupe_trace(run_dir: Path) -> None:
    """One row per item (the last attempt's), after a resumed build appended its rows again."""
    path = run_dir / runs.TRACE
    if not path.exists():
        return
    rows: dict[str, dict[str, Any]] = {}
    for r in runs.read_jsonl(path):
        rows[str(r["item_id"])] = r
    runs.write_jsonl(path, rows.values())
