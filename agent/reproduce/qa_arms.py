"""A FinAcumen plan with arms (``[[qa.arms]]``): each arm's plan runs into
``<out>/arms/<name>`` (:func:`agent.reproduce.qa_run.run_plan`), in the order written; an arm
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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent.reproduce.qa_plan import QAArm, QAPlan
from agent.reproduce.spec import ReproConfig

__all__ = ["run_arms"]

log = logging.getLogger(__name__)

#: per-run details merged across arms (keyed ``<arm>/<run folder>``)
_PER_RUN = ("judge", "finmme", "scoring")


def run_arms(cfg: ReproConfig, out_dir: Path, arms: Sequence[tuple[QAArm, QAPlan]], **kw: Any) -> Any:
    """Run every arm (module docstring); ``kw`` go to :func:`agent.reproduce.qa_run.run_plan`."""
    from agent.reproduce.qa_run import QAOutcome, run_plan

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
