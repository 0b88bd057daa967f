"""Running a FinAcumen reproduction config on one backend: build the experience bank from the
``[[qa.bank]]`` sources (training/validation splits only), evaluate every ``[[qa.sets]]`` set
with every variant (``ft_fm`` over the bank-size x k_max grid), and, with ``taus``, the
retrieval analytics (H/E/J/C) of the sets' questions over the bank snapshots. The same library
functions as ``localfin qa build-bank`` / ``qa eval`` / ``qa analyze``; every model call is
journaled in its run folder, so rerunning resumes.

Each set is reported in its benchmark's own metric (the row's ``metric`` field):

- FinTMMBench: after the solver's run, a judge pass (:func:`agent.qa.judge_pass.judge_run`,
  the plan's ``judge`` model, its own journal ``judge.sqlite`` in the run folder) grades the
  final answers; ``accuracy_pct`` is the judged accuracy and ``judge_scores.json`` holds every
  verdict. The judge sees the gold answer; the solver never does (scoring only, after the run).
- FinMME: ``finmme_avg_pct`` is FinMME's Avg over its six dimensions
  (:func:`agent.qa.scoring.finmme_avg` over the trace's per-item correctness); the
  per-dimension accuracies and counts go to the report's JSON (``qa_details``).
- every other set: ``accuracy_pct`` under the benchmark's scorer.

A ``macro`` row averages the sets' headline figures (FinMME: its Avg).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agent.qa import runs
from agent.qa.datasets import load_items
from agent.qa.item_score import ItemScore
from agent.qa.scoring import finmme_avg
from agent.reproduce.spec import QAPlan, QASource, ReproConfig
from bank.embedder import Embedder, MiniLMEmbedder
from localfin.errors import InputError
from localfin.progress import NULL_PROGRESS, Progress
from serving.backend import Backend
from serving.open import model_facts
from serving.registry import Registry

__all__ = ["QAOutcome", "finmme_run_avg", "run_qa", "shrink_plan", "slug"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class QAOutcome:
    """Rows for the report: one per evaluation (plus a ``macro`` row per grid point when there
    are several sets) and, with a tau sweep, one per (tau, bank size)."""

    rows: tuple[dict[str, Any], ...]
    bank_rows: int
    notes: tuple[str, ...]
    #: per run folder name: the judge pass (``judge``) and FinMME's dimensions (``finmme``)
    details: dict[str, dict[str, Any]] = field(default_factory=dict)


def slug(text: str) -> str:
    """A folder-safe name of a label."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _load(src: QASource, root: Path):

    loaded = load_items(src.dataset, src.resolve(root), split=src.split, subset=src.subset, limit=src.limit)
    if loaded.skipped:
        log.warning(
            "%s: %d records skipped (first: %s)", src.label, len(loaded.skipped), loaded.skipped[0].reason
        )
    return list(loaded.items)


def _row(label: str, variant: str, s: Any, k: int | None, size: int | None, n_bank: int) -> dict[str, Any]:
    return {
        "set": label,
        "variant": variant,
        "k_max": "" if k is None else str(k),
        "bank_n": "" if variant != "ft_fm" else str(n_bank if size is None else min(size, n_bank)),
        "n": s.n,
        "metric": "accuracy",
        "accuracy_pct": round(100 * s.accuracy, 2),
        "memory_hit_rate": s.memory_hit_rate,
        "tokens_per_q": round(s.mean_total_tokens),
    }


def _headline(r: Mapping[str, Any]) -> float | None:
    v = r.get("finmme_avg_pct", r.get("accuracy_pct"))
    return None if v is None else float(v)


