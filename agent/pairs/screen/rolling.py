"""The causal screen over many dates of one history, each date's Engle-Granger statistics
updated from the previous date's instead of recomputed over the whole window.

:class:`RollingScreen` gives, date by date, exactly the :class:`~agent.pairs.screen.causal.ScreenResult`
of :func:`~agent.pairs.screen.causal.screen_pairs` (same rules, same exclusions, the same
candidates): only the Engle-Granger test of the pairs whose legs trade on every session of the
window comes from :class:`kernels.SlidingEG`, which keeps each pair's regression sums and moves
them with the window (a month-end to the next moves a ten-year window by about 21 sessions, so
that date costs 21 row updates per pair instead of 2,520). Pairs with a gap in the window are
tested on their common sessions as before, and half-lives, z-scores and correlations are
computed per date as before.

Causality: the sums at a date hold only sessions of that date's window (the oldest sessions
leave as the window moves), and a date that moves backwards starts the sums afresh from its own
window. With ``ffill_limit`` > 0 the history is filled once; on the legs the screen tests at a
date (a price on every session of the window) that equals filling the history cut at the date,
because a gap those legs still show at the date is trailing there and makes the leg incomplete.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping, Sequence

import numpy as np

from agent.data.schema import Company, PriceHistory
from agent.pairs.screen.causal import ScreenConfig, ScreenResult, screen_with

__all__ = ["RollingScreen"]


class RollingScreen:
    """The screen of ``history`` at any of its dates; fast when the dates come in increasing order.

    Args:
        history: closes of the pool (the same object :func:`screen_pairs` would be given).
        config: the screen settings.
        companies: names and sectors for the candidates (optional).
    """

    def __init__(
        self,
        history: PriceHistory,
        config: ScreenConfig | None = None,
        *,
        companies: Mapping[str, Company] | None = None,
    ) -> None:
        from kernels import SlidingEG

        self.config = config or ScreenConfig()
        self.history = history
        self.companies = companies
        filled = history.ffill(self.config.ffill_limit) if self.config.ffill_limit else history
        order = sorted(history.tickers)
        values = filled.select(order).values
        with np.errstate(invalid="ignore", divide="ignore"):
            logp = np.where(values > 0, np.log(np.where(values > 0, values, 1.0)), np.nan)
        self._col = {t: k for k, t in enumerate(order)}
        self._n = len(order)
        self._sliding = (
            SlidingEG(logp, maxlag=self.config.maxlag, autolag=self.config.autolag)
            if self._n >= 2 and values.shape[0] >= 30
            else None
        )
        self._last: tuple[int, int, tuple[np.ndarray, ...]] | None = None

    @property
    def sliding_stats(self) -> object:
        """:attr:`kernels.SlidingEG.stats` of the underlying sums (None for a tiny history)."""
        return None if self._sliding is None else self._sliding.stats

    def screen(self, date: str | dt.date, *, exclude: Collection[tuple[str, str]] = ()) -> ScreenResult:
        """The screen at ``date``; equal to ``screen_pairs(history, date, ...)``."""
        return screen_with(
            self.history, date, self.config, self._eg_pairs, companies=self.companies, exclude=exclude
        )

    def _eg_pairs(self, complete: Sequence[int], start: int, end: int) -> tuple[np.ndarray, ...]:
        if self._sliding is None:  # pragma: no cover - screen_with needs >= 30 sessions first
            raise RuntimeError("history too short for the rolling screen")
        if self._last is None or self._last[:2] != (start, end):
            res = self._sliding.window(start, end)
            self._last = (start, end, (res.stat, res.pvalue, res.lag, res.beta, res.alpha))
        cols = np.asarray(complete, dtype=np.int64)
        li, lj = np.triu_indices(cols.size, k=1)
        i, j = cols[li], cols[lj]
        n = self._n
        k = i * n - i * (i + 1) // 2 + (j - i - 1)
        return tuple(arr[k] for arr in self._last[2])
