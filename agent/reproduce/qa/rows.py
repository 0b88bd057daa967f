"""The rows of a FinAcumen reproduction's report: one per evaluation (:func:`eval_row`), the
``macro`` rows over the sets (:func:`macro_rows`), FinMME's Avg of a finished run
(:func:`finmme_run_avg`), the bootstrap intervals put on the rows (:func:`add_intervals`) and the
retrieval analytics' rows (:func:`analytics_row`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agent.qa.analysis.intervals import EvalRun, run_intervals
from agent.qa.core import runs
from agent.qa.core.item_score import ItemScore
from agent.qa.scoring.scoring import finmme_avg
from localfin.errors import InputError

__all__ = ["eval_row", "headline", "macro_rows", "finmme_run_avg", "add_intervals", "analytics_row"]


def eval_row(
    label: str, variant: str, s: Any, k: int | None, size: int | None, n_bank: int
) -> dict[str, Any]:
    """The report row of one evaluation (``s``: its summary) of set ``label``."""
    row = {
        "set": label,
        "variant": variant,
        "k_max": "" if k is None else str(k),
        "bank_n": "" if variant != "ft_fm" else str(n_bank if size is None else min(size, n_bank)),
        # the snapshot asked for ("all": the whole bank), for matching the paper's nominal sizes
        "snapshot": "" if variant != "ft_fm" else ("all" if size is None else str(size)),
        "n": s.n,
        "metric": "accuracy",
        "accuracy_pct": round(100 * s.accuracy, 2),
        "memory_hit_rate": s.memory_hit_rate,
        "tokens_per_q": round(s.mean_total_tokens),
    }
    if s.images_unseen:
        row["images_unseen"] = s.images_unseen
        row["image_only_unseen"] = s.image_only_unseen
    return row


def headline(r: Mapping[str, Any]) -> float | None:
    v = r.get("finmme_avg_pct", r.get("accuracy_pct"))
    return None if v is None else float(v)


def macro_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if headline(r) is not None:
            groups.setdefault((r["variant"], r["k_max"], r["bank_n"]), []).append(r)
    out = []
    for (variant, k, n), rs in groups.items():
        if len(rs) > 1:
            acc = sum(headline(r) or 0.0 for r in rs) / len(rs)
            out.append(
                {"set": "macro", "variant": variant, "k_max": k, "bank_n": n, "snapshot": rs[0]["snapshot"],
                 "n": sum(r["n"] for r in rs), "metric": "mean of the sets' figures",
                 "accuracy_pct": round(acc, 2)}
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


def add_intervals(
    rows: list[dict[str, Any]], evals: Sequence[tuple[dict[str, Any], EvalRun]]
) -> tuple[dict[str, Any], tuple[dict[str, Any], ...]]:
    """Bootstrap 95 % intervals (percent) onto the evaluation and macro rows; returns the
    intervals' record for the JSON and the paired differences."""
    rep = run_intervals([e for _, e in evals])
    point_of: dict[tuple[str, str, str], tuple[str, int | None, int | None]] = {}
    for row, e in evals:
        iv = rep.per_run[str(e.run_dir)].to_pct()
        row.update(ci95_low=iv["low"], ci95_high=iv["high"])
        point_of[(row["variant"], row["k_max"], row["bank_n"])] = e.point
    for row in rows:
        if row.get("set") == "macro":
            point = point_of.get((row["variant"], row["k_max"], row["bank_n"]))
            if point in rep.macro:
                iv = rep.macro[point].to_pct()
                row.update(ci95_low=iv["low"], ci95_high=iv["high"])
    record = {
        "method": f"percentile bootstrap over questions, {rep.resamples} resamples, seed {rep.seed}, "
        "sets resampled independently, differences paired (the same draws for both runs)",
        "differences": list(rep.differences),
    }
    return record, rep.differences


def analytics_row(r: Mapping[str, Any]) -> dict[str, Any]:
    def r3(x: float | None) -> float | None:
        return None if x is None else round(x, 3)

    return {
        "set": r["set"],
        "tau": f"{r['tau']:.2f}".rstrip("0").rstrip("."),
        "bank_n": str(r["n"]),
        "hit_rate_pct": round(100 * r["hit_rate"], 1),
        "hit_rate": round(r["hit_rate"], 3),
        "mean_entries": round(r["mean_entries"], 2),
        "jaccard_prev": r3(r["jaccard_prev"]),
        "change_prev": r3(r["change_prev"]),
    }
