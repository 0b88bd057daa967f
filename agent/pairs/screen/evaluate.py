"""Evaluating the screen: against the synthetic market's ground truth (truth.json), and the
candidate counts of a real pool over monthly selection dates (``localfin pairs screen-sweep``)."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agent.data.schema import to_date
from agent.data.store import MarketStore
from agent.pairs.screen.causal import ScreenConfig, pair_key, read_prices, screen_store
from agent.pairs.screen.rolling import RollingScreen
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
    "month_end_sessions",
    "DateCount",
    "PoolSweep",
    "sweep_pool",
    "sweep_store",
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


# -- candidate counts over selection dates -------------------------------------------------------


def month_end_sessions(calendar: np.ndarray, years: Sequence[int]) -> list[dt.date]:
    """The last session of each calendar month of ``years`` found in ``calendar``
    (datetime64[D], sorted): the monthly selection dates."""
    cal = np.asarray(calendar, dtype="datetime64[D]")
    months = cal.astype("datetime64[M]")
    last = np.flatnonzero(np.append(months[1:] != months[:-1], True))
    wanted = set(years)
    return [cal[i].item() for i in last if cal[i].item().year in wanted]


@dataclass(frozen=True)
class DateCount:
    """One selection date: the session screened, pairs tested, candidates kept, and every
    excluded pair with its reason (``"A/B"``, reason)."""

    date: dt.date
    session: dt.date
    n_pairs: int
    n_candidates: int
    excluded: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class PoolSweep:
    """The screen of one pool on each of ``counts``' dates."""

    name: str
    pool: tuple[str, ...]
    config: ScreenConfig
    counts: tuple[DateCount, ...]

    def summary(self) -> dict[str, object]:
        """min / median / max candidates, the dates below ``top_k`` and the exclusions by reason
        (the reason's leading words; each with its (date, pair) count, pairs and first/last date)."""
        n = np.array([c.n_candidates for c in self.counts])
        by_reason: dict[str, list[tuple[dt.date, str]]] = {}
        for c in self.counts:
            for pair, reason in c.excluded:
                by_reason.setdefault(reason.split(":")[0], []).append((c.date, pair))
        return {
            "pool": self.name,
            "tickers": list(self.pool),
            "dates": len(self.counts),
            "first": str(self.counts[0].date) if self.counts else None,
            "last": str(self.counts[-1].date) if self.counts else None,
            "pairs": max((c.n_pairs for c in self.counts), default=0),
            "candidates_min": int(n.min()) if n.size else 0,
            "candidates_median": float(np.median(n)) if n.size else 0.0,
            "candidates_max": int(n.max()) if n.size else 0,
            "dates_below_top_k": [str(c.date) for c in self.counts if c.n_candidates < self.config.top_k],
            "excluded": {
                reason: {
                    "date_pairs": len(hits),
                    "pairs": dict(sorted(Counter(p for _, p in hits).items())),
                    "first": str(min(d for d, _ in hits)),
                    "last": str(max(d for d, _ in hits)),
                }
                for reason, hits in sorted(by_reason.items())
            },
        }


def sweep_pool(
    store: MarketStore,
    name: str,
    pool: Sequence[str],
    dates: Sequence[dt.date],
    config: ScreenConfig | None = None,
    progress: Progress = NULL_PROGRESS,
) -> PoolSweep:
    """Screen ``pool`` at each of ``dates`` (each screen sees data up to its date only: the
    history is read once and cut at every date; the dates are screened in increasing order by
    one :class:`~agent.pairs.screen.rolling.RollingScreen`, equal to
    :func:`~agent.pairs.screen.causal.screen_pairs` at each date)."""
    cfg = config or ScreenConfig()
    tickers = tuple(sorted({t.strip().upper() for t in pool}))
    if not dates:
        return PoolSweep(name, tickers, cfg, ())
    history = read_prices(store, tickers, end=max(dates), config=cfg)
    first = history.dates[0].item() if history.n_sessions else None
    out = []
    rolling = RollingScreen(history, cfg)
    with progress.task(f"screening {name} ({len(tickers)} tickers)", total=len(dates)) as task:
        for day in dates:
            if first is None or day < first:
                raise InputError(f"pool {name}: no price on or before {day} (history starts {first})")
            res = rolling.screen(day)
            excluded = tuple(
                (f"{p.ticker_a}/{p.ticker_b}", p.reason) for p in res.pairs if not p.eligible and p.reason
            )
            out.append(DateCount(day, res.session, len(res.pairs), len(res.candidates), excluded))
            task.advance()
    return PoolSweep(name, tickers, cfg, tuple(out))


def sweep_store(
    store_path: str | Path,
    pools: Mapping[str, Sequence[str]],
    years: Sequence[int],
    config: ScreenConfig | None = None,
    progress: Progress = NULL_PROGRESS,
) -> list[PoolSweep]:
    """:func:`sweep_pool` of every pool on the month-end sessions of ``years`` (of that pool's
    own calendar) in an existing store."""
    out = []
    with MarketStore(store_path, create=False) as db:
        for name, tickers in pools.items():
            cal = db.calendar(tickers=[t.strip().upper() for t in tickers])
            days = month_end_sessions(cal, years)
            if not days:
                raise InputError(f"pool {name}: no session in the years {min(years)}-{max(years)}")
            out.append(sweep_pool(db, name, tickers, days, config, progress))
    return out