def _macro(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if _headline(r) is not None:
            groups.setdefault((r["variant"], r["k_max"], r["bank_n"]), []).append(r)
    out = []
    for (variant, k, n), rs in groups.items():
        if len(rs) > 1:
            acc = sum(_headline(r) or 0.0 for r in rs) / len(rs)
            out.append(
                {"set": "macro", "variant": variant, "k_max": k, "bank_n": n, "n": sum(r["n"] for r in rs),
                 "metric": "mean of the sets' figures", "accuracy_pct": round(acc, 2)}
            )  # fmt: skip
    return out


def finmme_run_avg(run_dir: Path, items: Sequence[Any]) -> dict[str, Any]:
    """FinMME's Avg of a finished evaluation: per-item correctness from the run's trace, the
    dimensions from the items' golds (``extra['dimensions']``). Returns the Avg, the accuracy
    and item count per dimension (fractions), the empty dimensions and the plain item accuracy."""

    correct = {str(r["item_id"]): bool(r["correct"]) for r in runs.read_jsonl(run_dir / runs.TRACE)}
    missing = [it.item_id for it in items if it.item_id not in correct]
    if missing:
        raise InputError(f"{run_dir / runs.TRACE} has no row for item {missing[0]!r}")
    scores = [ItemScore(correct[it.item_id], float(correct[it.item_id]), "") for it in items]
    a = finmme_avg([it.gold for it in items], scores)
    return {
        "avg": a.avg,
        "accuracy": dict(a.accuracy),
        "counts": dict(a.counts),
        "missing": list(a.missing),
        "item_accuracy": sum(s.correct for s in scores) / len(scores) if scores else 0.0,
    }


def run_qa(
    cfg: ReproConfig,
    out_dir: Path,
    *,
    backend: Backend,
    registry: Registry | None,
    data_root: Path,
    plan: QAPlan | None = None,
    embedder: Embedder | None = None,
    judge_backend: Backend | None = None,
    progress: Progress = NULL_PROGRESS,
) -> QAOutcome:
    """Run ``plan`` (default: the config's) on ``backend`` into ``out_dir``; judge passes use
    ``judge_backend`` (default ``backend``) with the plan's ``judge`` model."""
    from agent.qa.analyze import bank_analytics
    from agent.qa.bank_build import BankBuildConfig, build_bank
    from agent.qa.evaluate import EvalConfig, evaluate
    from agent.qa.judge_pass import JUDGED_DATASETS, deferred_scorer, judge_run
    from agent.qa.react import QASolver, solver_config_for
    from agent.qa.sweep import MemoryGrid, sweep_memory
    from agent.qa.toolset import ToolsetConfig, ocr_transcriber, tool_factory
    from bank.retrieval import Retriever
    from bank.store import ExperienceBank

    p = plan or cfg.qa
    assert p is not None
    out_dir.mkdir(parents=True, exist_ok=True)
    solver_cfg = solver_config_for(model_facts(p.model, registry), max_steps=p.max_steps)
    tools = tuple(t for t in p.tools if t != "lookup")  # lookup needs a market store: none given here
    notes = [] if tools == p.tools else ["the lookup tool is off (no market store is given to QA runs)"]
    factory = tool_factory(ToolsetConfig(names=tools, python_unavailable="refuse"))
    emb = embedder or MiniLMEmbedder()
    details: dict[str, dict[str, Any]] = {"judge": {}, "finmme": {}}
    if any(s.dataset in JUDGED_DATASETS for s in p.sets):
        notes.append(
            f"FinTMMBench answers judged by {p.judge} (local; the paper used GPT-4o-mini): "
            "verdicts in each run folder's judge_scores.json"
        )

    def finish(src: QASource, items: list[Any], run: Path, row: dict[str, Any]) -> dict[str, Any]:
        """The set's own metric on a finished run (a judge pass, or FinMME's Avg)."""
        if src.dataset in JUDGED_DATASETS:
            js = judge_run(run, items, judge_backend or backend, p.judge)
            row.update(metric=f"judge accuracy ({p.judge})", accuracy_pct=round(100 * js.accuracy, 2))
            details["judge"][run.name] = runs.to_jsonable(js)
        elif src.dataset == "finmme":
            fa = finmme_run_avg(run, items)
            row.pop("accuracy_pct")
            row.update(metric="FinMME Avg", finmme_avg_pct=round(100 * fa["avg"], 2))
            details["finmme"][run.name] = fa
        return row

    sets = [(s, _load(s, data_root)) for s in p.sets]
    bank_items = [it for s in (p.bank if p.needs_bank else ()) for it in _load(s, data_root)]
    with_images = any(it.question.images for _, items in sets for it in items) or any(
        it.question.images for it in bank_items
    )
    transcriber = ocr_transcriber() if "reparse" in tools and with_images else None
    rows: list[dict[str, Any]] = []
    with ExperienceBank.open(out_dir / "bank") as bank:
        if p.needs_bank:
            build_bank(
                bank_items,
                QASolver(solver_cfg, tools=factory),
                backend,
                bank,
                emb,
                out_dir / "runs" / "bank_build",
                config=BankBuildConfig(k=p.bank_k, temperature=p.bank_temperature),
                data_files=[s.resolve(data_root) for s in p.bank],
                transcriber=transcriber,
                progress=progress,
            )
        n_bank = len(bank)
        retriever = Retriever(bank, emb)
        for src, items in sets:
            common: dict[str, Any] = dict(
                transcriber=transcriber,
                data_files=[src.resolve(data_root)],
                progress=progress,
                scorer=deferred_scorer(),  # judged sets are scored by finish(), after the run
            )
            for v in p.variants:
                ecfg = EvalConfig(v, solver_cfg)
                if v != "ft_fm":
                    run = out_dir / "runs" / f"{slug(src.label)}-{v}"
                    s = evaluate(items, backend, run, ecfg, tools=factory if v == "ft" else None, **common)
                    rows.append(finish(src, items, run, _row(src.label, v, s, None, None, n_bank)))
                    continue
                grid = MemoryGrid(retriever, p.tau, tuple(p.bank_sizes) or (None,), tuple(p.k_max))
                for s in sweep_memory(
                    items,
                    backend,
                    out_dir / "runs",
                    ecfg,
                    grid.memory,
                    bank_sizes=grid.bank_sizes,
                    k_maxes=grid.k_maxes,
                    prefix=f"{slug(src.label)}-ft_fm-",
                    tools=factory,
                    **common,
                ):
                    row = _row(src.label, v, s, s.k_max, s.bank_limit, n_bank)
                    rows.append(finish(src, items, Path(s.run_dir), row))
        rows += _macro(rows)
        if p.taus:
            questions = [it.question for _, items in sets for it in items]
            sizes = sorted({min(n, n_bank) for n in p.bank_sizes} | {0}) if p.bank_sizes else None
            ana = bank_analytics(bank, emb, questions, sizes=sizes, taus=p.taus, tau=p.tau)
            for r in ana["tau_sweep"]:
                rows.append(
                    {
                        "tau": f"{r['tau']:.2f}".rstrip("0").rstrip("."),
                        "bank_n": str(r["n"]),
                        "hit_rate_pct": round(100 * r["hit_rate"], 1),
                        "mean_entries": round(r["mean_entries"], 2),
                        "jaccard_prev": None if r["jaccard_prev"] is None else round(r["jaccard_prev"], 3),
                        "change_prev": None if r["change_prev"] is None else round(r["change_prev"], 3),
                    }
                )
            if n_bank < max(p.bank_sizes or (0,)):
                notes.append(f"the bank holds {n_bank} entries: snapshots above that equal the whole bank")
    return QAOutcome(tuple(rows), n_bank, tuple(notes), {k: v for k, v in details.items() if v})


def shrink_plan(plan: QAPlan, demo_dir: Path, *, model: str, n_items: int, max_steps: int) -> QAPlan:
    """The plan on the bundled demo set: the first bank source reads 2 train items, the first two
    sets ``n_items`` test items each (labelled ``demo as <set>``, so no paper figure is printed
    beside a smoke figure); bank-size snapshots become 0/2/4, k_max and tau are kept."""
    bank = tuple(
        replace(s, dataset="demo", path=str(demo_dir), split="train", subset=None, limit=2)
        for s in plan.bank[:1]
    )
    sets = tuple(
        replace(
            s,
            label=f"demo as {s.label}",
            dataset="demo",
            path=str(demo_dir),
            split="test",
            subset=None,
            limit=n_items,
        )
        for s in plan.sets[:2]
    )
    sizes = tuple(sorted({0, 2, 4})) if plan.bank_sizes else ()
    return replace(
        plan, model=model, backend="vllm", max_steps=max_steps, tools=("python",), bank_k=2,
        bank_sizes=sizes, bank=bank, sets=sets, judge_model="",
    )  # fmt: skip
