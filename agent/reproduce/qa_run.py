"""Running a FinAcumen reproduction config on one backend: build the experience bank from the
``[[qa.bank]]`` sources (training/validation splits only), evaluate every ``[[qa.sets]]`` set
with every variant (``ft_fm`` over the bank-size x k_max grid), and, with ``taus``, the
retrieval analytics (H/E/J/C) of the sets' questions over the bank snapshots. The same library
functions as ``localfin qa build-bank`` / ``qa eval`` / ``qa analyze``; every model call is
journaled in its run folder, so rerunning resumes.

Each set is reported in its benchmark's own metric (the row's ``metric`` field):

- FinTMMBench: after the solver's run, a judge pass (:func:`agent.qa.scoring.judge_pass.judge_run`,
  the plan's ``judge`` model, its own journal ``judge.sqlite`` in the run folder) grades the
  final answers; ``accuracy_pct`` is the judged accuracy and ``judge_scores.json`` holds every
  verdict. The judge sees the gold answer; the solver never does (scoring only, after the run).
  Beside it, the judge check (:mod:`agent.qa.scoring.judge_check`, ``judge_check_items`` of the set's
  items): ``judge_gold_right_pct`` (gold answers judged correct) and ``judge_wrong_caught_pct``
  (perturbed wrong answers judged incorrect). The bank build scores FinTMMBench trajectories
  with the same judge. A separate judge model runs on ``judge_backend``; requests are routed by
  model (:class:`agent.qa.evaluation.programs.ByModel`).
- FinMME: ``finmme_avg_pct`` is FinMME's Avg over its six dimensions
  (:func:`agent.qa.scoring.scoring.finmme_avg` over the trace's per-item correctness); the
  per-dimension accuracies and counts go to the report's JSON (``qa_details``).
- every other set: ``accuracy_pct`` under the benchmark's scorer.

A ``macro`` row averages the sets' headline figures (FinMME: its Avg). Every evaluation row
names its variant's ``protocol`` (:mod:`agent.qa.solver.protocol`; the full lines in a report table),
and a second table counts what the solver's limits cut, per call type (:mod:`agent.qa.analysis.cuts`).
Before any model call every set and bank source is checked to be scorable
(:func:`agent.qa.evaluation.bank_build.check_scorers`): a source whose scorer cannot run stops the run
there, named.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.qa.analysis.intervals import EvalRun
from agent.qa.core import runs
from agent.qa.core.items import QAItem
from agent.qa.core.trajectory import CUTS
from agent.qa.data.datasets import load_items
from agent.qa.data.holdout import hold_out
from agent.reproduce.qa_rows import add_intervals, analytics_row, eval_row, finmme_run_avg, macro_rows
from agent.reproduce.qa_setup import (
    corpus_folder,
    plan_line,
    reads_gold_lines,
    solver_settings,
    tool_factory_of,
)
from agent.reproduce.qa_shrink import shrink_plan
from agent.reproduce.spec import QAPlan, QASource, ReproConfig
from bank.embedder import Embedder
from bank.snapshots import SNAPSHOT_SEED
from localfin.errors import ConfigError
from localfin.progress import NULL_PROGRESS, Progress
from serving.backend import Backend
from serving.open import model_facts
from serving.registry import Registry

__all__ = ["QAOutcome", "finmme_run_avg", "reads_gold_lines", "run_plan", "shrink_plan", "slug"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class QAOutcome:
    """Rows for the report: one per evaluation (plus a ``macro`` row per grid point when there
    are several sets) and, with a tau sweep, one per (set or Global, tau, bank size)."""

    rows: tuple[dict[str, Any], ...]
    bank_rows: int
    notes: tuple[str, ...]
    #: per run folder name: the judge pass (``judge``) and FinMME's dimensions (``finmme``); the
    #: bank (``bank``: size, entries per source set, embedder, dimension, tau, snapshot order),
    #: the data (``data``: items, skipped and incomplete records per source) and the
    #: bootstrap intervals (``intervals``)
    details: dict[str, Any] = field(default_factory=dict)
    #: extra report tables: (title, rows), e.g. the paired differences with their intervals
    tables: tuple[tuple[str, tuple[dict[str, Any], ...]], ...] = ()
    #: one line per setting that reads the gold answer or gold evidence at test time
    #: (:func:`reads_gold_lines`; one line saying none does otherwise)
    reads_gold: tuple[str, ...] = ()


def slug(text: str) -> str:
    """A folder-safe name of a label."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _load(src: QASource, root: Path, seed: int) -> tuple[list[QAItem], dict[str, Any]]:
    """The source's items and what loading them left out (skipped records, incomplete items);
    ``seed``: of the draw of a benchmark's test part (``test_share``)."""
    derived = src.test_share > 0
    loaded = load_items(
        src.dataset,
        src.resolve(root),
        split=None if derived else src.split,
        subset=src.subset,
        limit=None if derived else src.limit,
        require_images=src.require_images,
    )
    items = list(loaded.items)
    if derived:  # the benchmark ships no split: a fixed share is its test part
        assert src.split is not None
        items = hold_out(items, src.test_share, src.split, seed=seed)[: src.limit]
    record: dict[str, Any] = {
        "label": src.label,
        "dataset": src.dataset,
        "source_set": items[0].source_set if items else src.dataset,
        "items": len(items),
        "skipped": len(loaded.skipped),
        "incomplete": len(loaded.incomplete),
        "renamed": len(loaded.renamed),
    }
    if loaded.skipped:
        record["first_skipped"] = loaded.skipped[0].reason
        n, first = len(loaded.skipped), record["first_skipped"]
        log.warning("%s: %d records skipped (first: %s)", src.label, n, first)
    if loaded.renamed:
        record["first_renamed"] = " -> ".join(loaded.renamed[0])
    if loaded.incomplete:
        record["first_incomplete"] = loaded.incomplete[0].reason
        log.warning(
            "%s: %d items loaded incomplete (first: %s)", src.label, len(loaded.incomplete),
            record["first_incomplete"],
        )  # fmt: skip
    if derived:
        record["test_share"] = src.test_share
    return items, record


