"""Running a FinAcumen reproduction plan (:func:`run_qa`): one plan alone
(:func:`agent.reproduce.qa.run.run_plan`) or, with arms (``[[qa.arms]]``), each arm's plan into
``<out>/arms/<name>``, in the order written (:func:`run_arms`); an arm
with ``bank_of`` reads the bank the named arm built and builds none, so arms that change only
what the model is given at test time are compared on one bank. The model OCR's journal
(``<out>/ocr``) is shared: an image is transcribed once for every arm.

The outcome is the arms' together: every row carries its ``arm``; the notes, the extra tables
and the per-run details are the arms' (run folders named ``<arm>/<run>``), with each arm's own
details under ``arms``; a table lists the arms with their protocol, bank and what of the gold
each reads at test time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agent.reproduce.qa.plan import QAArm, QAPlan
from agent.reproduce.qa.run import QAOutcome, run_plan
from agent.reproduce.spec import ReproConfig, qa_arms
from bank.embedder import Embedder, MiniLMEmbedder
from localfin.progress import NULL_PROGRESS, Progress
from serving.chat.backend import Backend
from serving.models.registry import Registry

__all__ = ["run_qa", "run_arms"]

log = logging.getLogger(__name__)

#: per-run details merged across arms (keyed ``<arm>/<run folder>``)
_PER_RUN = ("judge", "finmme", "scoring")


def run_qa(
    cfg: ReproConfig,
    out_dir: Path,
    *,
    backend: Backend | None,
    registry: Registry | None,
    data_root: Path,
    plan: QAPlan | None = None,
    shrink: Callable[[QAPlan], QAPlan] | None = None,
    embedder: Embedder | None = None,
    judge_backend: Backend | None = None,
    progress: Progress = NULL_PROGRESS,
    cluster: Any = None,
) -> QAOutcome:
    """Run ``plan`` (default: the config's) on ``backend`` into ``out_dir``; the plan's ``judge``
    model (judge passes, judge check, judged bank sources) runs on ``judge_backend`` (default
    ``backend``, which must then serve it). A plan with arms runs each arm's plan into
    ``out_dir/arms/<name>`` (:func:`run_arms`); ``shrink`` is applied to each plan
    that runs (a rehearsal's or a smoke run's). ``cluster``: a
    :class:`agent.qa.cluster.driver.QACluster` that runs the bank build, the evaluations, the
    judge and extraction passes sharded over a Ray cluster (``backend`` is then None: the shards
    call their servers); the run folder is the one-process one."""
    p = plan or cfg.qa
    assert p is not None
    kw: dict[str, Any] = dict(
        backend=backend, registry=registry, data_root=data_root, embedder=embedder or MiniLMEmbedder(),
        judge_backend=judge_backend, progress=progress, cluster=cluster,
    )  # fmt: skip
    arms = qa_arms(p, cfg.qa_explicit)
    if arms[0][0] is None:
        return run_plan(cfg, out_dir, shrink(p) if shrink else p, **kw)
    return run_arms(
        cfg, out_dir, [(a, shrink(ap) if shrink else ap) for a, ap in arms if a is not None], **kw
    )


def run_arms(cfg: ReproConfig, out_dir: Path, arms: Sequence[tuple[QAArm, QAPlan]], **kw: Any) -> QAOutcome:
    """Run every arm (module docstring); ``kw`` go to :func:`agent.reproduce.qa.run.run_plan`."""
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    tables: list[tuple[str, tuple[dict[str, Any], ...]]] = []
    details: dict[str, Any] = {k: {} for k in _PER_RUN}
    details["arms"] = {}
    listing = []
    bank_rows = 0
    gold: list[str] = []
    for arm, plan in arms:
        where = out_dir / "arms" / arm.name
        bank_from = out_dir / "arms" / arm.bank_of / "bank" if arm.bank_of else None
        log.info("arm %s: %s", arm.name, arm.title or "as the [qa] table")
        # one OCR journal for every arm: a transcription depends on the model and the image only
        got = run_plan(cfg, where, plan, bank_from=bank_from, ocr_dir=out_dir / "ocr", **kw)
        gold += [line.replace("reads_gold:", f"reads_gold (arm {arm.name}):", 1) for line in got.reads_gold]
        bank_rows = max(bank_rows, got.bank_rows)
        rows += [{"arm": arm.name, **r} for r in got.rows]
        notes += [f"arm {arm.name}: {n}" for n in got.notes]
        tables += [(f"{title} (arm {arm.name})", trows) for title, trows in got.tables]
        d = got.details
        details["arms"][arm.name] = d
        for k in _PER_RUN:
            details[k].update({f"{arm.name}/{run}": v for run, v in d.get(k, {}).items()})
        for k in ("data", "judge_check"):  # the same data and judge in every arm: the first's
            if k in d and k not in details:
                details[k] = d[k]
        if "bank" in d:  # the arms that built a bank
            b = details.setdefault("bank", {"by_source": {}})
            for src, rec in d["bank"].get("by_source", {}).items():
                tot = b["by_source"].setdefault(src, {})
                for key, v in rec.items():
                    tot[key] = tot.get(key, 0) + v if isinstance(v, int) else v
        listing.append(
            {
                "arm": arm.name,
                "protocol": plan.protocol,
                "changes": arm.title or ", ".join(f"{k} = {v!r}" for k, v in arm.set.items()) or "-",
                "bank": f"the bank of arm {arm.bank_of}" if arm.bank_of else "its own",
                "reads_gold": ", ".join(f"{k} = {getattr(plan, k)!r}" for k in plan.reads_gold) or "none",
            }
        )
    tables.insert(0, ("Arms", tuple(listing)))
    details = {k: v for k, v in details.items() if v}
    return QAOutcome(tuple(rows), bank_rows, tuple(notes), details, tuple(tables), tuple(gold))
