"""Scoring the screen against the synthetic market's ground truth (truth.json)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from agent.data.schema import to_date
from agent.data.store import MarketStore
from agent.pairs.screen import ScreenConfig, pair_key, screen_store

__all__ = ["planted_pairs", "ScreenScore", "ScreenEvaluation", "evaluate_screen", "evaluation_dates"]


def planted_pairs(truth: dict, date: str | dt.date | None = None) -> frozenset[tuple[str, str]]:
    """Planted cointegrated pairs (alphabetical); with ``date``, only those not broken on or before it."""
    day = None if date is None else to_date(date)
    out = set()
    for p in truth["pairs"]:
        brk = p.get("break")
        if day is not None and brk is not None and to_date(brk["date"]) <= day:
            continue
        out.add(pair_key(*p["pair"]))
    return frozenset(out)


@dataclass(frozen=True)
class ScreenScore:
    """One date: top-k pairs, hits among all planted pairs and among the unbroken ones, and
    the AUC of the p-value ordering (probability that a random unbroken planted pair has a
    lower p-value than a random non-planted pair; NaN p-values count as 1)."""

    date: dt.date
    top: tuple[tuple[str, str], ...]
    hits_planted: int
    hits_active: int
    n_active: int
    auc_active: float


@dataclass(frozen=True)
class ScreenEvaluation:
    """Mean precision@k over dates: hits / k against all planted pairs and against the pairs
    still unbroken at each date; recall_active = hits / number of unbroken pairs."""

    k: int
    scores: tuple[ScreenScore, ...]

    @property
    def precision_planted(self) -> float:
        return float(np.mean([s.hits_planted / self.k for s in self.scores]))

    @property
    def precision_active(self) -> float:
        return float(np.mean([s.hits_active / self.k for s in self.scores]))

    @property
    def recall_active(self) -> float:
        return float(np.mean([s.hits_active / s.n_active for s in self.scores if s.n_active]))

    @property
    def auc_active(self) -> float:
        return float(np.nanmean([s.auc_active for s in self.scores]))


def _auc(pos: np.ndarray, neg: np.ndarray) -> float:
    if not len(pos) or not len(neg):
        return float("nan")
    lower = (pos[:, None] < neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(lower / (len(pos) * len(neg)))


def evaluation_dates(store: MarketStore, n: int, *, first_session: int = 504) -> list[dt.date]:
    """``n`` sessions evenly spaced from ``first_session`` (2 years of history by default) to the last."""
    cal = store.calendar()
    idx = np.unique(np.linspace(first_session, len(cal) - 1, n).round().astype(int))
    return [cal[i].item() for i in idx]


def evaluate_screen(
    store: MarketStore, truth: dict, dates: Sequence[str | dt.date], config: ScreenConfig | None = None
) -> ScreenEvaluation:
    """Run the screen at each date and score its top-k against the truth."""
    cfg = config or ScreenConfig()
    allp = planted_pairs(truth)
    scores = []
    for d in dates:
        res = screen_store(store, d, config=cfg)
        top = tuple((c.ticker_a, c.ticker_b) for c in res.candidates)
        active = planted_pairs(truth, d)
        pv = {(p.ticker_a, p.ticker_b): (p.pvalue if np.isfinite(p.pvalue) else 1.0) for p in res.pairs}
        pos = np.array([v for k, v in pv.items() if k in active])
        neg = np.array([v for k, v in pv.items() if k not in allp])
        scores.append(
            ScreenScore(
                to_date(d),
                top,
                sum(p in allp for p in top),
                sum(p in active for p in top),
                len(active),
                _auc(pos, neg),
            )
        )
    return ScreenEvaluation(cfg.top_k, tuple(scores))
