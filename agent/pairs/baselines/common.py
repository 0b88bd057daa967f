"""What every pair baseline shares: windows, the pair selected at step 001, its price history on
the pool calendar, the tradable mask, the rolling betas and the spread signals.

Timing follows the same rules as the Moira agent does: the test window's sessions are the pool's
union calendar in [start, end]; its first session is step 001; the pair is the screen's top
candidate at step 001 (data up to its close, :func:`agent.pairs.screen.causal.screen_store`); the action
decided at session t is held to close t+1 and settled there, so N sessions give N-1 transitions.

A :class:`PairSeries` holds the pair's closes on the pool calendar from the calendar's first
session up to the test window's last one. Loading the whole history (a few thousand rows) keeps
every rolling statistic independent of how much history a caller asked for, so one baseline run
alone and the same baseline inside :func:`agent.pairs.baselines.runner.run_all` agree to the bit.
Nothing a decision at t reads comes from after t: every signal below is a trailing window ending at t.

Gaps (a leg without a close on a session of the pool calendar): the spread, the z-scores, the
rolling beta and the rolling half-life are computed on the pair's common sessions (both legs
priced) and are NaN on the other sessions. A session where a leg has no close (or, under the
``beta`` exposure, where the rolling beta is undefined) is not *tradable*: no position is held
from it, and :mod:`agent.pairs.baselines.ledger` settles it as FLAT with a note.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from agent.data.schema import to_date
from agent.data.store import MarketStore
from agent.pairs.market.settlement import EXPOSURES, causal_betas
from agent.pairs.market.tape import PriceTape, Quote, open_on_field
from agent.pairs.screen.causal import PairCandidate, ScreenConfig, screen_store
from localfin.errors import ConfigError, InputError

__all__ = [
    "Window",
    "Selection",
    "PairSeries",
    "as_window",
    "window_sessions",
    "select_pair",
    "load_pair",
    "load_legs",
    "priced",
    "pair_betas",
    "tradable",
    "spread_zscores",
    "rolling_half_life",
    "check_exposure",
]


@dataclass(frozen=True)
class Window:
    """An inclusive range of calendar dates (its sessions come from the pool calendar)."""

    start: dt.date
    end: dt.date

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", to_date(self.start))
        object.__setattr__(self, "end", to_date(self.end))
        if self.end < self.start:
            raise ConfigError(
                f"window end {self.end} is before its start {self.start}; allowed: end >= start"
            )

    def label(self) -> str:
        return f"{self.start.isoformat()}..{self.end.isoformat()}"


def as_window(value: Window | tuple[object, object], name: str) -> Window:
    """A :class:`Window` from a window or a (start, end) pair of ISO strings / dates."""
    if isinstance(value, Window):
        return value
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return Window(*value)  # type: ignore[arg-type]
    raise ConfigError(f"{name}={value!r}; allowed: a Window or a (start, end) pair of dates")


def check_exposure(exposure: str) -> str:
    if exposure not in EXPOSURES:
        raise ConfigError(f"exposure={exposure!r}; allowed: {', '.join(EXPOSURES)}")
    return exposure


def window_sessions(store: MarketStore, pool: tuple[str, ...], test: Window) -> np.ndarray:
    """The test window's sessions (datetime64[D]): the pool's union calendar in [start, end]."""
    cal = store.calendar(test.start, test.end, tickers=list(pool))
    if len(cal) < 2:
        raise InputError(
            f"test window {test.label()} has {len(cal)} session(s) of the pool {list(pool)} in the store; "
            "allowed: at least 2 (one settled transition)"
        )
    return cal


@dataclass(frozen=True)
class Selection:
    """The pair chosen at step 001: the screen's top candidate, or None when the screen had none.

    ``sessions`` are the test window's sessions (step 001 first); ``n_candidates`` how many the
    screen returned; ``reason`` says why there is no pair (empty when there is one)."""

    session: dt.date
    sessions: np.ndarray
    candidate: PairCandidate | None
    n_candidates: int
    reason: str = ""
    #: the last session of the screen's price window (the audit checks it against ``session``)
    screen_end: dt.date | None = None

    @property
    def pair(self) -> str:
        c = self.candidate
        return f"{c.ticker_a}/{c.ticker_b}" if c else ""

    def describe(self) -> dict[str, Any]:
        """The selection as a run's ``metrics.json`` extra records it (session, pair, screen)."""
        c = self.candidate
        screen = None
        if c is not None:
            screen = {
                "pvalue": c.pvalue,
                "hedge_ratio": c.hedge_ratio,
                "half_life": c.half_life,
                "z_trade": c.z_trade,
                "n_obs": c.n_obs,
                "n_candidates": self.n_candidates,
            }
        return {
            "selection_session": self.session.isoformat(),
            "pair": self.pair,
            "no_candidate": c is None,
            "no_candidate_reason": self.reason,
            "screen": screen,
        }


