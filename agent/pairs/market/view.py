"""The market as one experiment sees it: the pool's prices, news and companies read once from the
store, with accessors that take the decision session and never return anything after it.

Causality is a property of the accessors: :meth:`MarketView.pair_state` and
:meth:`MarketView.news_until` cut at the session index they are given, :meth:`MarketView.screen`
calls the screen, which cuts the history at its date. Only the backtester asks for the prices
of t+1, to settle a decision made at t (:meth:`MarketView.price`, :meth:`MarketView.quote`).
Results are cached per (pair, session) so that the runs of one experiment share the work.
"""

from __future__ import annotations

import bisect
import datetime as dt
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from agent.data.schema import Company, NewsItem, to_date
from agent.pairs.market.tape import PriceTape, Quote, open_on_field
from agent.pairs.screen.causal import ScreenConfig, ScreenResult, read_prices
from agent.pairs.screen.rolling import RollingScreen
from localfin.errors import ConfigError, InputError

__all__ = ["PairState", "MarketView", "spread_state_label"]


def spread_state_label(z: float, far: float = 2.0, near: float = 1.0) -> str:
    """Words for the trading-window z of the spread log A - alpha - beta log B: ``far`` and
    ``near`` are the |z| at which it is far from / away from its mean (the settings
    ``prompt.spread_far_z``, ``prompt.spread_near_z``)."""
    if not math.isfinite(z):
        return "unknown"
    if z >= far:
        return "far above its mean: A rich against B"
    if z >= near:
        return "above its mean: A somewhat rich against B"
    if z <= -far:
        return "far below its mean: A cheap against B"
    if z <= -near:
        return "below its mean: A somewhat cheap against B"
    return "near its mean"


@dataclass(frozen=True)
class PairState:
    """The active pair at the close of session ``index`` (prices in the store's units).

    alpha, beta: OLS of log A on log B over the screen lookback ending at the session;
    z_long: z of today's spread over that window; z_trade: over the last ``z_window`` sessions;
    price_*: closes today; delta_*: today's close minus the previous session's; change_*: the
    same as a fraction.
    """

    index: int
    alpha: float
    beta: float
    z_long: float
    z_trade: float
    price_a: float
    price_b: float
    delta_a: float
    delta_b: float
    change_a: float
    change_b: float


