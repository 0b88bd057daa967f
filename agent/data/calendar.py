"""Trading-calendar helpers: a weekday calendar with a few fixed holidays (for the synthetic
market) and session arithmetic on datetime64[D] arrays."""

from __future__ import annotations

import datetime as dt

import numpy as np

from agent.data.errors import DataConfigError
from agent.data.schema import to_date

__all__ = ["holidays", "business_sessions", "session_index"]


def _observed(day: dt.date) -> dt.date:
    if day.weekday() == 5:
        return day - dt.timedelta(days=1)
    if day.weekday() == 6:
        return day + dt.timedelta(days=1)
    return day


def holidays(year: int) -> set[dt.date]:
    """Four exchange-style holidays of ``year``: New Year, 4 July, Thanksgiving (4th Thursday of
    November) and Christmas, weekend dates moved to the nearest weekday (Saturday -> Friday,
    Sunday -> Monday)."""
    nov1 = dt.date(year, 11, 1)
    thanksgiving = nov1 + dt.timedelta(days=(3 - nov1.weekday()) % 7 + 21)
    return {
        _observed(dt.date(year, 1, 1)),
        _observed(dt.date(year, 7, 4)),
        thanksgiving,
        _observed(dt.date(year, 12, 25)),
    }


def business_sessions(start: str | dt.date, n: int) -> np.ndarray:
    """The first ``n`` sessions (weekdays that are not :func:`holidays`) on or after ``start``."""
    if n < 1:
        raise DataConfigError(f"n={n} sessions must be >= 1")
    day = to_date(start)
    out: list[dt.date] = []
    cache: dict[int, set[dt.date]] = {}
    while len(out) < n:
        if day.weekday() < 5:
            hol = cache.setdefault(day.year, holidays(day.year) | holidays(day.year + 1))
            if day not in hol:
                out.append(day)
        day += dt.timedelta(days=1)
    return np.array(out, dtype="datetime64[D]")


def session_index(dates: np.ndarray, day: str | dt.date) -> int:
    """Index of the last session on or before ``day`` (-1 if ``day`` precedes them all)."""
    return int(np.searchsorted(dates, np.datetime64(to_date(day), "D"), side="right")) - 1
