"""Whether the dates a user gives lie inside the data of a market store, checked before any
work starts; each refusal names the option or key and the store's range for the tickers in
question (:class:`~agent.data.errors.DataConfigError`, exit code 2).

- :func:`check_date`: one decision date (``localfin pairs screen --date``): before the first
  price of the pool there is nothing to screen; after its last price a screen would silently
  use the last session instead, so both are refused. A day inside the range that is not a
  session (a weekend) stays allowed: the screen uses the last session on or before it.
- :func:`check_window`: a window (``[windows]`` of an experiment, a baseline year): entirely
  outside the data it is refused; reaching past either end it is kept, and a warning says where
  the data ends (a paper's window may end on a session the data misses, e.g. a Monday after
  the last Friday of a price file), so the runs cover the sessions that are there.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from agent.data.errors import DataConfigError
from agent.data.schema import to_date

__all__ = ["DataRange", "data_range", "check_date", "check_window"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DataRange:
    """The first and last price dates of ``tickers`` (empty: every ticker) in the store at ``path``."""

    path: str
    first: dt.date
    last: dt.date
    tickers: tuple[str, ...] = ()

    def text(self) -> str:
        """``the store S holds prices [of A, B, ...] from F to L``."""
        who = ""
        if self.tickers:
            shown = ", ".join(self.tickers[:6]) + (", ..." if len(self.tickers) > 6 else "")
            who = f" of {shown}"
        return f"the store {self.path} holds prices{who} from {self.first} to {self.last}"


def _date(value: str | dt.date, name: str) -> dt.date:
    try:
        return to_date(value)
    except DataConfigError:
        raise DataConfigError(f"{name} {value!r} is not a date; allowed: YYYY-MM-DD") from None


def data_range(store: object, tickers: Sequence[str] | None = None, *, pool_name: str = "pool") -> DataRange:
    """The :class:`DataRange` of ``tickers`` (None or empty: every ticker) in an open
    :class:`~agent.data.store.MarketStore`; a store without prices, or tickers it does not hold
    (named as the option or key ``pool_name``), is a :class:`DataConfigError`."""
    pool = tuple(sorted({t.strip().upper() for t in tickers})) if tickers else None
    path = str(store.path)  # type: ignore[attr-defined]
    if pool:
        known = store.tickers()  # type: ignore[attr-defined]
        unknown = [t for t in pool if t not in known]
        if unknown:
            shown = ", ".join(known[:20]) + (", ..." if len(known) > 20 else "")
            raise DataConfigError(
                f"{pool_name} has {', '.join(unknown)}, not in the store {path}; allowed: its tickers "
                f"({shown})"
            )
    span = store.span(pool)  # type: ignore[attr-defined]
    if span is None:
        raise DataConfigError(f"the store {path} holds no prices; import some first (localfin data import)")
    return DataRange(path, span[0], span[1], pool or ())


def check_date(
    store: object,
    day: str | dt.date,
    *,
    name: str,
    tickers: Sequence[str] | None = None,
    pool_name: str = "pool",
) -> None:
    """Refuse a decision date ``day`` (the option or key ``name``) before the first or after the
    last price of ``tickers`` (the option or key ``pool_name``; module doc)."""
    d = _date(day, name)
    rng = data_range(store, tickers, pool_name=pool_name)
    if d < rng.first or d > rng.last:
        where = "before" if d < rng.first else "after"
        raise DataConfigError(
            f"{name} {d} is {where} the data: {rng.text()}; allowed: a date from {rng.first} to {rng.last}"
        )


def check_window(
    store: object,
    start: str | dt.date,
    end: str | dt.date,
    *,
    name: str,
    tickers: Sequence[str] | None = None,
    pool_name: str = "pool",
) -> None:
    """Refuse a window [``start``, ``end``] that holds no date of the data of ``tickers`` (the
    option or key ``pool_name``); log a warning when it reaches past the data (module doc).
    ``name``: the window as the user gave it, e.g. ``windows.test_start .. windows.test_end =
    2030-01-02 .. 2030-03-01`` or ``--years 2030``."""
    a, b = _date(start, name), _date(end, name)
    rng = data_range(store, tickers, pool_name=pool_name)
    if b < rng.first or a > rng.last:
        raise DataConfigError(
            f"{name} lies outside the data: {rng.text()}; allowed: dates within {rng.first} .. {rng.last}"
        )
    if a < rng.first or b > rng.last:
        _warn_once(
            f"{name} reaches past the data ({rng.text()}): the sessions used are those from "
            f"{max(a, rng.first)} to {min(b, rng.last)}"
        )


@lru_cache(maxsize=256)
def _warn_once(message: str) -> None:
    """Log ``message`` once per process (a command checks a config before its engine starts,
    and the run checks it again)."""
    log.warning("%s", message)