class MarketView:
    """Read-only market data of one experiment.

    Args:
        store: an open :class:`agent.data.store.MarketStore`.
        pool: tickers (empty: every ticker with prices up to ``end``).
        screen: the screen settings (its ``price_field`` is also the settlement price).
        end: the last session any run may use (the test window's end).
    """

    def __init__(self, store: object, pool: Sequence[str], screen: ScreenConfig, *, end: dt.date) -> None:
        tickers = tuple(sorted(pool)) if pool else store.tickers(until=end)  # type: ignore[attr-defined]
        if len(tickers) < 2:
            raise ConfigError(f"experiment.pool has {len(tickers)} tickers in the store; allowed: >= 2")
        self.screen_config = screen
        self.pool = tickers
        self.history = read_prices(store, tickers, end=end, config=screen)
        # opens on the settlement price's scale, for execution = "next_open" (NaN where none)
        opens = open_on_field(store, tickers, end=end, field=screen.price_field)
        if opens.values.shape != self.history.values.shape:
            raise InputError(f"open prices of {list(tickers)} do not lie on the closes' calendar")
        self._opens = opens.values
        self.dates = [d.item() for d in self.history.dates]
        self._pos = {d: i for i, d in enumerate(self.dates)}
        self._col = {t: k for k, t in enumerate(self.history.tickers)}
        with np.errstate(invalid="ignore", divide="ignore"):
            self._logp = np.log(self.history.values)
        self.companies: dict[str, Company] = store.companies(tickers)  # type: ignore[attr-defined]
        first = self.dates[0] if self.dates else end
        self._news: dict[str, list[NewsItem]] = {
            t: store.news_window(t, first, end)  # type: ignore[attr-defined]
            for t in tickers
        }
        self._news_dates = {t: [n.date for n in items] for t, items in self._news.items()}
        self._screens: dict[tuple[dt.date, frozenset[tuple[str, str]]], ScreenResult] = {}
        self._rolling = RollingScreen(self.history, screen, companies=self.companies)
        self._states: dict[tuple[str, str, int], PairState] = {}

    # -- calendar ------------------------------------------------------------------------------
    def sessions(self, start: dt.date, end: dt.date) -> list[dt.date]:
        """Sessions of the pool calendar in [start, end]."""
        return [d for d in self.dates if start <= d <= end]

    def index(self, day: dt.date | str) -> int:
        d = to_date(day)
        try:
            return self._pos[d]
        except KeyError:
            raise InputError(f"{d} is not a session of the pool calendar") from None

    # -- data up to a session ------------------------------------------------------------------
    def screen(self, day: dt.date, exclude: Collection[tuple[str, str]] = ()) -> ScreenResult:
        """The causal screen at ``day`` (cached per date and exclusion set). A run's re-screens
        come in date order, so each one moves the previous one's Engle-Granger sums forward
        (:class:`~agent.pairs.screen.rolling.RollingScreen`, equal to a screen of that date alone)."""
        key = (day, frozenset(tuple(sorted(p)) for p in exclude))
        if key not in self._screens:
            self._screens[key] = self._rolling.screen(day, exclude=exclude)
        return self._screens[key]

    def log_prices(self, ticker: str, upto: int) -> np.ndarray:
        """Log prices of ``ticker`` for sessions 0..upto (NaN where it did not trade)."""
        return self._logp[: upto + 1, self._col[ticker]]

    def pair_state(self, a: str, b: str, upto: int) -> PairState:
        """The spread state of (A, B) at the close of session ``upto`` (data up to it only)."""
        key = (a, b, upto)
        if key in self._states:
            return self._states[key]
        from kernels import ols_hedge, spread_zscore

        cfg = self.screen_config
        y, x = self.log_prices(a, upto), self.log_prices(b, upto)
        both = np.isfinite(y) & np.isfinite(x)
        idx = np.flatnonzero(both)[-cfg.lookback :]
        nan = math.nan
        alpha = beta = z_long = z_trade = nan
        if len(idx) >= max(30, cfg.z_window):
            alpha, beta = ols_hedge(y[idx], x[idx])
            if math.isfinite(beta):
                spread = y[idx] - alpha - beta * x[idx]
                z_long = float(spread_zscore(spread))
                z_trade = float(spread_zscore(spread, cfg.z_window))
        pa, pb = self.price(a, upto), self.price(b, upto)
        qa = self.price(a, upto - 1) if upto > 0 else nan
        qb = self.price(b, upto - 1) if upto > 0 else nan
        state = PairState(
            upto,
            float(alpha),
            float(beta),
            z_long,
            z_trade,
            pa,
            pb,
            pa - qa,
            pb - qb,
            pa / qa - 1.0 if qa and math.isfinite(qa) else nan,
            pb / qb - 1.0 if qb and math.isfinite(qb) else nan,
        )
        self._states[key] = state
        return state

    def news_until(self, ticker: str, first: dt.date, upto: int) -> list[NewsItem]:
        """News of ``ticker`` dated in [first, session ``upto``], oldest first."""
        last = self.dates[upto]
        dates = self._news_dates.get(ticker, [])
        lo = bisect.bisect_left(dates, first)
        hi = bisect.bisect_right(dates, last)
        return self._news.get(ticker, [])[lo:hi]

    # -- settlement (the backtester only) ------------------------------------------------------
    def price(self, ticker: str, i: int) -> float:
        """The settlement price of ``ticker`` at session ``i`` (NaN where it did not trade)."""
        return float(self.history.values[i, self._col[ticker]])

    def open_price(self, ticker: str, i: int) -> float:
        """The open of ``ticker`` at session ``i`` on the settlement price's scale (NaN: none)."""
        return float(self._opens[i, self._col[ticker]])

    def quote(self, ticker: str, i: int) -> Quote:
        """``ticker`` over the transition from session ``i`` to ``i + 1`` (close, next open, next
        close): what settling a decision taken at the close of ``i`` may read."""
        return Quote(self.price(ticker, i), self.open_price(ticker, i + 1), self.price(ticker, i + 1))

    def missing_opens(self, sessions: Sequence[dt.date]) -> list[tuple[str, str]]:
        """(ticker, session) of every pool ticker with a close but no open on ``sessions``
        (what ``execution = "next_open"`` cannot fill on)."""
        rows = [self.index(d) for d in sessions]
        close, opens = self.history.values[rows], self._opens[rows]
        with np.errstate(invalid="ignore"):
            bad = np.isfinite(close) & ~(np.isfinite(opens) & (opens > 0))
        return [(self.history.tickers[k], sessions[i].isoformat()) for i, k in zip(*np.nonzero(bad))]

    def price_tape(self, tickers: Collection[str], sessions: Sequence[dt.date]) -> PriceTape:
        """Closes and opens of ``tickers`` on ``sessions`` (a run's ``prices.parquet``)."""
        ticks = tuple(sorted(set(tickers)))
        rows = [self.index(d) for d in sessions]
        cols = [self._col[t] for t in ticks]
        return PriceTape(
            tuple(d.isoformat() for d in sessions),
            ticks,
            self.history.values[np.ix_(rows, cols)].astype(np.float64),
            self._opens[np.ix_(rows, cols)].astype(np.float64),
        )
