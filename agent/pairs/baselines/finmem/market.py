"""What FinMem reads of one window, loaded once and shared by its runs: the pair the screen
picks at test step 001, its prices, news and filings by session, and the companies."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from agent.pairs.baselines.finmem.config import FinMemConfig
from agent.pairs.baselines.finmem.texts import FILING_LAYER
from agent.pairs.market.masking import StepCalendar
from localfin.errors import ConfigError

if TYPE_CHECKING:  # the screen and the baselines' common code load numba: imported where used
    from agent.data.schema import Company, Filing, NewsItem
    from agent.data.store import MarketStore
    from agent.pairs.baselines.common import PairSeries, Selection, Window
    from agent.pairs.baselines.runner import RunSettings

__all__ = ["FinMemMarket", "prepare_finmem", "filings_summary", "say_filings"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class FinMemMarket:
    """What every FinMem run of one window reads, loaded once and shared (read-only).

    ``series`` runs from the pool calendar's first session to the test end; ``train_idx`` /
    ``test_idx`` are the sessions of each window as indices into it; ``news`` maps an index to
    the items of both legs dated after the previous pool session and up to it; ``filings`` maps
    an index to the filings of both legs that enter memory there (filed on or after the previous
    session and before this one; with ``prior_filings`` ``latest`` the first session also takes
    each leg's latest 10-Q and 10-K filed earlier); ``calendar`` labels the sessions from the
    first training session to the test end."""

    pool: tuple[str, ...]
    train: Window
    test: Window
    selection: Selection
    settings: RunSettings
    series: PairSeries | None = None
    betas: np.ndarray | None = None
    train_idx: tuple[int, ...] = ()
    test_idx: tuple[int, ...] = ()
    news: dict[int, tuple[NewsItem, ...]] = field(default_factory=dict)
    companies: dict[str, Company] = field(default_factory=dict)
    calendar: Any = None
    filings: dict[int, tuple[Filing, ...]] = field(default_factory=dict)
    #: filings of each leg in the store (any date), to say when a store holds none
    filings_in_store: dict[str, int] = field(default_factory=dict)

    def label(self, index: int) -> str:
        return self.calendar.label(self.series.dates[index].item())  # type: ignore[union-attr]


def prepare_finmem(
    store: MarketStore,
    *,
    pool: Sequence[str],
    train: Window | tuple[object, object],
    test: Window | tuple[object, object],
    settings: RunSettings | None = None,
    prior_filings: str = "none",
) -> FinMemMarket:
    """Select the pair at test step 001 and read its prices, news, filings and companies once
    (``prior_filings``: :data:`PRIOR_FILINGS`)."""
    from agent.pairs.baselines.common import as_window, load_pair, pair_betas, select_pair
    from agent.pairs.baselines.runner import RunSettings

    cfg = settings or RunSettings()
    pool_t = tuple(sorted(set(pool)))
    if len(pool_t) < 2 or len(pool_t) != len(pool):
        raise ConfigError(f"pool={list(pool)}; allowed: at least 2 distinct tickers")
    train_w, test_w = as_window(train, "train"), as_window(test, "test")
    sel = select_pair(store, pool_t, test_w, cfg.screen)
    if train_w.end >= sel.session:
        raise ConfigError(
            f"train window {train_w.label()} must end before step 001 of the test window ({sel.session})"
        )
    if sel.candidate is None:
        log.info("no candidate pair at %s in pool %s: %s", sel.session, list(pool_t), sel.reason)
        return FinMemMarket(pool_t, train_w, test_w, sel, cfg)
    series = load_pair(store, pool_t, sel, cfg.screen.price_field)
    dates = series.dates
    lo = int(np.searchsorted(dates, np.datetime64(train_w.start, "D"), side="left"))
    hi = series.index_of(train_w.end)
    train_idx = tuple(range(lo, hi + 1))
    if len(train_idx) < 2:
        raise ConfigError(
            f"train window {train_w.label()} holds {len(train_idx)} session(s) of the pool calendar; "
            "allowed: >= 2"
        )
    test_idx = tuple(range(series.first, len(dates)))
    a, b = series.ticker_a, series.ticker_b
    first_day = dates[max(lo - 1, 0)].item()
    raw = {t: store.news_window(t, first_day, dates[-1].item()) for t in (a, b)}
    news: dict[int, tuple[NewsItem, ...]] = {}
    for g in train_idx + test_idx:
        prev = dates[g - 1].item() if g > 0 else None
        day = dates[g].item()
        news[g] = tuple(
            n for t in (a, b) for n in raw[t] if n.date <= day and (prev is None or n.date > prev)
        )
    if not any(news.values()):
        log.warning(
            "no news for %s or %s in %s..%s: FinMem's short layer stays empty; its memory holds the "
            "pair's filings and its own reflections",
            a,
            b,
            dates[lo].item(),
            dates[-1].item(),
        )
    filings, in_store = _filings(store, (a, b), dates, train_idx + test_idx, prior_filings)
    calendar = StepCalendar.from_sessions([d.item() for d in dates[lo:]])
    return FinMemMarket(
        pool_t,
        train_w,
        test_w,
        sel,
        cfg,
        series,
        pair_betas(series, cfg.beta_window),
        train_idx,
        test_idx,
        news,
        store.companies([a, b]),
        calendar,
        filings,
        in_store,
    )


def _filings(
    store: MarketStore, legs: Sequence[str], dates: np.ndarray, sessions: Sequence[int], prior: str
) -> tuple[dict[int, tuple[Filing, ...]], dict[str, int]]:
    """Session index -> the filings of ``legs`` entering memory there (``FinMemMarket``), and
    how many filings of each leg the store holds at all. A filing dated on a session enters at
    the next one; one dated after the last session never enters."""
    first, last = sessions[0], sessions[-1]
    days = [d.item() for d in dates]
    out: dict[int, list[Filing]] = {}
    in_store = {}
    for t in legs:
        every = [f for f in store.filings(t) if f.document_type in FILING_LAYER]
        in_store[t] = len(every)
        for f in every:
            if f.date < days[first]:
                continue
            g = int(np.searchsorted(dates, np.datetime64(f.date, "D"), side="right"))
            if first <= g <= last:
                out.setdefault(g, []).append(f)
        if prior == "latest":
            for form in FILING_LAYER:
                before = [f for f in every if f.document_type == form and f.date < days[first]]
                if before:
                    out.setdefault(first, []).insert(0, max(before, key=lambda f: f.date))
    return {
        g: tuple(sorted(v, key=lambda f: (f.date, f.ticker, f.document_type))) for g, v in out.items()
    }, in_store


def filings_summary(market: FinMemMarket, config: FinMemConfig) -> dict[str, Any]:
    """What FinMem's mid and long layers were filled from: the filings of each form entering
    memory over the run, the section and cut, and, where the store holds no filings of a leg, a
    note saying so (its mid and long layers then hold only items that rose from short)."""
    counts = {
        form: sum(f.document_type == form for v in market.filings.values() for f in v)
        for form in FILING_LAYER
    }
    out: dict[str, Any] = {
        **counts,
        "section": config.filing_section,
        "max_chars": config.filing_max_chars,
        "prior_filings": config.prior_filings,
        "in_store": dict(market.filings_in_store),
    }
    missing = [t for t, n in market.filings_in_store.items() if not n]
    if market.series is not None and missing:
        out["note"] = (
            f"the store holds no 10-Q or 10-K filings of {', '.join(missing)}: FinMem's mid and long layers "
            "hold only items that rose from short (no filing text is made up)"
        )
    elif market.series is not None and not any(counts.values()):
        out["note"] = (
            "no filing of the pair was filed within the run: FinMem's mid and long layers start empty"
        )
    return out


def say_filings(market: FinMemMarket, config: FinMemConfig) -> None:
    """Log, once per window, a store without filings for the pair (the run's summary says so too)."""
    note = filings_summary(market, config).get("note")
    if note:
        log.warning("FinMem on %s: %s", market.selection.pair, note)