def _data_note(rec: Mapping[str, Any]) -> str | None:
    parts = []
    if rec["skipped"]:
        parts.append(f"{rec['skipped']} records skipped (first: {rec['first_skipped']})")
    if rec["incomplete"]:
        parts.append(f"{rec['incomplete']} items loaded incomplete (first: {rec['first_incomplete']})")
    if rec.get("renamed"):
        parts.append(f"{rec['renamed']} repeated ids kept and numbered (first: {rec['first_renamed']})")
    return f"{rec['label']}: {rec['items']} items; " + "; ".join(parts) if parts else None


def run_plan(
    cfg: ReproConfig,
    out_dir: Path,
    p: QAPlan,
    *,
    backend: Backend | None,
    registry: Registry | None,
    data_root: Path,
    embedder: Embedder,
    judge_backend: Backend | None = None,
    progress: Progress = NULL_PROGRESS,
    bank_from: Path | None = None,
    ocr_dir: Path | None = None,
    cluster: Any = None,
) -> QAOutcome:
    """Run one plan (no arms) into ``out_dir``: build its bank (or, with ``bank_from``, read
    that bank and build none), evaluate every set and variant, judge, analyse. ``ocr_dir``: the
    folder of the model OCR's journal (default ``out_dir/ocr``; arms share one); ``cluster``: as
    in :func:`agent.reproduce.qa_arms.run_qa`."""
    from agent.qa.analysis.analyze import bank_analytics
    from agent.qa.analysis.cuts import cuts_by_call_type
    from agent.qa.data.context_forms import with_context_form
    from agent.qa.data.gold_inputs import GoldInputs, with_gold_inputs
    from agent.qa.evaluation.bank_build import BankBuildConfig, build_bank, check_scorers
    from agent.qa.evaluation.evaluate import EvalConfig, evaluate
    from agent.qa.evaluation.programs import ByModel
    from agent.qa.evaluation.sweep import MemoryGrid, sweep_memory
    from agent.qa.memory.memory import MemoryConfig
    from agent.qa.scoring.extract_pass import extract_run
    from agent.qa.scoring.judge import AUTHORS_JUDGE
    from agent.qa.scoring.judge_check import judge_check
    from agent.qa.scoring.judge_pass import deferred_scorer, judge_run
    from agent.qa.scoring.scorers import NamedScorer
    from agent.qa.solver.model_ocr import ModelTranscriber
    from agent.qa.solver.protocol import protocol_label, protocol_line
    from agent.qa.solver.react import QASolver
    from agent.qa.solver.toolset import ocr_transcriber
    from bank.retrieval import Retriever
    from bank.store import ExperienceBank

    if cluster is not None:  # the sharded stages, with the same signatures
        evaluate, build_bank = cluster.evaluate, cluster.build_bank
        judge_run, judge_check = cluster.judge_run, cluster.judge_check
        extract_run = cluster.extract_run
    from agent.reproduce.qa_authors import open_for

    out_dir.mkdir(parents=True, exist_ok=True)
    solver_cfg = solver_settings(p, registry)
    notes: list[str] = []
    code = open_for(p)  # the authors' checkout, read and checked before any model call
    if code is not None:
        if cluster is not None:
            raise ConfigError(
                "the settings that send the authors' texts run in one process; allowed: run this plan "
                "without a cluster (or set them to 'ours')"
            )
        notes.append(code.describe())
    emb = embedder
    details: dict[str, Any] = {"judge": {}, "finmme": {}, "judge_check": {}, "scoring": {}}
    jback = judge_backend or backend
    # one backend for every call: the judge's requests go to the judge's engine (by model key)
    routed = ByModel(backend, {p.judge: jback}) if jback is not backend else backend
    named = NamedScorer(p.scorer)
    if p.needs_judge:
        notes.append(
            f"FinTMMBench answers and bank trajectories judged by {p.judge} "
            f"({'a separate model' if p.separate_judge else 'the solver model'}; the paper used "
            "GPT-4o-mini): verdicts in each run folder's judge_scores.json"
        )
    if p.needs_extract:
        notes.append(
            f"FinMMR answers read by the extraction model {p.extractor} before get_acc (FinMMR's "
            "official pipeline; its authors used an API model): extract_scores.json in each run folder"
        )
    chosen = {s.dataset: named.spec(s.dataset) for s in (*p.sets, *(p.bank if p.needs_bank else ()))}
    notes.append("scorers: " + "; ".join(f"{d} {sp.name} ({sp.label})" for d, sp in sorted(chosen.items())))
    checked: dict[str, Any] = {}

    def check_judge(src: QASource, items: list[Any], prompt_name: str) -> Any:
        """The judge's verdicts on the set's gold and perturbed answers (once per set)."""
        if src.label not in checked and p.judge_check_items and items:
            where = out_dir / "runs" / f"{slug(src.label)}-judge_check"
            checked[src.label] = judge_check(
                items[: p.judge_check_items], jback, p.judge, where, prompt_name=prompt_name,
                authors=code, max_tokens=p.judge_max_tokens,
            )  # fmt: skip
            details["judge_check"][src.label] = runs.to_jsonable(checked[src.label])
        return checked.get(src.label)

    def finish(src: QASource, items: list[Any], run: Path, row: dict[str, Any]) -> dict[str, Any]:
        """The set's own metric on a finished run (a judge pass, or FinMME's Avg)."""
        spec = named.spec(src.dataset)
        scorer = f"{spec.label}: judge {p.judge}" if spec.judge_prompt else spec.label
        details["scoring"][run.name] = {"set": src.label, "dataset": src.dataset, "scorer": scorer,
                                        "scorer_name": spec.name, "n": row["n"]}  # fmt: skip
        row["scorer"] = spec.name
        if spec.judge_prompt:
            prompt = AUTHORS_JUDGE if p.judge_protocol == "authors" else spec.judge_prompt
            js = judge_run(
                run,
                items,
                jback,
                p.judge,
                prompt_name=prompt,
                candidate_chars=p.judge_candidate_chars,
                authors=code,
                max_tokens=p.judge_max_tokens,
            )
            row.update(metric=f"judge accuracy ({p.judge})", accuracy_pct=round(100 * js.accuracy, 2))
            details["judge"][run.name] = runs.to_jsonable(js)
            jc = check_judge(src, items, prompt)
            if jc is not None:
                row.update(
                    judge_gold_right_pct=round(100 * jc.gold_right_rate, 2),
                    judge_wrong_caught_pct=round(100 * jc.wrong_caught_rate, 2),
                )
        elif spec.extract:
            xs = extract_run(run, items, routed, p.extractor)
            row.update(
                metric=f"accuracy, answers read by {p.extractor}", accuracy_pct=round(100 * xs.accuracy, 2)
            )
            details.setdefault("extract", {})[run.name] = runs.to_jsonable(xs)
        elif src.dataset == "finmme":
            fa = finmme_run_avg(run, items)
            row.pop("accuracy_pct")
            row.update(metric="FinMME Avg", finmme_avg_pct=round(100 * fa["avg"], 2))
            details["finmme"][run.name] = fa
        return row

    bank_sources = p.bank if p.needs_bank else ()
    loaded_sets = [(s, *_load(s, data_root, p.holdout_seed)) for s in p.sets]
    loaded_bank = [(s, *_load(s, data_root, p.holdout_seed)) for s in bank_sources]
    # the authors' protocol reads the gold into the questions (recorded on each, and said above)
    gold = GoldInputs(
        p.gold_format_hints, p.gold_evidence, corpus_folder(p, data_root, [*p.sets, *p.bank]),
        authors=code if p.loop == "authors" else None,
    )  # fmt: skip
    sets = [
        (s, with_context_form(with_gold_inputs(items, gold), p.finmme_context)) for s, items, _ in loaded_sets
    ]
    bank_items = with_context_form(
        with_gold_inputs([it for _, items, _ in loaded_bank for it in items], gold), p.finmme_context
    )
    details["data"] = {"sets": [r for *_, r in loaded_sets], "bank": [r for *_, r in loaded_bank]}
    details["reads_gold"] = list(p.reads_gold)
    notes += [n for *_, r in (*loaded_sets, *loaded_bank) if (n := _data_note(r))]
    factory, tool_notes = (
        (None, []) if not p.needs_tools else tool_factory_of(p, data_root, [*p.sets, *bank_sources])
    )
    notes += tool_notes
    # every set and bank source can be scored, checked before any model call
    scorers = check_scorers(
        [it for _, items in sets for it in items] + bank_items, named, p.judge, p.extractor
    )
    details["scorers"] = scorers
    with_images = any(it.question.images for _, items in sets for it in items) or any(
        it.question.images for it in bank_items
    )
    transcriber: Any = None
    if "reparse" in p.tools and with_images and p.needs_tools:
        if p.ocr == "model":  # the served model transcribes (its own journal in out_dir/ocr)
            if not model_facts(p.model, registry).accepts_images:
                raise ConfigError(
                    f"qa.ocr='model' needs a model that takes images; {p.model} takes none; "
                    "allowed: ocr = 'rapidocr' for this model"
                )
            theirs = code.text("tool.ocr.prompt") if code is not None and p.loop == "authors" else None
            transcriber = ModelTranscriber(
                backend, p.model, ocr_dir or out_dir / "ocr", authors_prompt=theirs
            )
            notes.append(f"images transcribed by {p.model} before the loop (call type qa_ocr)")
        else:
            transcriber = ocr_transcriber(max_side=p.ocr_max_side)
    rows: list[dict[str, Any]] = []
    evals: list[tuple[dict[str, Any], EvalRun]] = []
    tables: list[tuple[str, tuple[dict[str, Any], ...]]] = []
    with ExperienceBank.open(bank_from or out_dir / "bank") as bank:
        if p.needs_bank and bank_from is not None:
            notes.append(f"the bank is read from {bank_from} ({len(bank)} entries; none built here)")
        if p.needs_bank and bank_from is None:
            if isinstance(transcriber, ModelTranscriber):  # one batch for every bank image
                transcriber.many([img for it in bank_items for img in it.question.images])
            rep = build_bank(
                bank_items,
                QASolver(solver_cfg, tools=factory, authors=code),
                routed,
                bank,
                emb,
                out_dir / "runs" / "bank_build",
                config=BankBuildConfig(
                    k=p.bank_k,
                    temperature=p.bank_temperature,
                    steps_chars=p.summary_chars,
                    lesson_chars=p.lesson_chars,
                    max_lessons=p.max_lessons,
                    max_tokens=p.summary_max_tokens,
                    view=p.summary_view,
                    summary_temperature=p.summary_temperature,
                    analysis=p.summary_analysis,
                    context_chars=p.memory_context_chars,
                    judge_candidate_chars=p.judge_candidate_chars,
                    grading=p.bank_grading,
                    summary_prompt=p.summary_prompt,
                    entry_context=p.entry_context,
                    grading_temperature=p.grading_temperature,
                    grading_max_tokens=p.grading_max_tokens,
                ),
                judge_model=p.judge,
                data_files=[s.resolve(data_root) for s in p.bank],
                transcriber=transcriber,
                progress=progress,
                scorer=named,
                extract_model=p.extractor,
                authors=code,
                judge_protocol=p.judge_protocol,
                judge_max_tokens=p.judge_max_tokens,
            )
            details["bank"] = {
                "items": rep.items,
                "entries": rep.bank_rows,
                "by_source": rep.by_source,
                "entries_by_source": rep.bank_by_source,
                "trajectories": rep.items * p.bank_k,
                "success_rate": rep.success_rate,
                "fallbacks": rep.fallbacks,
                "embedder": rep.embedder,
                "embedder_dim": rep.embedder_dim,
                "tau": p.tau,
                "snapshot_order": "stratified",
                "snapshot_seed": SNAPSHOT_SEED,
            }
            mix = ", ".join(f"{k} {v}" for k, v in rep.bank_by_source.items())
            notes.append(
                f"bank: {rep.bank_rows} entries from {rep.items} training items x K = {p.bank_k} "
                f"trajectories ({mix}); embedder {rep.embedder} ({rep.embedder_dim}-d), tau {p.tau}; "
                f"bank-size snapshots in the paper's stratified order (seed {SNAPSHOT_SEED})"
            )
        n_bank = len(bank)
        retriever = Retriever(bank, emb)
        tau = p.tau
        if p.tau_calibration == "hit_rate" and "ft_fm" in p.variants:
            tau = calibrate_tau(p, retriever, [it.question for _, items in sets for it in items], notes)
            details["tau_calibration"] = {
                "target_hit_rate": p.tau_hit_rate,
                "tau": tau,
                "configured_tau": p.tau,
            }
        for src, items in sets:
            common: dict[str, Any] = dict(
                transcriber=transcriber,
                data_files=[src.resolve(data_root)],
                progress=progress,
                scorer=deferred_scorer(named),  # model-graded sets are scored by finish(), after the run
            )
            if code is not None:
                common["authors"] = code
            for v in p.variants:
                ecfg = EvalConfig(v, solver_cfg)
                proto = {"protocol": p.protocol, "variant_protocol": protocol_label(v, solver_cfg)}
                if v != "ft_fm":
                    run = out_dir / "runs" / f"{slug(src.label)}-{v}"
                    s = evaluate(items, backend, run, ecfg, tools=factory if v == "ft" else None, **common)
                    row = finish(src, items, run, eval_row(src.label, v, s, None, None, n_bank) | proto)
                    rows.append(row)
                    evals.append((row, EvalRun(src.label, v, None, None, run, items)))
                    continue
                mem = MemoryConfig(
                    tau=tau, directive_chars=p.directive_chars, max_directives=p.max_directives,
                    entry_chars=p.entry_chars, block=p.memory_block, annotator=p.annotator,
                    context_chars=p.memory_context_chars, mode=p.memory_mode,
                )  # fmt: skip
                grid = MemoryGrid(
                    retriever, tau, tuple(p.bank_sizes) or (None,), tuple(p.k_max), mem, authors=code
                )
                for s in sweep_memory(
                    items,
                    backend,
                    out_dir / "runs",
                    ecfg,
                    grid.memory,
                    bank_sizes=grid.bank_sizes,
                    k_maxes=grid.k_maxes,
                    prefix=f"{slug(src.label)}-ft_fm-",
                    evaluator=evaluate,
                    tools=factory,
                    **common,
                ):
                    row = eval_row(src.label, v, s, s.k_max, s.bank_limit, n_bank) | proto
                    row = finish(src, items, Path(s.run_dir), row)
                    rows.append(row)
                    evals.append((row, EvalRun(src.label, v, s.k_max, s.bank_limit, Path(s.run_dir), items)))
        rows += macro_rows(rows)
        if evals:
            details["intervals"], diffs = add_intervals(rows, evals)
            if diffs:
                tables.append(("Paired differences with bootstrap 95 % intervals (points)", diffs))
        unseen = [r for r in rows if r.get("images_unseen")]
        if unseen:
            said = [
                f"{r['set']} {r['variant']}: {r['images_unseen']} questions' images unseen "
                f"({r['image_only_unseen']} with no text context)"
                for r in unseen
            ]
            notes.append(
                "the model took no images: " + "; ".join(said) + " (asked without them and scored as usual)"
            )
        if p.taus:
            questions = [it.question for _, items in sets for it in items]
            groups = [src.label for src, items in sets for _ in items]
            sizes = sorted({min(n, n_bank) for n in p.bank_sizes} | {0}) if p.bank_sizes else None
            ana = bank_analytics(bank, emb, questions, sizes=sizes, taus=p.taus, tau=p.tau, groups=groups)
            skip = ("snapshots", "by_set", "tau_sweep")
            details["analytics"] = {k: v for k, v in ana.items() if k not in skip}
            per_set = [r for label in ana["by_set"] for r in ana["by_set"][label]]
            rows += [analytics_row(r) for r in (*ana["tau_sweep"], *per_set)]
            if n_bank < max(p.bank_sizes or (0,)):
                notes.append(f"the bank holds {n_bank} entries: snapshots above that equal the whole bank")
    ran = [v for v in ("base", "ft", "ft_fm") if v in p.variants or (v == "ft" and p.needs_bank)]
    proto_rows = [
        {"variant": "bank build (ft)" if v == "ft" and "ft" not in p.variants else v,
         "protocol": f"{p.protocol}: " + protocol_line(v, solver_cfg) + plan_line(v, p)}
        for v in ran
    ]  # fmt: skip
    details["protocol"] = {r["variant"]: r["protocol"] for r in proto_rows}
    tables.insert(0, ("Protocol of each variant", tuple(proto_rows)))
    cuts = cuts_by_call_type([out_dir / "runs"])
    details["cuts"] = cuts
    if cuts:
        tables.append(
            ("What the solver's limits cut, per call type",
             tuple({"call type": k, **{c: v.get(c, 0) for c in CUTS}} for k, v in cuts.items()))
        )  # fmt: skip
        total = sum(sum(v.values()) for v in cuts.values())
        notes.append(f"limits cut {total} time(s) over all calls (per call type in the table below)")
    for label, jc in checked.items():
        notes.append(
            f"judge check on {label}: {jc.gold_right} of {jc.n} gold answers judged right "
            f"({100 * jc.gold_right_rate:.1f} %), {jc.wrong_caught} of {jc.wrong_n} perturbed wrong "
            f"answers judged wrong ({100 * jc.wrong_caught_rate:.1f} %); judge_check.json in {jc.out_dir}"
        )
    if code is not None:  # which of the authors' texts this run read, and their digests
        details["authors_code"] = {
            "root": str(code.root),
            "differs": list(code.differs),
            "texts": code.records(),
        }
        runs.write_json(out_dir / "authors_code.json", details["authors_code"])
    details = {k: v for k, v in details.items() if v}
    return QAOutcome(
        tuple(rows),
        n_bank,
        tuple(notes),
        details,
        tuple(tables),
        tuple(reads_gold_lines(p, own_bank=bank_from is None)),
    )


def calibrate_tau(p: QAPlan, retriever: Any, questions: list[Any], notes: list[str]) -> float:
    """The tau at which ``questions`` reach ``p.tau_hit_rate`` on the whole bank
    (:mod:`agent.qa.memory.tau_calibration`); said in ``notes``."""
    from agent.qa.memory.memory import ExperienceMemory, MemoryConfig
    from agent.qa.memory.tau_calibration import best_similarities, tau_for_hit_rate

    mem = ExperienceMemory(retriever, MemoryConfig(context_chars=p.memory_context_chars))
    tau = round(tau_for_hit_rate(best_similarities(mem, questions), p.tau_hit_rate), 6)
    notes.append(
        f"tau set to {tau:g} (ours, qa.tau_calibration = hit_rate): the tau at which the "
        f"{len(questions)} test questions reach a hit rate of {100 * p.tau_hit_rate:.1f} % on this bank "
        f"and embedder, as tau {p.tau:g} did on the paper's (qa.tau is not used)"
    )
    return tau
