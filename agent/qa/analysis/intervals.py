"""Bootstrap intervals of finished evaluations: per run, per macro grid point, and for the
differences the paper reads off its sweeps (k_max 3 -> 5, bank n 0 -> 2400, Base -> FT+FM).

Each evaluation is an :class:`EvalRun` (its set label, variant, k_max, bank size and run
folder). A run's per-item correctness comes from its judge pass when there is one
(``judge_scores.json``: FinTMMBench; ``extract_scores.json``: FinMMR's official scorer), else
from its ``trace.jsonl``; FinMME's figure is its Avg
over the six dimensions of the items' golds (:func:`agent.qa.analysis.bootstrap.finmme_metric`), every
other set's its accuracy. Runs of one set are aligned on the same items (the set's item list,
or the first run's trace order), so every interval of a difference is paired
(:mod:`agent.qa.analysis.bootstrap`). Figures are in percent (differences in points).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agent.qa.analysis.bootstrap import (
    RESAMPLES,
    SEED,
    Interval,
    Metric,
    accuracy_metric,
    bootstrap,
    finmme_metric,
    interval,
)
from agent.qa.core import runs
from agent.qa.core.items import QAItem
from agent.qa.loaders.finmme import FINMME_DIMENSIONS
from agent.qa.scoring.extract_pass import EXTRACT_SCORES
from agent.qa.scoring.judge_pass import JUDGE_SCORES
from localfin.errors import InputError

__all__ = ["EvalRun", "IntervalReport", "item_correct", "run_intervals"]

MACRO = "macro"


@dataclass(frozen=True)
class EvalRun:
    """One finished evaluation: ``set`` label, ``variant``, ``k_max`` / ``bank_n`` (None where
    they do not apply or for the whole bank) and its folder; ``items`` (optional) fixes the item
    order and, for FinMME, gives the dimensions."""

    set: str
    variant: str
    k_max: int | None
    bank_n: int | None
    run_dir: Path
    items: Sequence[QAItem] | None = None

    @property
    def point(self) -> tuple[str, int | None, int | None]:
        return self.variant, self.k_max, self.bank_n


@dataclass(frozen=True)
class IntervalReport:
    """Intervals (percent) per run folder, per macro grid point, and the paired differences."""

    per_run: dict[str, Interval]
    macro: dict[tuple[str, int | None, int | None], Interval]
    differences: tuple[dict[str, Any], ...]
    resamples: int
    seed: int


def item_correct(run_dir: str | Path) -> dict[str, bool]:
    """Item id -> correct, from the model pass when the run has one (a judge's verdicts, or
    FinMMR's extracted answers), else from its trace."""
    d = Path(run_dir)
    graded = next((d / f for f in (JUDGE_SCORES, EXTRACT_SCORES) if (d / f).is_file()), None)
    if graded is not None:
        rows = runs.read_json(graded).get("items", [])
    else:
        rows = runs.read_jsonl(d / runs.TRACE)
    return {str(r["item_id"]): bool(r["correct"]) for r in rows}


def _metric(run: EvalRun, ids: Sequence[str]) -> tuple[Metric, float]:
    got = item_correct(run.run_dir)
    missing = [i for i in ids if i not in got]
    if missing:
        raise InputError(f"{run.run_dir} has no result for item {missing[0]!r} ({len(missing)} missing)")
    correct = [got[i] for i in ids]
    items = {it.item_id: it for it in run.items or ()}
    if items and all(items[i].question.dataset == "finmme" for i in ids):
        dims = [tuple(items[i].gold.extra.get("dimensions", ())) for i in ids]
        m = finmme_metric(correct, dims, FINMME_DIMENSIONS)
        return m, float(m(np.arange(len(ids))[None, :])[0])
    return accuracy_metric(correct), sum(correct) / len(correct)


def _n(n: int | None) -> str:
    return "all" if n is None else str(n)


def _label(point: tuple[str, int | None, int | None]) -> str:
    v, k, n = point
    return v if k is None else f"{v} k_max {k} bank n {_n(n)}"


def _pairs(points: Sequence[tuple[str, int | None, int | None]]) -> list[tuple[Any, Any, str]]:
    """Consecutive k_max at each (variant, bank n); consecutive bank sizes at each (variant,
    k_max); Base against every other point."""
    out: list[tuple[Any, Any, str]] = []
    mem = [p for p in points if p[1] is not None]
    for v, n in dict.fromkeys((p[0], p[2]) for p in mem):
        ks = sorted((p for p in mem if (p[0], p[2]) == (v, n)), key=lambda p: p[1])
        out += [(a, b, f"k_max {a[1]} -> {b[1]} (bank n {_n(n)})") for a, b in zip(ks, ks[1:])]
    for v, k in dict.fromkeys((p[0], p[1]) for p in mem):
        ns = sorted((p for p in mem if (p[0], p[1]) == (v, k)), key=lambda p: (p[2] is None, p[2] or 0))
        out += [(a, b, f"bank n {_n(a[2])} -> {_n(b[2])} (k_max {k})") for a, b in zip(ns, ns[1:])]
    base = [p for p in points if p[0] == "base"]
    if base:
        out += [(base[0], p, f"base -> {_label(p)}") for p in points if p[0] != "base"]
    return out


def _diff(a: float, b: float, dist_a: Any, dist_b: Any, scope: str, what: str) -> dict[str, Any]:
    iv = interval(b - a, dist_b - dist_a).to_pct()
    return {
        "set": scope,
        "comparison": what,
        "diff_pts": iv["estimate"],
        "ci95_low": iv["low"],
        "ci95_high": iv["high"],
        "zero_inside": iv["low"] <= 0.0 <= iv["high"],
    }


def run_intervals(
    evals: Sequence[EvalRun], *, resamples: int = RESAMPLES, seed: int = SEED
) -> IntervalReport:
    """Intervals of every run, of the macro figure of every grid point two or more sets share,
    and of the differences of :func:`_pairs`, per set and for the macro figure."""
    sets: dict[str, list[EvalRun]] = {}
    for e in evals:
        sets.setdefault(e.set, []).append(e)
    per_run: dict[str, Interval] = {}
    diffs: list[dict[str, Any]] = []
    metrics: dict[str, dict[tuple, tuple[Metric, float]]] = {}
    sizes: dict[str, int] = {}
    for label, group in sets.items():
        first = group[0]
        ids = [it.item_id for it in first.items] if first.items else list(item_correct(first.run_dir))
        if not ids:
            continue
        sizes[label] = len(ids)
        metrics[label] = {e.point: _metric(e, ids) for e in group}
        dist = bootstrap({str(p): [m] for p, (m, _) in metrics[label].items()}, [len(ids)],
                         resamples=resamples, seed=seed)  # fmt: skip
        est = {p: v for p, (_, v) in metrics[label].items()}
        for e in group:
            per_run[str(e.run_dir)] = interval(est[e.point], dist[str(e.point)])
        for a, b, what in _pairs(list(metrics[label])):
            diffs.append(_diff(est[a], est[b], dist[str(a)], dist[str(b)], label, what))
    macro: dict[tuple, Interval] = {}
    points = list(dict.fromkeys(p for m in metrics.values() for p in m))
    full = [p for p in points if all(p in metrics[s] for s in metrics)]  # every set has it
    if full and len(metrics) > 1:
        order = list(metrics)
        dist = bootstrap(
            {str(p): [metrics[s][p][0] for s in order] for p in full},
            [sizes[s] for s in order],
            resamples=resamples,
            seed=seed,
        )
        mean = {p: sum(metrics[s][p][1] for s in order) / len(order) for p in full}
        for p in full:
            macro[p] = interval(mean[p], dist[str(p)])
        for a, b, what in _pairs(full):
            diffs.append(_diff(mean[a], mean[b], dist[str(a)], dist[str(b)], MACRO, what))
    return IntervalReport(per_run, macro, tuple(diffs), resamples, seed)
