"""Close jumps: day-over-day moves of one ticker's close beyond ``max_daily_factor``, inside a
file and across the seam between stored rows and the first imported one. Listed in the import
report by default; in strict mode (``on_jump="error"``) the first one rejects the import.

Why a factor of 3 by default: split-adjusted daily closes of listed stocks stay well inside it
(the largest move in the shared 14-ticker file, 2003-2023, is APA's -54 % on 2020-03-09, a
factor of 2.17), while an unadjusted 4:1 split, a price in cents among dollars, or a typo lands
outside.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from agent.data.errors import BadValueError
from agent.data.validate import ImportConfig, Where, plain

__all__ = ["PriceJump", "find_jumps", "seam_jumps"]


@dataclass(frozen=True)
class PriceJump:
    """A close that moved beyond ``max_daily_factor`` from the previous close of its ticker.

    ``factor`` is the size of the move as a ratio >= 1 (a fall to a third is 3.0, like a rise
    to three times); ``row`` is the later row, in ``row_kind`` units of ``path``.
    """

    ticker: str
    prev_date: dt.date
    date: dt.date
    prev_close: float
    close: float
    factor: float
    path: str
    row: int
    row_kind: str = "line"

    def describe(self) -> str:
        direction = "up" if self.close > self.prev_close else "down"
        return (
            f"{self.ticker} {self.prev_date} -> {self.date}: close {plain(self.prev_close)} -> "
            f"{plain(self.close)} ({direction} x{self.factor:.3g}; {self.path}, {self.row_kind} {self.row})"
        )


def find_jumps(
    dates: np.ndarray,
    tickers: np.ndarray,
    close: np.ndarray,
    where: Where,
    config: ImportConfig,
    column: str = "close",
) -> list[PriceJump]:
    """Day-over-day close moves beyond ``config.max_daily_factor`` within each ticker (file rows
    in date order, as :func:`check_sorted_per_ticker` ensures), in file order. In strict mode
    (``on_jump="error"``) the first one is raised as a :class:`BadValueError`."""
    jumps: list[PriceJump] = []
    order = pd.Series(np.arange(len(tickers))).groupby(tickers, sort=False)
    for tick, idx in order.groups.items():
        ii = np.asarray(idx)
        c = close[ii]
        with np.errstate(invalid="ignore", divide="ignore"):
            r = c[1:] / c[:-1]
            size = np.maximum(r, 1.0 / r)
        for k in np.flatnonzero(size > config.max_daily_factor):
            a, b = int(ii[k]), int(ii[k + 1])
            jumps.append(
                PriceJump(
                    str(tick),
                    dates[a].item(),
                    dates[b].item(),
                    float(close[a]),
                    float(close[b]),
                    float(size[k]),
                    where.path,
                    where.at(b),
                    where.row_kind,
                )
            )
    jumps.sort(key=lambda j: j.row)
    if jumps and config.on_jump == "error":
        j = jumps[0]
        raise BadValueError(
            f"ticker {j.ticker!r}: close moves from {plain(j.prev_close)} on {j.prev_date} to "
            f"{plain(j.close)} on {j.date}, a factor of {j.factor:.4g} (beyond max_daily_factor="
            f"{plain(config.max_daily_factor)}; on_jump='error'); check the price unit and split "
            "adjustment, or raise max_daily_factor",
            path=j.path,
            row=j.row,
            column=column,
            row_kind=j.row_kind,
        )
    return jumps


def seam_jumps(
    first_rows: Iterable[tuple[str, dt.date, float, int]],
    previous_close: Callable[[str, dt.date], tuple[dt.date, float] | None],
    path: str,
    row_kind: str,
    config: ImportConfig,
) -> list[PriceJump]:
    """The jump check across the seam with stored data: each ticker's first imported row
    ``(ticker, date, close, row)`` against ``previous_close(ticker, date)``, the last stored
    ``(date, close)`` before it (or None). Strict mode raises at the first jump."""
    jumps = []
    for tick, day, close, row in first_rows:
        prev = previous_close(tick, day)
        if prev is None or not prev[1] > 0:
            continue
        size = max(close / prev[1], prev[1] / close)
        if size <= config.max_daily_factor:
            continue
        jump = PriceJump(tick, prev[0], day, float(prev[1]), float(close), float(size), path, row, row_kind)
        if config.on_jump == "error":
            raise BadValueError(
                f"ticker {tick!r}: close moves from {plain(jump.prev_close)} on {jump.prev_date} "
                f"(in the store) to {plain(jump.close)} on {day}, a factor of {jump.factor:.4g} "
                f"(beyond max_daily_factor={plain(config.max_daily_factor)}; on_jump='error')",
                path=path,
                row=row,
                column="close",
                row_kind=row_kind,
            )
        jumps.append(jump)
    return jumps
