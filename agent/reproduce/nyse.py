"""A small NYSE trading calendar (regular holidays by rule, plus the unscheduled closures), used
to check that the shipped configs' windows hold the paper's session counts, including the
2025-2026 windows that lie after the bundled price data.

Rules (NYSE Rule 7.2 holidays as observed since 2003):

- New Year's Day (1 Jan): Sunday -> Monday 2 Jan; Saturday -> no holiday (the exchange does not
  close on the Friday before, 31 Dec, which is in the old year).
- Martin Luther King Jr. Day (3rd Monday of January), Presidents' Day (3rd Monday of February),
  Good Friday (two days before Easter Sunday, Gregorian computus), Memorial Day (last Monday of
  May), Labor Day (1st Monday of September), Thanksgiving (4th Thursday of November).
- Juneteenth (19 June) from 2022, Independence Day (4 July), Christmas (25 Dec): Saturday ->
  Friday before, Sunday -> Monday after.
- Unscheduled full-day closures (national days of mourning, storms, 9/11) are listed in
  :data:`SPECIAL_CLOSURES`; the paper's main training window (27 sessions 2025-01-02..02-11)
  needs the 2025-01-09 closure for President Carter.

Early closes (half days) are sessions and need no rule.
"""

from __future__ import annotations

import datetime as dt

__all__ = ["SPECIAL_CLOSURES", "easter", "nyse_holidays", "is_session", "sessions", "count_sessions"]

#: Full-day closures not given by a holiday rule (2001 onwards).
SPECIAL_CLOSURES: frozenset[dt.date] = frozenset(
    dt.date.fromisoformat(d)
    for d in (
        "2001-09-11",
        "2001-09-12",
        "2001-09-13",
        "2001-09-14",  # 9/11
        "2004-06-11",  # President Reagan, day of mourning
        "2007-01-02",  # President Ford, day of mourning
        "2012-10-29",
        "2012-10-30",  # Hurricane Sandy
        "2018-12-05",  # President G. H. W. Bush, day of mourning
        "2025-01-09",  # President Carter, day of mourning
    )
)


def easter(year: int) -> dt.date:
    """Easter Sunday of ``year`` (Gregorian calendar; the anonymous Meeus/Jones/Butcher rule)."""
    a = year % 19
    b, c = divmod(year, 100)
    d, e = divmod(b, 4)
    f = (b + 8) // 25
    g = (b - f + 1) // 3
    h = (19 * a + b - d - g + 15) % 30
    i, k = divmod(c, 4)
    l = (32 + 2 * e + 2 * i - h - k) % 7  # noqa: E741 - the name the algorithm is known by
    m = (a + 11 * h + 22 * l) // 451
    month, day = divmod(h + l - 7 * m + 114, 31)
    return dt.date(year, month, day + 1)


def _nth_weekday(year: int, month: int, weekday: int, n: int) -> dt.date:
    first = dt.date(year, month, 1)
    return first + dt.timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))


def _last_weekday(year: int, month: int, weekday: int) -> dt.date:
    nxt = dt.date(year + month // 12, month % 12 + 1, 1)
    last = nxt - dt.timedelta(days=1)
    return last - dt.timedelta(days=(last.weekday() - weekday) % 7)


def _observed(day: dt.date) -> dt.date:
    if day.weekday() == 5:
        return day - dt.timedelta(days=1)
    if day.weekday() == 6:
        return day + dt.timedelta(days=1)
    return day


def nyse_holidays(year: int) -> set[dt.date]:
    """The rule-based full-day NYSE holidays of ``year`` (weekdays only; no special closures)."""
    if not 1900 <= year <= 2200:
        raise ValueError(f"year={year}; allowed: 1900..2200")
    out = {
        _nth_weekday(year, 1, 0, 3),  # MLK
        _nth_weekday(year, 2, 0, 3),  # Presidents
        easter(year) - dt.timedelta(days=2),  # Good Friday
        _last_weekday(year, 5, 0),  # Memorial
        _observed(dt.date(year, 7, 4)),
        _nth_weekday(year, 9, 0, 1),  # Labor
        _nth_weekday(year, 11, 3, 4),  # Thanksgiving
        _observed(dt.date(year, 12, 25)),
    }
    new_year = dt.date(year, 1, 1)
    if new_year.weekday() == 6:
        out.add(new_year + dt.timedelta(days=1))
    elif new_year.weekday() < 5:
        out.add(new_year)
    if year >= 2022:
        out.add(_observed(dt.date(year, 6, 19)))
    return out


def is_session(day: dt.date) -> bool:
    """Whether the NYSE holds a (full or early-close) session on ``day``."""
    return day.weekday() < 5 and day not in SPECIAL_CLOSURES and day not in nyse_holidays(day.year)


def sessions(start: dt.date, end: dt.date) -> list[dt.date]:
    """NYSE sessions in [start, end] (inclusive), oldest first."""
    if start > end:
        raise ValueError(f"start={start} is after end={end}")
    out: list[dt.date] = []
    day = start
    while day <= end:
        if is_session(day):
            out.append(day)
        day += dt.timedelta(days=1)
    return out


def count_sessions(start: dt.date, end: dt.date) -> int:
    """How many NYSE sessions lie in [start, end] (inclusive)."""
    return len(sessions(start, end))
