"""Bootstrap 95 % intervals of QA figures (FinAcumen §5.5 judges the k_max sweep by them).

Percentile bootstrap over questions: each resample draws, for every set, as many of its items
with replacement as it has (sets are resampled independently: a stratified bootstrap), and a
figure is recomputed on the draw (a set's accuracy, FinMME's Avg, or a macro figure: the mean
of its sets' figures). Every figure of one call is computed on the same draws, so the interval
of a difference between two runs over the same items (k_max 3 against 5) is paired: the
questions both runs got right or wrong cancel, as in a paired test. The paper does not say how
many resamples or which interval it used; we take B = 10,000 percentile resamples with seed 0,
so the intervals of a run are reproducible.

Inputs are per-item results read back from run folders (``trace.jsonl``, or a judge pass's
``judge_scores.json``); nothing here calls a model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from localfin.errors import ConfigError

__all__ = [
    "RESAMPLES",
    "SEED",
    "Interval",
    "Metric",
    "accuracy_metric",
    "finmme_metric",
    "bootstrap",
    "interval",
]

RESAMPLES = 10_000
SEED = 0
_CHUNK = 250  # resamples drawn at a time (bounds memory: chunk x items indices)

#: A figure of one set: resample index rows (draws, n_items) -> the figure on each draw.
Metric = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Interval:
    """A figure on the full sample and its bootstrap interval (same unit: fractions)."""

    estimate: float
    low: float
    high: float
    level: float = 0.95

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def to_pct(self) -> dict[str, float]:
        """In percent (points for a difference), two decimals."""
        return {
            "estimate": round(100 * self.estimate, 2),
            "low": round(100 * self.low, 2),
            "high": round(100 * self.high, 2),
        }


def accuracy_metric(correct: Sequence[bool]) -> Metric:
    """Accuracy of one set from its items' correctness."""
    c = np.asarray(correct, dtype=np.float64)

    def metric(idx: np.ndarray) -> np.ndarray:
        return c[idx].mean(axis=1)

    return metric


def finmme_metric(
    correct: Sequence[bool], dimensions: Sequence[Sequence[str]], names: Sequence[str]
) -> Metric:
    """FinMME's Avg of one set: the mean over ``names`` of the accuracy of each dimension's items
    (an item counts in each of its ``dimensions``); a dimension no drawn item has is left out of
    that draw's mean, as :func:`agent.qa.scoring.scoring.finmme_avg` leaves out an empty dimension."""
    c = np.asarray(correct, dtype=np.float64)
    member = np.asarray([[d in dims for d in names] for dims in dimensions], dtype=np.float64)
    if member.shape != (len(c), len(names)):
        raise ConfigError(f"finmme_metric: {len(dimensions)} dimension lists for {len(c)} items")

    def metric(idx: np.ndarray) -> np.ndarray:
        m = member[idx]  # (draws, n, dims)
        hits = (m * c[idx][:, :, None]).sum(axis=1)
        counts = m.sum(axis=1)
        acc = np.divide(hits, counts, out=np.zeros_like(hits), where=counts > 0)
        used = (counts > 0).sum(axis=1)
        return np.divide(acc.sum(axis=1), used, out=np.zeros(len(idx)), where=used > 0)

    return metric


def bootstrap(
    figures: Mapping[str, Sequence[Metric]],
    sizes: Sequence[int],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> dict[str, np.ndarray]:
    """The bootstrap distribution of every figure: ``figures[name]`` holds one metric per set
    (sets in the order of ``sizes``, their item counts; the figure is their mean), all computed
    on the same draws. Returns ``name -> (resamples,)`` values."""
    if resamples < 1:
        raise ConfigError(f"resamples={resamples}; allowed: >= 1")
    if any(n < 1 for n in sizes):
        raise ConfigError(f"every set needs at least one item; sizes={list(sizes)}")
    for name, metrics in figures.items():
        if len(metrics) != len(sizes):
            raise ConfigError(f"figure {name!r} has {len(metrics)} set metrics for {len(sizes)} sets")
    rng = np.random.default_rng(seed)
    parts: dict[str, list[np.ndarray]] = {k: [] for k in figures}
    done = 0
    while done < resamples:
        b = min(_CHUNK, resamples - done)
        draws = [rng.integers(0, n, size=(b, n)) for n in sizes]
        for name, metrics in figures.items():
            parts[name].append(np.mean([m(d) for m, d in zip(metrics, draws)], axis=0))
        done += b
    return {k: np.concatenate(v) for k, v in parts.items()}


def interval(estimate: float, values: np.ndarray, level: float = 0.95) -> Interval:
    """The percentile interval of a bootstrap distribution around the full-sample ``estimate``."""
    if not 0.0 < level < 1.0:
        raise ConfigError(f"level={level}; allowed: (0, 1)")
    lo, hi = np.quantile(np.asarray(values, dtype=np.float64), [(1 - level) / 2, (1 + level) / 2])
    return Interval(float(estimate), float(lo), float(hi), level)