def select_pair(
    store: MarketStore, pool: tuple[str, ...], test: Window, screen: ScreenConfig | None = None
) -> Selection:
    """Screen the pool at step 001 (its close included, nothing after) and keep the top candidate."""
    sessions = window_sessions(store, pool, test)
    first = sessions[0].item()
    res = screen_store(store, first, pool=pool, config=screen)
    if not res.candidates:
        reasons = sorted({p.reason for p in res.pairs if p.reason})
        why = "no eligible pair" + (f" ({'; '.join(reasons[:3])})" if reasons else "")
        return Selection(first, sessions, None, 0, why, res.session)
    return Selection(first, sessions, res.candidates[0], len(res.candidates), screen_end=res.session)


@dataclass(frozen=True, eq=False)
class PairSeries:
    """Closes of the selected pair (A, B as the screen orients them) on the pool calendar.

    ``dates`` run from the pool calendar's first session to the test window's last; ``first`` is
    the index of step 001; NaN marks a session a leg lacks. ``hedge_ratio`` and ``half_life`` are
    the screen's at selection (log A = alpha + hedge_ratio log B over the screen window).
    ``open_a``/``open_b``: the legs' opens on the closes' scale (``execution = "next_open"``;
    NaN where none, and all NaN when not given)."""

    ticker_a: str
    ticker_b: str
    dates: np.ndarray
    price_a: np.ndarray
    price_b: np.ndarray
    first: int
    hedge_ratio: float
    half_life: float
    open_a: np.ndarray | None = None
    open_b: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.dates)
        if self.price_a.shape != (n,) or self.price_b.shape != (n,):
            raise ConfigError(
                f"price_a {self.price_a.shape} and price_b {self.price_b.shape} must both have shape ({n},)"
            )
        for name in ("open_a", "open_b"):
            v = getattr(self, name)
            if v is not None and v.shape != (n,):
                raise ConfigError(f"{name} {v.shape} must have shape ({n},)")
        if not 0 <= self.first < n - 1:
            raise ConfigError(f"first={self.first}; allowed: 0 <= first < {n - 1} (at least one transition)")
        if not math.isfinite(self.hedge_ratio):
            raise ConfigError(f"hedge_ratio={self.hedge_ratio}; allowed: a finite number")

    @property
    def pair(self) -> str:
        return f"{self.ticker_a}/{self.ticker_b}"

    @property
    def n_sessions(self) -> int:
        """Sessions of the test window (step 001 to the last)."""
        return len(self.dates) - self.first

    def index_of(self, day: dt.date | str) -> int:
        """Index of the last session on or before ``day`` (-1 when none)."""
        return int(np.searchsorted(self.dates, np.datetime64(to_date(day), "D"), side="right")) - 1

    def quote(self, ticker: str, i: int) -> Quote:
        """A leg over the transition from session ``i`` to ``i + 1`` (close, next open, next close)."""
        if ticker == self.ticker_a:
            close, opens = self.price_a, self.open_a
        elif ticker == self.ticker_b:
            close, opens = self.price_b, self.open_b
        else:
            raise ConfigError(f"ticker {ticker!r} is not a leg of {self.pair}")
        nxt = float(opens[i + 1]) if opens is not None else math.nan
        return Quote(float(close[i]), nxt, float(close[i + 1]))

    def price_tape(self, first: int | None = None) -> PriceTape:
        """The legs' closes and opens from session ``first`` (default step 001) to the last."""
        lo = self.first if first is None else first
        none = np.full(len(self.dates), np.nan)
        legs = (
            (self.ticker_a, self.price_a, self.open_a if self.open_a is not None else none),
            (self.ticker_b, self.price_b, self.open_b if self.open_b is not None else none),
        )
        return PriceTape.from_rows(
            (str(self.dates[i]), t, float(c[i]), float(o[i]))
            for t, c, o in legs
            for i in range(lo, len(self.dates))
        )


