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

from agent.data.errors import (
    BadValueError,
    CalendarGapError,
    CalendarMismatchError,
    DataConfigError,
    DateParseError,
    DuplicateRowError,
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
    pool: optional tickers to import; price rows of other tickers are skipped, and a pool ticker
        without any price row (in the file or the store) is an error.
    """

    max_gap_days: int = 10
    max_missing_frac: float = 0.02
    on_conflict: str = "error"
    companies_outside_pool: str = "skip"
    pool: tuple[str, ...] | None = None

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


@dataclass(frozen=True)
class Where:
    """Where a column came from: file path, source column name, row numbers and their kind."""

    path: str
    rows: np.ndarray
    row_kind: str = "line"

    def at(self, i: int) -> int:
        return int(self.rows[i])


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
            f"not a number: {raw[i]!r}",
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
            f"infinite value {raw[i]!r}",
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
            f"{kind} value {num[i]!r}",
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
        shown = tuple(str(k)[:10] if isinstance(k, np.datetime64) else k for k in key)
        raise DuplicateRowError(
            f"duplicate {what} {shown} (first at {where.row_kind} {first})",
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
