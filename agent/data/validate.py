"""Cell- and row-level validation of loaded tables; every error names file, row and column.

The checks run on a whole column at once (vectorised) and report the *first* offending row, so
a 70,000-row file validates in well under a second.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from agent.data.aliases import TickerAlias, check_aliases
from agent.data.errors import (
    BadValueError,
    CalendarGapError,
    CalendarMismatchError,
    DataConfigError,
    DateParseError,
    DuplicateRowError,
    TickerSpellingError,
    UnsortedInputError,
)

__all__ = [
    "ImportConfig",
    "Where",
    "parse_dates",
    "parse_numbers",
    "parse_text",
    "check_unique",
    "check_sorted_per_ticker",
    "check_gaps",
    "check_calendar_coverage",
    "parse_tickers",
    "check_ohlc",
    "plain",
]

_ISO_RE = r"^\d{4}-\d{2}-\d{2}(?:$|[T ])"
_MISSING_TEXT = frozenset({"", "nan", "na", "n/a", "null", "none"})  # cells read as missing


@dataclass(frozen=True)
class ImportConfig:
    """Validation limits of an import.

    max_gap_days: largest allowed distance in calendar days between two consecutive rows of one
        ticker (a long weekend plus a closure is 5; 10 catches a missing fortnight).
    max_missing_frac: largest allowed fraction of pool sessions (the union calendar of the store
        after the import) missing inside one ticker's own first..last span. Missing sessions are
        kept as gaps (NaN when read), never filled by the store.
    on_conflict: ``"error"`` when an imported (date, ticker) price row already exists in the
        store, or ``"replace"`` to overwrite it.
    companies_outside_pool: company rows whose ticker has no prices: ``"skip"`` (reference files
        such as index constituent lists cover far more tickers than a pool) or ``"error"``.
    pool: optional tickers to import (upper-cased like every ticker, named after ``aliases``);
        rows of other tickers in every file (prices, news, companies, filings) are skipped and
        counted per file, and a pool ticker without any price row (in the file or the store) is
        an error.
    ohlc_tolerance: how far open and close may lie outside the row's [low, high], as a fraction
        of the bound (0.001 = 0.1 %: the rounding of a two-decimal quote above $5). Beyond it the
        row is an error.
    max_daily_factor: a close more than this factor above or below the previous close of the
        same ticker in the file is a jump (3.0: a move beyond +200 % / -67 % in one session).
        Split-adjusted daily closes of listed stocks stay well inside it (the largest move in
        the shared 14-ticker file, 2003-2023, is APA's -54 % on 2020-03-09, a factor of 2.17);
        an unadjusted split of 4:1 or more, or a price in the wrong unit, lands outside.
    on_jump: ``"report"`` lists jumps in the import report (the rows are imported), ``"error"``
        (strict mode) rejects the file at the first jump.
    aliases: tickers renamed as files are read, before the ``pool`` filter (see
        :mod:`agent.data.aliases` for the scope and the rule when two rows then share a key).
    """

    max_gap_days: int = 10
    max_missing_frac: float = 0.02
    on_conflict: str = "error"
    companies_outside_pool: str = "skip"
    pool: tuple[str, ...] | None = None
    ohlc_tolerance: float = 0.001
    max_daily_factor: float = 3.0
    on_jump: str = "report"
    aliases: tuple[TickerAlias, ...] = ()

    def __post_init__(self) -> None:
        if self.max_gap_days < 1:
            raise DataConfigError(f"max_gap_days={self.max_gap_days} must be >= 1 calendar day")
        if not 0.0 <= self.max_missing_frac < 1.0:
            raise DataConfigError(f"max_missing_frac={self.max_missing_frac} must be in [0, 1)")
        if self.on_conflict not in ("error", "replace"):
            raise DataConfigError(f"on_conflict={self.on_conflict!r}; allowed: 'error', 'replace'")
        if self.companies_outside_pool not in ("skip", "error"):
            raise DataConfigError(
                f"companies_outside_pool={self.companies_outside_pool!r}; allowed: 'skip', 'error'"
            )
        if not (0.0 <= self.ohlc_tolerance <= 0.1):
            raise DataConfigError(f"ohlc_tolerance={self.ohlc_tolerance} must be in [0, 0.1] (a fraction)")
        if not (self.max_daily_factor > 1.0 and math.isfinite(self.max_daily_factor)):
            raise DataConfigError(f"max_daily_factor={self.max_daily_factor} must be a finite number > 1")
        if self.on_jump not in ("report", "error"):
            raise DataConfigError(f"on_jump={self.on_jump!r}; allowed: 'report', 'error'")
        if self.pool is not None:
            object.__setattr__(self, "pool", tuple(str(t).strip().upper() for t in self.pool))
        object.__setattr__(self, "aliases", check_aliases(self.aliases))


@dataclass(frozen=True)
class Where:
    """Where a column came from: file path, source column name, row numbers and their kind."""

    path: str
    rows: np.ndarray
    row_kind: str = "line"

    def at(self, i: int) -> int:
        return int(self.rows[i])


def plain(v: object) -> str:
    """A cell value for a message: numbers as plain decimals (never ``np.float64(...)``), text
    quoted."""
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return format(float(v), ".10g")
    if isinstance(v, np.datetime64):
        return str(v)[:10]
    return repr(str(v)) if isinstance(v, (str, np.str_)) else repr(v)


def _is_missing(v: object) -> bool:
    if v is None:
        return True
    if isinstance(v, float) and math.isnan(v):
        return True
    if isinstance(v, str):
        return v.strip().lower() in _MISSING_TEXT
    return v is pd.NaT


def parse_dates(values: pd.Series, where: Where, column: str) -> np.ndarray:
    """ISO dates (``YYYY-MM-DD``, optionally followed by a time) or datetime cells -> datetime64[D]."""
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        ser = values
        if getattr(ser.dt, "tz", None) is not None:
            ser = ser.dt.tz_localize(None)
        bad = ser.isna().to_numpy()
        if bad.any():
            i = int(np.argmax(bad))
            raise DateParseError(
                "empty date", path=where.path, row=where.at(i), column=column, row_kind=where.row_kind
            )
        return ser.to_numpy().astype("datetime64[D]")
    text = values.map(lambda v: "" if _is_missing(v) else str(v).strip())
    ok_shape = text.str.match(_ISO_RE).to_numpy()
    parsed = pd.to_datetime(text.str.slice(0, 10).where(ok_shape, None), format="%Y-%m-%d", errors="coerce")
    bad = parsed.isna().to_numpy()
    if bad.any():
        i = int(np.argmax(bad))
        shown = text.iloc[i]
        what = "empty date" if not shown else f"cannot parse date {shown!r} (expected YYYY-MM-DD)"
        raise DateParseError(what, path=where.path, row=where.at(i), column=column, row_kind=where.row_kind)
    return parsed.to_numpy().astype("datetime64[D]")


def parse_numbers(
    values: pd.Series,
    where: Where,
    column: str,
    *,
    required: bool,
    positive: bool,
) -> np.ndarray:
    """Numeric cells -> float64. Non-numeric text and infinities are errors; empty cells are errors
    when ``required`` (a missing price) and NaN otherwise; ``positive`` demands > 0, else >= 0."""
    raw = values.to_numpy(dtype=object)
    num = pd.to_numeric(values.map(lambda v: np.nan if _is_missing(v) else v), errors="coerce").to_numpy(
        dtype=np.float64
    )
    missing = np.fromiter((_is_missing(v) for v in raw), dtype=bool, count=len(raw))
    not_number = np.isnan(num) & ~missing
    if not_number.any():
        i = int(np.argmax(not_number))
        raise BadValueError(
            f"not a number: {plain(raw[i])}",
            path=where.path,
            row=where.at(i),
            column=column,
            row_kind=where.row_kind,
        )
    if required and missing.any():
        i = int(np.argmax(missing))
        raise BadValueError(
            "missing value (empty or NaN)",
            path=where.path,
            row=where.at(i),
            column=column,
            row_kind=where.row_kind,
        )
    inf = np.isinf(num)
    if inf.any():
        i = int(np.argmax(inf))
        raise BadValueError(
            f"infinite value {plain(raw[i])}",
            path=where.path,
            row=where.at(i),
            column=column,
            row_kind=where.row_kind,
        )
    with np.errstate(invalid="ignore"):
        bad = (num <= 0) if positive else (num < 0)
    if bad.any():
        i = int(np.argmax(bad))
        kind = "non-positive" if positive else "negative"
        raise BadValueError(
            f"{kind} value {plain(num[i])}",
            path=where.path,
            row=where.at(i),
            column=column,
            row_kind=where.row_kind,
        )
    return num


def _is_blank(v: object) -> bool:
    # text cells: only empty/None/NaN are missing (a ticker may well be "NA")
    return v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and not v.strip())


def parse_text(values: pd.Series, where: Where, column: str, *, required: bool) -> np.ndarray:
    """Text cells -> stripped ``str`` (``""`` for empty when not ``required``)."""
    out = np.array(
        ["" if _is_blank(v) else str(v).strip() for v in values.to_numpy(dtype=object)], dtype=object
    )
    if required:
        empty = out == ""
        if empty.any():
            i = int(np.argmax(empty))
            raise BadValueError(
                "empty value", path=where.path, row=where.at(i), column=column, row_kind=where.row_kind
            )
    return out


def check_unique(keys: pd.DataFrame, where: Where, column: str, what: str) -> None:
    """No key (row of ``keys``) may occur twice; the error names both rows."""
    dup = keys.duplicated(keep=False).to_numpy()
    if dup.any():
        later = keys.duplicated(keep="first").to_numpy()
        i = int(np.argmax(later))
        key = tuple(keys.iloc[i])
        same = np.flatnonzero((keys == keys.iloc[i]).all(axis=1).to_numpy())
        first = where.at(int(same[0]))
        shown = ", ".join(
            str(k)[:10] if isinstance(k, (np.datetime64, pd.Timestamp, dt.date)) else str(k) for k in key
        )
        raise DuplicateRowError(
            f"duplicate {what} ({shown}) (first at {where.row_kind} {first})",
            path=where.path,
            row=where.at(i),
            column=column,
            row_kind=where.row_kind,
        )


def check_sorted_per_ticker(dates: np.ndarray, tickers: np.ndarray, where: Where) -> None:
    """Within each ticker, dates must strictly increase in file order (run after check_unique)."""
    order = pd.Series(np.arange(len(tickers))).groupby(tickers, sort=False)
    for tick, idx in order.groups.items():
        ii = np.asarray(idx)
        d = dates[ii]
        back = np.flatnonzero(d[1:] <= d[:-1])
        if back.size:
            j = ii[back[0] + 1]
            raise UnsortedInputError(
                f"ticker {tick!r}: date {dates[j]!s} comes after {dates[ii[back[0]]]!s} "
                "(rows of a ticker must be in increasing date order)",
                path=where.path,
                row=where.at(int(j)),
                column="date",
                row_kind=where.row_kind,
            )


def check_gaps(dates: np.ndarray, tickers: np.ndarray, where: Where, max_gap_days: int) -> None:
    """Consecutive rows of one ticker must be at most ``max_gap_days`` calendar days apart."""
    order = pd.Series(np.arange(len(tickers))).groupby(tickers, sort=False)
    for tick, idx in order.groups.items():
        ii = np.asarray(idx)
        d = dates[ii].astype("datetime64[D]").astype(np.int64)
        gaps = np.diff(d)
        far = np.flatnonzero(gaps > max_gap_days)
        if far.size:
            j = ii[far[0] + 1]
            raise CalendarGapError(
                f"ticker {tick!r}: {int(gaps[far[0]])} calendar days between {dates[ii[far[0]]]!s} and "
                f"{dates[j]!s} (allowed at most max_gap_days={max_gap_days})",
                path=where.path,
                row=where.at(int(j)),
                column="date",
                row_kind=where.row_kind,
            )


def check_calendar_coverage(
    pool_dates: dict[str, np.ndarray],
    tickers: list[str],
    max_missing_frac: float,
    path: str,
    row_of: Callable[[str, dt.date], tuple[int, str] | None] | None = None,
) -> dict[str, int]:
    """Each ticker may miss at most ``max_missing_frac`` of the union calendar inside its span.

    ``pool_dates`` maps every ticker of the store to its sorted datetime64[D] sessions; only
    ``tickers`` are checked. Returns the number of missing sessions per checked ticker.
    ``row_of(ticker, date)`` gives (row, row_kind) of that row in the file for error messages.
    """
    union = (
        np.unique(np.concatenate(list(pool_dates.values()))) if pool_dates else np.array([], "datetime64[D]")
    )
    missing_counts: dict[str, int] = {}
    for tick in tickers:
        own = pool_dates[tick]
        lo, hi = np.searchsorted(union, own[0]), np.searchsorted(union, own[-1], side="right")
        span = union[lo:hi]
        missing = np.setdiff1d(span, own, assume_unique=True)
        missing_counts[tick] = int(missing.size)
        if span.size and missing.size / span.size > max_missing_frac:
            first = missing[0]
            nxt = own[np.searchsorted(own, first)]
            found = row_of(tick, nxt.item()) if row_of is not None else None
            row, kind = found if found is not None else (None, "line")
            raise CalendarMismatchError(
                f"ticker {tick!r} lacks {missing.size} of the {span.size} pool sessions in its span "
                f"({missing.size / span.size:.1%} > max_missing_frac={max_missing_frac:.1%}); first missing "
                f"{first!s}; align its calendar or raise max_missing_frac",
                path=path,
                row=row,
                column="date",
                row_kind=kind,
            )
    return missing_counts


def parse_tickers(values: pd.Series, where: Where, column: str) -> np.ndarray:
    """Ticker cells -> stripped, upper-cased ``str``; empty cells are errors.

    Two spellings of one ticker in one file (``aaa`` beside ``AAA``) are an error naming the
    first line of each: which one the file means is not ours to guess.
    """
    raw = parse_text(values, where, column, required=True)
    up = np.array([t.upper() for t in raw], dtype=object)
    if (raw != up).any():
        first = pd.Series(np.arange(len(raw))).groupby(raw, sort=False).first()
        seen: dict[str, int] = {}
        for spelling, i in sorted(first.items(), key=lambda kv: kv[1]):
            j = seen.setdefault(str(spelling).upper(), int(i))
            if j != i:
                raise TickerSpellingError(
                    f"two spellings of ticker {raw[i].upper()}: {raw[j]!r} on {where.row_kind} "
                    f"{where.at(j)} and {raw[i]!r} on {where.row_kind} {where.at(int(i))}; "
                    "use one spelling throughout the file",
                    path=where.path,
                    row=where.at(int(i)),
                    column=column,
                    row_kind=where.row_kind,
                )
    return up


def check_ohlc(
    values: dict[str, np.ndarray], columns: dict[str, str], where: Where, tolerance: float
) -> None:
    """Open and close must lie within the row's [low, high], up to ``tolerance`` (a fraction of
    the bound). Absent columns (all NaN) pass. The error names the first offending row."""
    low, high = values["low"], values["high"]
    worst: tuple[int, str, str] | None = None
    with np.errstate(invalid="ignore"):
        for name in ("open", "close"):
            x = values[name]
            above, below = x > high * (1.0 + tolerance), x < low * (1.0 - tolerance)
            for bad, side in ((above, "above"), (below, "below")):
                if bad.any():
                    i = int(np.argmax(bad))
                    if worst is None or i < worst[0]:
                        worst = (i, name, side)
    if worst is None:
        return
    i, name, side = worst
    bound = "high" if side == "above" else "low"
    raise BadValueError(
        f"{name} {plain(values[name][i])} is {side} the row's {bound} {plain(values[bound][i])} "
        f"(low {plain(low[i])}, high {plain(high[i])}; open and close must lie within [low, high], "
        f"ohlc_tolerance={tolerance:g})",
        path=where.path,
        row=where.at(i),
        column=columns[name],
        row_kind=where.row_kind,
    )
