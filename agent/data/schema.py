"""Typed values returned by the market store (frozen dataclasses; no pandas in the API)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np

from agent.data.errors import DataConfigError, UnknownTickerError

__all__ = [
    "PriceHistory",
    "PriceBar",
    "NewsItem",
    "Company",
    "Filing",
    "TickerInfo",
    "StoreInfo",
    "to_date",
]


def to_date(value: str | dt.date | np.datetime64) -> dt.date:
    """Coerce an ISO string, a ``datetime.date`` or a ``numpy.datetime64`` to a ``datetime.date``."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, np.datetime64):
        return value.astype("datetime64[D]").item()
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value.strip()[:10])
        except ValueError:
            raise DataConfigError(f"date {value!r} is not an ISO date (YYYY-MM-DD)") from None
    raise DataConfigError(f"date {value!r} has type {type(value).__name__}; expected str, date or datetime64")


@dataclass(frozen=True, eq=False)
class PriceHistory:
    """Daily values of several tickers on one explicit session calendar.

    ``dates`` (T,) datetime64[D], strictly increasing; ``values`` (T, N) float64 with NaN where a
    ticker has no row for a session (never filled unless :meth:`ffill` is called explicitly);
    column k belongs to ``tickers[k]``. ``field`` says which price (``close``, ``adj_close``, ...).
    """

    dates: np.ndarray
    tickers: tuple[str, ...]
    values: np.ndarray
    field: str = "close"

    def __post_init__(self) -> None:
        if self.values.shape != (len(self.dates), len(self.tickers)):
            raise DataConfigError(
                f"values shape {self.values.shape} != (len(dates), len(tickers)) "
                f"= ({len(self.dates)}, {len(self.tickers)})"
            )

    @property
    def n_sessions(self) -> int:
        return len(self.dates)

    def column(self, ticker: str) -> np.ndarray:
        """The (T,) series of one ticker (a view)."""
        try:
            k = self.tickers.index(ticker)
        except ValueError:
            raise UnknownTickerError(
                f"ticker {ticker!r} not in history {list(self.tickers)}", column="ticker"
            ) from None
        return self.values[:, k]

    def select(self, tickers: tuple[str, ...] | list[str]) -> PriceHistory:
        """The same calendar restricted to ``tickers`` (in that order)."""
        idx = []
        for t in tickers:
            if t not in self.tickers:
                raise UnknownTickerError(f"ticker {t!r} not in history {list(self.tickers)}", column="ticker")
            idx.append(self.tickers.index(t))
        return PriceHistory(self.dates, tuple(tickers), self.values[:, idx], self.field)

    def until(self, date: str | dt.date) -> PriceHistory:
        """Sessions up to and including ``date`` (causal cut; copies nothing after it)."""
        end = np.datetime64(to_date(date), "D")
        n = int(np.searchsorted(self.dates, end, side="right"))
        return PriceHistory(self.dates[:n].copy(), self.tickers, self.values[:n].copy(), self.field)

    def ffill(self, limit: int) -> PriceHistory:
        """Forward-fill each gap of at most ``limit`` sessions inside a ticker's history.

        Longer gaps stay NaN in full (never partly filled), and leading NaNs (before a ticker's
        first row) are never filled. ``limit=0`` returns an unchanged copy.
        """
        if limit < 0:
            raise DataConfigError(f"ffill limit={limit} must be >= 0 sessions")
        out = self.values.copy()
        if limit == 0:
            return PriceHistory(self.dates, self.tickers, out, self.field)
        for k in range(out.shape[1]):
            col = out[:, k]
            nan = np.isnan(col)
            t = 0
            n = len(col)
            while t < n:
                if not nan[t]:
                    t += 1
                    continue
                start = t
                while t < n and nan[t]:
                    t += 1
                # fill interior runs only (a value before and after), of length <= limit
                if start > 0 and t < n and (t - start) <= limit:
                    col[start:t] = col[start - 1]
        return PriceHistory(self.dates, self.tickers, out, self.field)


@dataclass(frozen=True)
class PriceBar:
    """One daily row. Prices in the file's currency units; volume in shares (None if absent)."""

    date: dt.date
    ticker: str
    open: float | None
    high: float | None
    low: float | None
    close: float
    adj_close: float | None
    volume: float | None


@dataclass(frozen=True)
class NewsItem:
    """One news item (or one daily highlights summary, ``kind='highlights'``) of a ticker and day."""

    date: dt.date
    ticker: str
    headline: str
    summary: str = ""
    source: str = ""
    kind: str = "news"


@dataclass(frozen=True)
class Company:
    """Company context: display name, sector label and business description (may be empty)."""

    ticker: str
    name: str
    sector: str
    description: str


@dataclass(frozen=True)
class Filing:
    """One filing's text sections (Herculean ``filings.parquet``)."""

    date: dt.date
    ticker: str
    document_type: str
    mda: str
    risk: str


@dataclass(frozen=True)
class TickerInfo:
    """Coverage of one ticker: first/last session, rows, and pool sessions missing in its span."""

    ticker: str
    first: dt.date
    last: dt.date
    n_rows: int
    n_missing: int


@dataclass(frozen=True)
class StoreInfo:
    """Summary of a store for `localfin data info`."""

    path: str
    n_price_rows: int
    n_sessions: int
    calendar_start: dt.date | None
    calendar_end: dt.date | None
    tickers: tuple[TickerInfo, ...]
    n_news: int
    n_companies: int
    n_filings: int
