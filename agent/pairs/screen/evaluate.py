"""Scoring the screen against the synthetic market's ground truth (truth.json)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agent.data.schema import to_date
from agent.data.store import MarketStore
from agent.pairs.screen.causal import ScreenConfig, pair_key, screen_store
from localfin.errors import InputError
from localfin.progress import NULL_PROGRESS, Progress

__all__ = [
    "planted_pairs",
    "ScreenScore",
    "ScreenEvaluation",
    "evaluate_screen",
    "evaluation_dates",
    "read_truth",
    "evaluate_screen_files",
]


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
    store: MarketStore,
    truth: dict,
    dates: Sequence[str | dt.date],
    config: ScreenConfig | None = None,
    progress: Progress = NULL_PROGRESS,
) -> ScreenEvaluation:
    """Run the screen at each date and score its top-k against the truth."""
    cfg = config or ScreenConfig()
    allp = planted_pairs(truth)
    scores = []
    with progress.task("screening dates", total=len(dates)) as task:
        for d in dates:
            scores.append(_score(store, truth, allp, d, cfg))
            task.advance()
    return ScreenEvaluation(cfg.top_k, tuple(scores))


def _score(
    store: MarketStore, truth: dict, allp: frozenset[tuple[str, str]], d: str | dt.date, cfg: ScreenConfig
) -> ScreenScore:
    res = screen_store(store, d, config=cfg)
    top = tuple((c.ticker_a, c.ticker_b) for c in res.candidates)
    active = planted_pairs(truth, d)
    pv = {(p.ticker_a, p.ticker_b): (p.pvalue if np.isfinite(p.pvalue) else 1.0) for p in res.pairs}
    pos = np.array([v for k, v in pv.items() if k in active])
    neg = np.array([v for k, v in pv.items() if k not in allp])
    return ScreenScore(
        to_date(d),
        top,
        sum(p in allp for p in top),
        sum(p in active for p in top),
        len(active),
        _auc(pos, neg),
    )


def read_truth(path: str | Path) -> dict:
    """The ``truth.json`` written with a synthetic market; a missing or malformed file is an
    :class:`InputError` naming it."""
    p = Path(path)
    try:
        truth = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"truth file {p}: cannot read it ({exc.strerror or exc})") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"truth file {p}: not valid JSON at line {exc.lineno} ({exc.msg})") from None
    pairs = truth.get("pairs") if isinstance(truth, dict) else None
    if not isinstance(pairs, list) or not all(isinstance(x, dict) and "pair" in x for x in pairs):
        raise InputError(
            f"truth file {p}: expected an object with a 'pairs' list of {{'pair': [A, B], ...}} "
            "(the truth.json written by `localfin data synth`)"
        )
    return truth


def evaluate_screen_files(
    store_path: str | Path,
    truth_path: str | Path,
    *,
    n_dates: int = 50,
    first_session: int = 504,
    config: ScreenConfig | None = None,
    progress: Progress = NULL_PROGRESS,
) -> ScreenEvaluation:
    """:func:`evaluate_screen` over ``n_dates`` evenly spaced sessions of an existing store,
    against a ``truth.json`` file."""
    if n_dates < 1:
        raise InputError(f"n_dates={n_dates}; allowed: >= 1")
    truth = read_truth(truth_path)
    with MarketStore(store_path, create=False) as db:
        n_cal = len(db.calendar())
        if not 0 <= first_session < n_cal:
            raise InputError(f"first_session={first_session}; allowed: 0..{n_cal - 1} (the store's sessions)")
        days = evaluation_dates(db, n_dates, first_session=first_session)
        return evaluate_screen(db, truth, days, config, progress)
