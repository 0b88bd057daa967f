"""The causal pair screen (the paper's §4.1 and Appendix A.1).

For a selection date and a pool, every pair (A, B) with A < B alphabetically is tested on the
log prices of the ``lookback`` sessions ending at that date (2,520, the paper's "causal 10-year
window"; fewer where history is shorter, down to ``min_sessions``), using only data up to and
including that date:

* Engle-Granger: OLS of log A on log B with a constant (beta = hedge ratio), ADF without
  constant on the residual spread, lag by AIC up to ``maxlag``, MacKinnon p-value
  (:func:`kernels.engle_granger_pairs` / :func:`kernels.engle_granger`);
* half-life (sessions) of the spread from regressing its change on its lagged level
  (:func:`kernels.half_life`), long-horizon z of the latest spread over the whole window and
  trading-window z over the last ``z_window`` sessions (:func:`kernels.spread_zscore`);
* correlation of the legs' daily log returns over the window (:func:`kernels.rolling_corr`).

Pairs are ranked by p-value and the first ``top_k`` are the candidates shown to the
pair-selection prompt, with their half-life, hedge ratio, both z-scores and correlation as
information: the paper asks the *model* to weigh "a reasonable mean-reversion speed", so the
half-life is not a filter. Only pairs that cannot be traded as a spread are excluded, each
with its reason (:attr:`PairStats.reason`):

* a leg has no price on the selection session;
* fewer than ``min_sessions`` common sessions;
* a degenerate regression: a leg constant over the window, no p-value (collinear legs), or a
  constant spread;
* a spread that does not mean-revert: the slope of its change on its lagged level is >= 0
  (an infinite half-life);
* a pair the caller excludes (a pair just broken).

A p-value cut (``max_pvalue``) and a half-life band (``half_life_min`` / ``half_life_max``)
are optional and off by default. On the shared real pools (monthly dates 2005-2023, adjusted
closes) the top five's ten-year half-lives reach 94 (staples), 459 (tech) and 18,139 (energy)
sessions, medians 45, 60 and 169, so the band [1, 60] once given as an example
left the energy pool without any candidate on 167 of 226 dates.

Prices: ``price_field`` (``adj_close`` by default) is the store column screened, and, through
:class:`agent.pairs.market.view.MarketView`, the settlement price. The adjusted close carries splits
and dividends, so a ten-year spread of a high-yield leg against a low-yield one does not drift
by the dividends alone; ``close`` (split-adjusted only) is the alternative. The adjustment is
causal for every statistic the screen shows: a vendor back-adjusts all earlier prices of a
ticker by one factor per later dividend, so the dividends after the selection date multiply
each leg's whole window by a constant; in logs that is a constant shift, absorbed by the
regression's intercept (``alpha``), and the hedge ratio, residual spread, p-value, half-life,
z-scores and correlation are unchanged (a test rescales one leg to prove it).

Calendar alignment is per pair: the window is the last ``lookback`` sessions of the pool's
union calendar, and each pair uses the sessions in it where both legs have a price (after an
explicit forward fill of at most ``ffill_limit`` sessions, 0 by default).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from agent.data.errors import DataConfigError
from agent.data.schema import Company, PriceHistory, to_date
from kernels import engle_granger, engle_granger_pairs, half_life, rolling_corr, spread_zscore

__all__ = [
    "ScreenConfig",
    "PairStats",
    "PairCandidate",
    "ScreenResult",
    "screen_pairs",
    "screen_with",
    "EGPairs",
    "screen_store",
    "read_prices",
    "pair_key",
]

log = logging.getLogger(__name__)

#: The leading words of each exclusion reason (a reason may add detail after a colon).
NO_PRICE_TODAY = "a leg has no price on the selection session"
TOO_FEW = "too few common sessions"
DEGENERATE = "degenerate regression"
NOT_REVERTING = "spread does not mean-revert"
EXCLUDED = "excluded by the caller (a broken pair)"


@dataclass(frozen=True)
class ScreenConfig:
    """Screen settings (sessions are trading sessions of the pool calendar).

    lookback: sessions ending at the selection date (2,520 ~ 10 years; fewer if history is shorter).
    min_sessions: least common sessions a pair needs to be tested (the minimum history).
    z_window: sessions of the trading-window z.
    top_k: candidates kept (the paper's five).
    max_pvalue: optional cut: candidates must have an Engle-Granger p-value <= this (None: no
        cut, as the paper, which ranks by p-value).
    half_life_min, half_life_max: optional half-life band in sessions; a pair outside it is not
        a candidate (None: no bound, as the paper, whose selection prompt weighs the half-life).
    maxlag: ADF lag cap (None: ceil(12 (n/100)^(1/4)), as statsmodels);
    autolag: "aic", "bic" or None (fixed lag).
    ffill_limit: forward-fill gaps of at most this many sessions before testing (0: never fill).
    price_field: store column screened (and settled on, see the module docstring):
        ``adj_close`` (split- and dividend-adjusted, the default) or ``close`` (split-adjusted).
    """

    lookback: int = 2520
    min_sessions: int = 252
    z_window: int = 20
    top_k: int = 5
    max_pvalue: float | None = None
    half_life_min: float | None = None
    half_life_max: float | None = None
    maxlag: int | None = None
    autolag: str | None = "aic"
    ffill_limit: int = 0
    price_field: str = "adj_close"

    def __post_init__(self) -> None:
        if self.min_sessions < 30:
            raise DataConfigError(f"min_sessions={self.min_sessions} must be >= 30 sessions")
        if self.lookback < self.min_sessions:
            raise DataConfigError(f"lookback={self.lookback} must be >= min_sessions={self.min_sessions}")
        if not 2 <= self.z_window <= self.min_sessions:
            raise DataConfigError(
                f"z_window={self.z_window} must be in [2, min_sessions={self.min_sessions}]"
            )
        lo, hi = self.half_life_min, self.half_life_max
        if (lo is not None and not lo > 0) or (hi is not None and not hi > 0):
            raise DataConfigError(
                f"half-life band ({lo}, {hi}): each bound must be > 0 sessions, or None (no bound)"
            )
        if lo is not None and hi is not None and not lo < hi:
            raise DataConfigError(f"half-life band ({lo}, {hi}) must satisfy half_life_min < half_life_max")
        if self.top_k < 1:
            raise DataConfigError(f"top_k={self.top_k} must be >= 1")
        if self.max_pvalue is not None and not 0.0 < self.max_pvalue <= 1.0:
            raise DataConfigError(f"max_pvalue={self.max_pvalue} must be in (0, 1], or None (no cut)")
        if self.autolag not in ("aic", "bic", None):
            raise DataConfigError(f"autolag={self.autolag!r}; allowed: 'aic', 'bic', None")
        if self.ffill_limit < 0:
            raise DataConfigError(f"ffill_limit={self.ffill_limit} must be >= 0 sessions")
        if self.price_field not in ("close", "adj_close"):
            raise DataConfigError(f"price_field={self.price_field!r}; allowed: 'close', 'adj_close'")

    def band_reason(self, half_life: float) -> str:
        """Why the optional half-life band rejects ``half_life`` ("" when inside, or no band)."""
        lo, hi = self.half_life_min, self.half_life_max
        if lo is not None and hi is not None and not lo <= half_life <= hi:
            return f"half-life {half_life:.1f} outside the band [{lo:g}, {hi:g}] sessions"
        if lo is not None and half_life < lo:
            return f"half-life {half_life:.1f} < half_life_min {lo:g} sessions"
        if hi is not None and half_life > hi:
            return f"half-life {half_life:.1f} > half_life_max {hi:g} sessions"
        return ""


@dataclass(frozen=True)
class PairStats:
    """Screen statistics of one pair (y = log A, x = log B; A < B alphabetically).

    n_obs: sessions used; pvalue: Engle-Granger MacKinnon p-value; adf_stat, lag: its ADF
    statistic and lag; hedge_ratio, alpha: OLS log A = alpha + hedge_ratio log B; half_life in
    sessions (inf when the spread does not mean-revert); z_long, z_trade: z of the last spread
    over the window / the last z_window sessions; correlation of daily log returns;
    eligible: tradeable as a spread and inside the optional cuts, so ranked among the
    candidates; reason: why not (empty when eligible; it starts with one of the module's
    reason constants, or names the optional cut).
    """

    ticker_a: str
    ticker_b: str
    n_obs: int
    pvalue: float
    adf_stat: float
    lag: int
    hedge_ratio: float
    alpha: float
    half_life: float
    z_long: float
    z_trade: float
    correlation: float
    eligible: bool
    reason: str


@dataclass(frozen=True)
class PairCandidate:
    """One of the top candidates, carrying exactly what the pair-selection prompt shows.

    No dates: the agent renders it with step labels. Half-life in sessions; z in standard
    deviations of the spread; hedge_ratio = units of B per unit of A (log-price OLS slope).
    """

    rank: int
    ticker_a: str
    ticker_b: str
    name_a: str
    name_b: str
    sector_a: str
    sector_b: str
    pvalue: float
    hedge_ratio: float
    half_life: float
    z_long: float
    z_trade: float
    correlation: float
    n_obs: int


@dataclass(frozen=True)
class ScreenResult:
    """All pairs (sorted by rank key) and the candidates of one selection date."""

    date: dt.date
    session: dt.date
    pool: tuple[str, ...]
    config: ScreenConfig
    pairs: tuple[PairStats, ...]
    candidates: tuple[PairCandidate, ...]


def pair_key(a: str, b: str) -> tuple[str, str]:
    """The screen's orientation of a pair: alphabetical (A, B)."""
    return (a, b) if a < b else (b, a)


def _nan_stats(a: str, b: str, n: int, reason: str) -> PairStats:
    nan = float("nan")
    return PairStats(a, b, n, nan, nan, -1, nan, nan, nan, nan, nan, nan, False, reason)


def _pair_stats(
    a: str,
    b: str,
    y: np.ndarray,
    x: np.ndarray,
    eg: tuple[float, float, int, float, float],
    cfg: ScreenConfig,
) -> PairStats:
    stat, pvalue, lag, beta, alpha = eg
    if not np.isfinite(beta):
        return _nan_stats(a, b, len(y), f"{DEGENERATE}: a leg is constant over the window")
    spread = y - alpha - beta * x
    hl = float(half_life(spread))
    z_long = float(spread_zscore(spread))
    z_trade = float(spread_zscore(spread, cfg.z_window))
    corr = float(rolling_corr(np.diff(y), np.diff(x), len(y) - 1)[-1])
    reason = ""
    if not np.isfinite(pvalue):
        reason = f"{DEGENERATE}: no p-value (collinear legs)"
    elif np.isnan(hl):
        reason = f"{DEGENERATE}: constant spread"
    elif not np.isfinite(hl):
        reason = f"{NOT_REVERTING}: the spread's change on its lagged level has slope >= 0 (half-life inf)"
    elif cfg.band_reason(hl):
        reason = cfg.band_reason(hl)
    elif cfg.max_pvalue is not None and pvalue > cfg.max_pvalue:
        reason = f"p-value {pvalue:.3g} > max_pvalue {cfg.max_pvalue:g}"
    return PairStats(
        a,
        b,
        len(y),
        float(pvalue),
        float(stat),
        int(lag),
        float(beta),
        float(alpha),
        hl,
        z_long,
        z_trade,
        corr,
        reason == "",
        reason,
    )


#: The Engle-Granger statistics of every pair of the complete columns over one window:
#: (complete column indices, first session index, last session index) -> (stat, pvalue, lag,
#: beta, alpha) arrays in the order of ``np.triu_indices(len(complete), 1)``.
EGPairs = Callable[[Sequence[int], int, int], tuple[np.ndarray, ...]]


def screen_pairs(
    history: PriceHistory,
    date: str | dt.date,
    *,
    config: ScreenConfig | None = None,
    companies: Mapping[str, Company] | None = None,
    exclude: Collection[tuple[str, str]] = (),
) -> ScreenResult:
    """Screen every pair of ``history``'s tickers at ``date`` using sessions up to ``date`` only.

    ``history`` holds closes (any extra sessions after ``date`` are cut off first, so the result
    cannot depend on them). ``exclude`` lists pairs (either order) that may not be candidates,
    e.g. a pair just broken. ``companies`` supplies names and sectors for the candidates.
    Screening many dates in order: :class:`agent.pairs.screen.rolling.RollingScreen` (the same
    results, each date's Engle-Granger statistics updated from the previous date's).
    """
    return screen_with(history, date, config or ScreenConfig(), None, companies=companies, exclude=exclude)


def screen_with(
    history: PriceHistory,
    date: str | dt.date,
    cfg: ScreenConfig,
    eg_pairs: EGPairs | None,
    *,
    companies: Mapping[str, Company] | None = None,
    exclude: Collection[tuple[str, str]] = (),
) -> ScreenResult:
    """:func:`screen_pairs` with the Engle-Granger statistics of the pairs whose legs have a
    price on every session of the window taken from ``eg_pairs`` (None: tested here, on this
    window alone). Session indices are positions in ``history.dates``."""
    day = to_date(date)
    past = history.until(day)
    if past.n_sessions == 0:
        raise DataConfigError(
            f"no sessions on or before date {day} (history starts "
            f"{history.dates[0] if history.n_sessions else 'nowhere'})"
        )
    if len(past.tickers) < 2:
        raise DataConfigError(f"pool must hold at least 2 tickers, got {list(past.tickers)}")
    if cfg.ffill_limit:
        past = past.ffill(cfg.ffill_limit)
    order = sorted(past.tickers)
    past = past.select(order)
    window = past.values[-cfg.lookback :]
    if np.any(window[np.isfinite(window)] <= 0):
        raise DataConfigError("prices must be > 0 to take logs")
    with np.errstate(invalid="ignore", divide="ignore"):
        logp = np.log(window)
    finite = np.isfinite(logp)
    n_win = logp.shape[0]
    complete = [k for k in range(len(order)) if finite[:, k].all()] if n_win >= cfg.min_sessions else []
    stats: dict[tuple[int, int], PairStats] = {}
    eg_kw = {"maxlag": cfg.maxlag, "autolag": cfg.autolag}
    if len(complete) >= 2:
        if eg_pairs is None:
            res = engle_granger_pairs(logp[:, complete], **eg_kw)
            columns = (res.stat, res.pvalue, res.lag, res.beta, res.alpha)
        else:
            columns = eg_pairs(complete, past.n_sessions - n_win, past.n_sessions - 1)
        local_i, local_j = np.triu_indices(len(complete), k=1)
        for n in range(len(local_i)):
            i, j = complete[int(local_i[n])], complete[int(local_j[n])]
            eg = (columns[0][n], columns[1][n], int(columns[2][n]), columns[3][n], columns[4][n])
            stats[(i, j)] = _pair_stats(order[i], order[j], logp[:, i], logp[:, j], eg, cfg)
    for i in range(len(order)):
        for j in range(i + 1, len(order)):
            if (i, j) in stats:
                continue
            a, b = order[i], order[j]
            both = finite[:, i] & finite[:, j]
            n = int(both.sum())
            if not (finite[-1, i] and finite[-1, j]):
                stats[(i, j)] = _nan_stats(a, b, n, NO_PRICE_TODAY)
            elif n < cfg.min_sessions:
                stats[(i, j)] = _nan_stats(
                    a, b, n, f"{TOO_FEW}: {n} common sessions < min_sessions {cfg.min_sessions}"
                )
            else:
                y, x = logp[both, i], logp[both, j]
                r = engle_granger(y, x, **eg_kw)
                stats[(i, j)] = _pair_stats(a, b, y, x, (r.stat, r.pvalue, r.lag, r.beta, r.alpha), cfg)
    banned = {pair_key(*p) for p in exclude}
    rows = []
    for s in stats.values():
        if s.eligible and (s.ticker_a, s.ticker_b) in banned:
            s = replace(s, eligible=False, reason=EXCLUDED)
        rows.append(s)
    rows.sort(key=lambda s: (not s.eligible, np.nan_to_num(s.pvalue, nan=np.inf), s.ticker_a, s.ticker_b))
    comp = companies or {}
    cands = []
    for rank, s in enumerate([r for r in rows if r.eligible][: cfg.top_k], start=1):
        ca, cb = comp.get(s.ticker_a), comp.get(s.ticker_b)
        cands.append(
            PairCandidate(
                rank,
                s.ticker_a,
                s.ticker_b,
                ca.name if ca else s.ticker_a,
                cb.name if cb else s.ticker_b,
                ca.sector if ca else "",
                cb.sector if cb else "",
                s.pvalue,
                s.hedge_ratio,
                s.half_life,
                s.z_long,
                s.z_trade,
                s.correlation,
                s.n_obs,
            )
        )
    session = past.dates[-1].item()
    log.debug(
        "screen %s (session %s): %d pairs, %d eligible",
        day,
        session,
        len(rows),
        sum(r.eligible for r in rows),
    )
    return ScreenResult(day, session, tuple(history.tickers), cfg, tuple(rows), tuple(cands))


def screen_store(
    store: object,
    date: str | dt.date,
    *,
    pool: Collection[str] | None = None,
    config: ScreenConfig | None = None,
    exclude: Collection[tuple[str, str]] = (),
) -> ScreenResult:
    """Screen a :class:`agent.data.MarketStore` (or the store file at a path) at ``date``; reads
    prices up to ``date`` only.

    ``pool``: tickers to screen (if None: every ticker with a price row on or before ``date``).
    A date before the pool's first price or after its last is a DataConfigError giving their
    range (:func:`agent.data.coverage.check_date`).
    """
    from pathlib import Path

    from agent.data.coverage import check_date
    from agent.data.store import MarketStore

    if isinstance(store, (str, Path)):
        with MarketStore(store, create=False) as db:
            return screen_store(db, date, pool=pool, config=config, exclude=exclude)
    if not isinstance(store, MarketStore):
        raise DataConfigError(f"store must be a MarketStore, got {type(store).__name__}")
    day = to_date(date)
    check_date(store, day, name="date", tickers=pool)  # outside the data: its range, not a bare screen
    tickers = (
        tuple(sorted({t.strip().upper() for t in pool})) if pool is not None else store.tickers(until=day)
    )
    history = read_prices(store, tickers, end=day, config=config)
    return screen_pairs(history, day, config=config, companies=store.companies(tickers), exclude=exclude)


def read_prices(
    store: object, tickers: Sequence[str], *, end: dt.date, config: ScreenConfig | None = None
) -> PriceHistory:
    """The ``price_field`` history of ``tickers`` up to ``end`` from a market store.

    The importer requires the field in every row of a file that has its column, so rows without
    it came from a file without it (a long close-only history beside Herculean's adjusted
    prices, say). Any such row up to ``end`` is an error naming the setting: read as gaps, it
    would silently shorten the screen's ten-year window or empty it.
    """
    cfg = config or ScreenConfig()
    field = cfg.price_field
    if field != "close":
        have = store.field_coverage(tickers, field, end=end)  # type: ignore[attr-defined]
        lacking = {t: f"{rows - n} of {rows}" for t, (rows, n) in have.items() if n < rows}
        if lacking:
            shown = ", ".join(f"{t} {k}" for t, k in lacking.items())
            raise DataConfigError(
                f"price_field={field!r}: rows up to {end} without {field} in the store ({shown} rows; "
                f"imported from a file without that column); re-import those prices with {field}, or "
                'screen the close instead ([screen] price_field = "close", `--price-field close`)'
            )
    return store.prices(tickers, end=end, field=field)  # type: ignore[attr-defined]