def load_pair(
    store: MarketStore, pool: tuple[str, ...], selection: Selection, field: str = "close"
) -> PairSeries:
    """The selected pair's prices (``field``: the screen's ``price_field``, split-adjusted closes by
    default, dividends not included) on the pool calendar, from its first session to the test end."""
    c = selection.candidate
    if c is None:
        raise ConfigError(f"no pair was selected on {selection.session}: {selection.reason}")
    return load_legs(
        store,
        pool,
        (c.ticker_a, c.ticker_b),
        selection.sessions[0].item(),
        selection.sessions[-1].item(),
        field,
        hedge_ratio=float(c.hedge_ratio),
        half_life=float(c.half_life),
    )


def load_legs(
    store: MarketStore,
    pool: tuple[str, ...],
    legs: tuple[str, str],
    first: dt.date,
    end: dt.date,
    field: str = "close",
    *,
    hedge_ratio: float = 0.0,
    half_life: float = math.nan,
) -> PairSeries:
    """The legs' ``field`` prices and opens on the pool calendar up to ``end``, step 001 at
    ``first`` (what :func:`load_pair` loads for a selected pair)."""
    a, b = legs
    cal = store.calendar(end=end, tickers=list(pool))
    h = store.prices([a, b], end=end, field=field)
    o = open_on_field(store, [a, b], end=end, field=field)
    pos = np.searchsorted(cal, h.dates)
    pa, pb = np.full(len(cal), np.nan), np.full(len(cal), np.nan)
    pa[pos], pb[pos] = h.values[:, 0], h.values[:, 1]
    oa, ob = np.full(len(cal), np.nan), np.full(len(cal), np.nan)
    oa[pos], ob[pos] = o.values[:, 0], o.values[:, 1]
    f = int(np.searchsorted(cal, np.datetime64(first, "D")))
    return PairSeries(a, b, cal, pa, pb, f, hedge_ratio, half_life, oa, ob)


def priced(series: PairSeries) -> np.ndarray:
    """Sessions where both legs have a positive close."""
    with np.errstate(invalid="ignore"):
        return (
            np.isfinite(series.price_a)
            & np.isfinite(series.price_b)
            & (series.price_a > 0)
            & (series.price_b > 0)
        )


def _on_common(series: PairSeries, values: np.ndarray) -> np.ndarray:
    """Scatter values computed on the common sessions back onto the calendar (NaN elsewhere)."""
    out = np.full(len(series.dates), np.nan)
    out[priced(series)] = values
    return out


def pair_betas(series: PairSeries, window: int = 20) -> np.ndarray:
    """Rolling OLS slope of log A on log B over the last ``window`` common sessions up to t
    (:func:`agent.pairs.market.settlement.causal_betas`), NaN where t is not a common session."""
    ok = priced(series)
    if int(ok.sum()) < window:
        return np.full(len(series.dates), np.nan)
    la, lb = np.log(series.price_a[ok]), np.log(series.price_b[ok])
    return _on_common(series, causal_betas(la, lb, window))


def tradable(series: PairSeries, exposure: str, betas: np.ndarray | None = None) -> np.ndarray:
    """Sessions from which a position may be held: both legs priced and, under ``beta``, a finite
    rolling beta (``betas`` from :func:`pair_betas`)."""
    ok = priced(series)
    if check_exposure(exposure) == "beta":
        if betas is None:
            raise ConfigError("betas are required under exposure 'beta'")
        ok = ok & np.isfinite(betas)
    return ok


def spread_zscores(series: PairSeries, window: int) -> np.ndarray:
    """z of the spread log A - hedge_ratio log B at each common session against its trailing
    ``window`` common sessions (mean and std ddof 1, the window ending at and including t);
    NaN before enough history, on constant windows and off the common sessions.

    The hedge ratio is the screen's at selection, fixed for the window (the formation-period
    hedge of classic Engle-Granger pair trading); a constant alpha cancels in the z."""
    from kernels import rolling_zscore

    ok = priced(series)
    s = np.log(series.price_a[ok]) - series.hedge_ratio * np.log(series.price_b[ok])
    if len(s) < window:
        return np.full(len(series.dates), np.nan)
    return _on_common(series, rolling_zscore(s, window))


def rolling_half_life(series: PairSeries, window: int, start: int = 0) -> np.ndarray:
    """Half-life (sessions) of the same spread over the trailing ``window`` common sessions up to
    each t >= ``start`` (:func:`kernels.half_life`: +inf without reversion); NaN elsewhere."""
    from kernels import half_life

    ok = priced(series)
    idx = np.flatnonzero(ok)
    s = np.log(series.price_a[ok]) - series.hedge_ratio * np.log(series.price_b[ok])
    out = np.full(len(series.dates), np.nan)
    for j in range(window - 1, len(idx)):
        if idx[j] >= start:
            out[idx[j]] = half_life(s[j - window + 1 : j + 1])
    return out
